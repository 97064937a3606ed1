"""Every report figure at its printed size (3.5 in single column, 7 in double column) for
small (2 policies, 2 suites) and large (50 long-named policies, 6 suites, 24 task types)
inputs: matplotlib's own text extents say that no text leaves the canvas, no two texts
overlap, and no text is under 7 pt. The checker itself is shown to catch the faults the old
layout had (a title cut on both sides, colliding suite names, 5 pt cell values)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from matplotlib.figure import Figure
from statsmodels.stats.proportion import proportion_confint

from harness.report import figures as fig
from harness.report import table_builders as tb
from harness.report.figure_layout import fit_labels, layout_problems, text_width
from harness.report.ranking import rank_policies

WIDTHS = (fig.COLUMN_WIDTH, fig.PAGE_WIDTH)


def _episodes(n_policies: int, suites: dict[str, list[str]], *, long: bool) -> pd.DataFrame:
    """A tidy episode frame: every policy on 2 tasks per (suite, task type) x 2 eval seeds x
    2 samples; policy p succeeds with probability falling in p (seeded)."""
    rng = np.random.default_rng(7)
    names = [f"qwen2.5-7b-instruct-grpo-lr2e-4-seed{p}-step-{100 * p}" if long else
             ("oracle", "random")[p] for p in range(n_policies)]
    rows = []
    for p, policy in enumerate(names):
        for suite, types in suites.items():
            for task_type in types:
                for t in range(2):
                    for eval_seed in (0, 1):
                        for sample in (0, 1):
                            won = bool(rng.random() < 1 - (p + 0.5) / (n_policies + 1))
                            rows.append({"run_id": "r", "policy": policy, "suite": suite,
                                         "task_id": f"{task_type}-{t}", "task_type": task_type,
                                         "split": "test", "eval_seed": eval_seed,
                                         "sample": sample, "train_seed": pd.NA,
                                         "status": "ok", "success": won, "score": float(won)})
    frame = pd.DataFrame(rows)
    frame["train_seed"] = frame["train_seed"].astype("Int64")
    return frame


SMALL = {"frozenlake@1": ["4x4", "8x8"], "sokoban@1": ["6x6-1box"]}
LARGE = {f"{name}@1": [f"{name[:4]}-type-{k}" if k % 2 else f"t{k}" for k in range(4)]
         for name in ("frozenlake-slippery-with-a-long-name", "sokoban", "minesweeper-expert",
                      "alfworld-pick-and-place-two", "webshop", "scienceworld-long-horizon")}


def _ranked(frame: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """`rank_policies`-shaped rows (Wilson intervals; separability alternating, as the
    figures only colour by it) without its tests, which take a minute for 50 policies."""
    rows = frame.groupby([*keys, "policy"])["success"].agg(["sum", "size"]).reset_index()
    low, high = proportion_confint(rows["sum"], rows["size"], method="wilson")
    rows = rows.assign(success=rows["sum"] / rows["size"], low=low, high=high)
    rows["best"] = rows["success"] == rows.groupby(keys)["success"].transform("max")
    rows["separable"] = [None if b else bool(k % 2) for k, b in enumerate(rows["best"])]
    return rows


@pytest.fixture(scope="module", params=["small", pytest.param("large", marks=pytest.mark.slow)])
def inputs(request):
    small = request.param == "small"
    frame = _episodes(2 if small else 50, SMALL if small else LARGE, long=not small)
    if small:  # the real ranking where it is quick
        board = rank_policies(frame, n_resamples=200)
        by_type = rank_policies(frame, by_task_type=True, n_resamples=200)
    else:
        board, by_type = _ranked(frame, ["suite"]), _ranked(frame, ["suite", "task_type"])
    order = tb.policy_order(board)
    return {"frame": frame, "board": board, "by_type": by_type, "order": order,
            "passk": tb.pass_at_k_summary(frame[frame["suite"] == order_suite(board)]),
            "n": 2 if small else 50}


def order_suite(board: pd.DataFrame) -> str:
    """The suite whose forest plot and pass@k curves the test draws."""
    return sorted(board["suite"].unique())[0]


def _figures(inputs, width):
    frame, board, order = inputs["frame"], inputs["board"], inputs["order"]
    suite = order_suite(board)
    passk = inputs["passk"]
    metrics = pd.DataFrame({"run_id": np.repeat([f"train-{o}" for o in order[:8]], 6),
                            "train_seed": np.tile([0, 0, 0, 1, 1, 1], min(8, len(order))),
                            "step": np.tile([0, 1, 2], 2 * min(8, len(order))),
                            "success": np.linspace(0, 1, 6 * min(8, len(order)))})
    return {
        "forest": fig.forest_plot(board[board["suite"] == suite], f"{suite}: success rate",
                                  width=width),
        "task-types": fig.task_type_heatmap(inputs["by_type"], order, width=width),
        "profile": fig.performance_profile(frame, order[:8], width=width),
        "pass-at-k": fig.pass_at_k_curves(passk[passk["suite"] == suite], f"{suite}: pass@k",
                                          width=width),
        "improvement": fig.improvement_matrix(frame, order[:12], width=width)[0],
        "improvement-all": fig.improvement_matrix(frame, order, width=width)[0],
        "learning": fig.learning_curves(metrics, width=width),
    }


@pytest.mark.parametrize("width", WIDTHS)
def test_every_figure_fits_its_width(inputs, width):
    for name, figure in _figures(inputs, width).items():
        assert figure.get_size_inches()[0] == pytest.approx(width), name
        height = figure.get_size_inches()[1]
        assert height > 1.0, (name, height)
        if inputs["n"] == 2:  # compact when there is little to show
            assert height < 4.5, (name, height)
        elif name in ("forest", "task-types") and width == fig.PAGE_WIDTH:
            assert height <= fig.PAGE_HEIGHT, (name, height)  # 50 rows still fit a page
        for dpi in (72, 150):  # the PDF's points, the PNG's pixels
            problems = layout_problems(figure, dpi=dpi)
            assert problems == [], (name, width, dpi, inputs["n"], problems[:5])


def test_cell_values_shown_only_where_they_fit(inputs):
    """Small inputs at double-column width print every cell value; the 50 x 50 matrix at
    single-column width prints none (and stays clean)."""
    for width in WIDTHS:
        figure = fig.improvement_matrix(inputs["frame"], inputs["order"], width=width)[0]
        texts = {t.get_text() for t in figure.axes[0].texts}
        if inputs["n"] == 2:
            assert texts >= {"0.00", "1.00"} or len(texts) == 2  # both off-diagonal cells
        elif width == fig.COLUMN_WIDTH:
            assert texts == set()


def test_long_names_get_a_key():
    names = ["oracle", "qwen2.5-7b-instruct-grpo-lr2e-4-seed3-step-300"]
    fitted = fit_labels(names, 60.0)
    assert fitted.labels[0] == "oracle"
    assert fitted.labels[1].endswith("…[1]") and text_width(fitted.labels[1]) <= 60.0
    assert fitted.key == ("[1] qwen2.5-7b-instruct-grpo-lr2e-4-seed3-step-300",)
    wrapped = fit_labels(["frozenlake-slippery@1"], 60.0, max_lines=2)
    assert wrapped.labels == ("frozenlake-\nslippery@1",) and wrapped.key == ()


def test_the_checker_catches_the_old_faults():
    """The layout the report had before: a wide title over a narrow axes (cut at both
    sides), suite names centred over one-column groups (colliding), 5 pt cell values."""
    figure = Figure(figsize=(2.5, 2.0), layout="constrained")
    axes = figure.add_subplot()
    axes.imshow(np.zeros((2, 2)))
    axes.set_title("Probability of improvement (160 shared tasks) over every policy")
    for x in (0, 1):
        axes.text(x, -0.8, "frozenlake-slippery@1", ha="center", fontsize=7)
    axes.text(0, 0, "0.90", fontsize=5)
    problems = layout_problems(figure)
    assert any("outside the canvas" in p and "Probability" in p for p in problems)
    assert any("overlaps" in p and "frozenlake" in p for p in problems)
    assert any("5.0 pt < 7" in p for p in problems)
