"""Task-vector geometry against hand-computed cases, independent supports against the
analytic Jaccard baseline, and `harness geometry` with its calibration arms."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

import harness.cli
from harness.core import ConfigError
from harness.merge.geometry import expected_jaccard, geometry_arms, task_vector_geometry
from tests.harness.merge.fixture import make_inputs

MLP, ATTN, EMBED = ("model.layers.0.mlp.up_proj.weight", "model.layers.1.self_attn.q_proj.weight",
                    "model.embed_tokens.weight")


def _model(folder: Path, tensors: dict[str, list[float]]) -> Path:
    import torch
    from safetensors.torch import save_file

    folder.mkdir(parents=True)
    save_file({k: torch.tensor(v, dtype=torch.float32) for k, v in tensors.items()},
              str(folder / "model.safetensors"))
    return folder


@pytest.fixture
def hand(tmp_path) -> tuple[Path, list[Path]]:
    zero = [0.0, 0.0, 0.0, 0.0]
    base = _model(tmp_path / "base", {MLP: zero, ATTN: zero, EMBED: zero})
    a = _model(tmp_path / "a", {MLP: [1.0, 0.0, 2.0, 0.0], ATTN: [0.0, 3.0, 0.0, 0.0],
                                EMBED: [0.0, 0.0, 0.0, 5e-6]})
    b = _model(tmp_path / "b", {MLP: [2.0, 1.0, 0.0, 0.0], ATTN: [0.0, 0.0, 4.0, 0.0],
                                EMBED: [0.0, 0.0, 0.0, 0.0]})
    c = _model(tmp_path / "c", {MLP: [1.0, 0.0, 0.0, 0.0], ATTN: zero, EMBED: zero})
    return base, [a, b, c]


def test_cosines_by_hand(hand):
    base, (a, b, _) = hand
    cos = task_vector_geometry(base, [a, b]).cosine.set_index("group")["cosine"]
    # a = (1, 0, 2, 0 | 0, 3, 0, 0 | 0, 0, 0, 5e-6), b = (2, 1, 0, 0 | 0, 0, 4, 0 | 0...)
    # a.b = 2; |a|^2 = 14 + 2.5e-11; |b|^2 = 21
    assert cos["all"] == pytest.approx(2 / math.sqrt(14 * 21))
    assert cos["mlp"] == pytest.approx(2 / math.sqrt(5 * 5))  # (1,0,2,0).(2,1,0,0) = 2
    assert cos["attention"] == 0.0 and cos["layer:0"] == pytest.approx(0.4)
    assert math.isnan(cos["embeddings"])  # b's embedding delta is zero


def test_supports_jaccard_and_overlap_by_hand(hand):
    base, models = hand
    g = task_vector_geometry(base, models, epsilons=(0.0, 1e-5))
    j = g.jaccard.set_index(["a", "b", "epsilon"])
    # supports at epsilon 0 (12 coordinates): a {m0, m2, q1, e3}, b {m0, m1, q2}, c {m0}
    row = j.loc[("a", "b", 0.0)]
    assert row["jaccard"] == pytest.approx(1 / 6)  # {m0} / {m0, m1, m2, q1, q2, e3}
    assert row["density_a"] == pytest.approx(4 / 12) and row["density_b"] == pytest.approx(3 / 12)
    assert row["expected"] == pytest.approx(expected_jaccard(4 / 12, 3 / 12))
    assert j.loc[("a", "b", 1e-5), "jaccard"] == pytest.approx(1 / 5)  # e3 (5e-6) drops
    overlap = g.overlap.set_index(["model", "epsilon", "k"])["share"]
    # a's changes at epsilon 0: m0 changed by 2 others, m2, q1, e3 by none
    assert overlap[("a", 0.0, 0)] == pytest.approx(3 / 4)
    assert overlap[("a", 0.0, 2)] == pytest.approx(1 / 4)
    assert overlap[("c", 0.0, 2)] == 1.0 and overlap[("b", 0.0, 0)] == pytest.approx(2 / 3)


def test_independent_supports_meet_the_analytic_baseline(tmp_path):
    make_inputs(tmp_path)  # supports drawn independently: 30%, 50%, 20% of 9,000 coordinates
    g = task_vector_geometry(tmp_path / "base", [tmp_path / n for n in ("a", "b", "c")],
                             epsilons=(0.0,))
    for row in g.jaccard.itertuples():
        assert abs(row.jaccard - row.expected) < 0.02, row
    assert np.abs(g.cosine.loc[g.cosine["group"] == "all", "cosine"]).max() < 0.05


def test_command_reads_models_against_floor_and_ceiling(hand, tmp_path, capsys):
    base, (a, b, c) = hand
    out = tmp_path / "geometry"
    assert harness.cli.main(["geometry", "--base", str(base), "--models", str(a), str(b),
                             "--floor", str(b), str(c), "--ceiling", str(a), str(a),
                             "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "cosine of task vectors" in printed and "E[J]" in printed
    result = geometry_arms(base, [a, b], floor=[b, c], ceiling=[a, a])
    ceiling = result.cosine[(result.cosine["arm"] == "ceiling") &
                            (result.cosine["group"] == "all")]
    assert ceiling["cosine"].iloc[0] == pytest.approx(1.0)
    assert set(result.jaccard["arm"]) == {"models", "floor", "ceiling"}
    assert (out / "jaccard.csv").read_text().startswith("arm,a,b,epsilon")
    assert harness.cli.main(["geometry", "--base", str(base), "--models", str(a), str(b),
                             "--floor", str(c)]) == 2
    assert "--floor needs two or more checkpoints" in capsys.readouterr().err
    with pytest.raises(ConfigError, match="at least two models"):
        task_vector_geometry(base, [a])
