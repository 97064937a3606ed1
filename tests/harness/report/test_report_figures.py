"""Figures: PDF with embedded TrueType fonts, PNG, the colour-blind-safe palette, and the
probability-of-improvement matrix checked against its definition."""

import numpy as np
import pandas as pd
import pytest
from matplotlib.colors import to_hex
from PIL import Image

from harness.report import figures as fig
from harness.report import table_builders as tb
from harness.report.ranking import rank_policies
from harness.stats.estimators import probability_of_improvement
from harness.store import load_episodes


@pytest.fixture
def ranked(small_db):
    frame = load_episodes(small_db)
    test = frame[frame["split"] == "test"]
    return test, rank_policies(test), rank_policies(test, by_task_type=True)


def test_pdf_embeds_truetype_fonts_and_png_renders(ranked, tmp_path):
    test, board, _ = ranked
    pdf, png = fig.save_figure(fig.forest_plot(board[board["suite"] == "alpha@1"], "alpha"),
                               tmp_path, "forest")
    data = pdf.read_bytes()
    assert data.startswith(b"%PDF") and b"/FontFile2" in data  # TrueType (fonttype 42)
    assert b"/Type3" not in data and b"CreationDate" not in data
    with Image.open(png) as image:
        assert image.format == "PNG" and image.size[0] > 300 and image.size[1] > 100
    again, _ = fig.save_figure(fig.forest_plot(board[board["suite"] == "alpha@1"], "alpha"),
                               tmp_path / "again", "forest")
    assert again.read_bytes() == data  # no timestamps: same data, same file


def test_forest_plot_colours_best_and_not_separable(ranked):
    _, board, _ = ranked
    figure = fig.forest_plot(board[board["suite"] == "beta@1"], "beta")
    colours = {to_hex(line.get_color()) for line in figure.axes[0].get_lines()}
    palette = {c.lower() for c in fig.OKABE_ITO}
    assert colours <= palette
    labels = [t.get_text() for t in figure.legends[0].get_texts()]  # under the axes
    assert labels == ["not separable from best (Holm)", "best"]  # beta: nothing separable


def test_heatmap_profile_and_pass_at_k(ranked, tmp_path):
    test, board, by_type = ranked
    heat = fig.task_type_heatmap(by_type, tb.policy_order(board))
    image = heat.axes[0].get_images()[0].get_array()
    assert image.shape == (5, 3)  # policies x (alpha x, alpha y, beta z)
    assert image[0].tolist() == [100.0, 100.0, 100.0]  # strong first, all solved
    profile = fig.performance_profile(test, tb.policy_order(board)[:3])
    first = profile.axes[0].get_lines()[0]
    assert first.get_ydata()[0] == 1.0  # strong: every task above tau = 0
    curves = fig.pass_at_k_curves(tb.pass_at_k_summary(test), "alpha")
    assert list(curves.axes[0].get_lines()[0].get_xdata()) == [1, 2, 4, 8]
    for name, figure in (("heat", heat), ("profile", profile), ("curves", curves)):
        assert all(p.stat().st_size > 0 for p in fig.save_figure(figure, tmp_path, name))


def test_improvement_matrix_matches_the_definition(ranked):
    test, board, _ = ranked
    policies = ["strong", "close", "weak"]
    _, matrix = fig.improvement_matrix(test, policies)
    assert np.isnan(np.diag(matrix)).all()
    assert matrix[0, 1] + matrix[1, 0] == pytest.approx(1.0)
    strong = np.ones((2, 14))
    weak = np.zeros((2, 14))
    assert matrix[0, 2] == pytest.approx(probability_of_improvement(strong, weak)) == 1.0


def test_learning_curves_plot_each_seed_and_the_mean():
    metrics = pd.DataFrame({"run_id": "train-1", "train_seed": [0, 0, 1, 1],
                            "step": [0, 1, 0, 1], "success": [0.0, 0.5, 0.2, 0.7]})
    figure = fig.learning_curves(metrics)
    lines = figure.axes[0].get_lines()
    assert len(lines) == 3  # two seeds and their mean
    assert list(lines[-1].get_ydata()) == pytest.approx([0.1, 0.6])
