"""The abstention metrics over episode frames: per-policy table, paired comparison with an
exact task-swap permutation p, and the coverage-precision curve and its area, all against
hand-computed cases."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from harness.core import HarnessError
from harness.stats.abstention_runs import (abstention_table, compare_abstention,
                                           coverage_precision_curve, curve_area,
                                           declared_episodes)


def outcomes(policy: str, rows, *, suite: str = "toy@1", status: str = "ok") -> pd.DataFrame:
    """Episodes of `policy`: `rows` are ``(task_id, answerable, abstained, correct)``, with
    the outcome columns of `harness.store.load_episodes`."""
    frame = pd.DataFrame(rows, columns=["task_id", "answerable", "abstained", "correct"])
    for column in ("answerable", "abstained", "correct"):
        frame[column] = frame[column].astype("boolean")
    return frame.assign(run_id="run-1", policy=policy, suite=suite, task_type="t",
                        split="test", train_seed=pd.array([None] * len(frame), dtype="Int64"),
                        eval_seed=0, sample=0, status=status,
                        success=frame["correct"].fillna(False).astype(bool), score=0.0,
                        answered=~frame["abstained"])


# A: answers the four answerable tasks right, abstains on both unanswerable ones
# B: answers everything; right on t1 and t2 only
A = outcomes("a", [("t1", 1, 0, 1), ("t2", 1, 0, 1), ("t3", 1, 0, 1), ("t4", 1, 0, 1),
                   ("u1", 0, 1, 0), ("u2", 0, 1, 0)])
B = outcomes("b", [("t1", 1, 0, 1), ("t2", 1, 0, 1), ("t3", 1, 0, 0), ("t4", 1, 0, 0),
                   ("u1", 0, 0, 0), ("u2", 0, 0, 0)])


def test_table_gives_every_metric_per_policy_with_its_interval():
    table = abstention_table(pd.concat([A, B]), np.random.default_rng(0), n_resamples=500)
    values = table.set_index(["policy", "metric"])["estimate"]
    assert values["a", "precision"] == 1.0 and values["a", "coverage"] == 1.0
    assert values["a", "abstention_precision"] == 1.0 and values["a", "abstention_recall"] == 1.0
    assert values["b", "precision"] == pytest.approx(2 / 6)
    assert values["b", "coverage"] == pytest.approx(2 / 4)
    assert np.isnan(values["b", "abstention_precision"])  # never abstained
    assert values["b", "abstention_recall"] == 0.0
    assert values["b", "f1_precision_coverage"] == pytest.approx(2 * (1 / 3) * 0.5 / (1 / 3 + 0.5))
    finite = table.dropna(subset=["low"])
    assert ((finite["low"] <= finite["estimate"] + 1e-12)
            & (finite["estimate"] <= finite["high"] + 1e-12)).all()
    assert set(table["n"]) == {6} and set(table["n_tasks"]) == {6}


def test_undeclared_and_unfinished_episodes():
    undeclared = outcomes("c", [("t1", None, None, None)])
    errored = outcomes("d", [("t1", 1, 1, 1)], status="error")
    rows = declared_episodes(pd.concat([undeclared, errored, A]))
    assert "c" not in set(rows["policy"])
    err = rows[rows["policy"] == "d"].iloc[0]
    assert not err["abstained"] and not err["correct"]  # an error is an answer, and wrong
    assert declared_episodes(A.drop(columns=["answerable"])).empty


def test_paired_comparison_hand_computed_with_exact_swap_p():
    """Only t3, t4 (B wrong) and u1, u2 (B answers) differ. Precision: A 4/4, B 2/6.
    Swapping a set S of tasks between A and B: by enumeration over the 2**6 swaps (t1, t2
    swap nothing), |precision difference| >= 2/3 exactly when S takes none or all of
    {t3, t4, u1, u2}: 2 of 16 patterns of those four tasks, p = 1/8."""
    result = compare_abstention(pd.concat([A, B]), "a", "b", np.random.default_rng(1),
                                n_resamples=2000)
    assert (result.n_keys, result.n_tasks) == (6, 6)
    assert result.values["precision"] == (1.0, pytest.approx(1 / 3))
    assert result.differences["precision"].estimate == pytest.approx(2 / 3)
    assert result.differences["coverage"].estimate == pytest.approx(0.5)
    assert result.p_values["precision"] == pytest.approx(1 / 8)
    d = result.differences["coverage"]
    assert d.low <= d.estimate <= d.high
    assert np.isnan(result.p_values["abstention_precision"])  # undefined for B
    same = compare_abstention(pd.concat([A, A.assign(policy="a2")]), "a", "a2",
                              np.random.default_rng(2), n_resamples=200)
    assert same.differences["precision"].estimate == 0.0 and same.p_values["precision"] == 1.0


def test_curve_area_by_trapezoids():
    # points sorted by coverage: (0, nan) left out, (0.5, 1.0), (1.0, 0.5)
    assert curve_area([1.0, 0.5, 0.0], [0.5, 1.0, np.nan])[0] == pytest.approx(0.375)
    assert curve_area([0.2, 0.6, 0.6, 1.0], [1.0, 0.8, 0.6, 0.5])[0] == pytest.approx(
        0.4 * 0.9 + 0.0 + 0.4 * 0.55)
    assert curve_area([0.3], [1.0])[0] == 0.0
    rows = curve_area([[0.0, 1.0], [0.5, np.nan]], [[1.0, 0.0], [1.0, 1.0]])
    assert rows.tolist() == [0.5, 0.0]


def test_coverage_precision_curve_of_three_thresholds():
    """Three policies of one refusal family: answering all (B), answering only what it
    knows (A), and refusing everything (Z: coverage 0, precision undefined)."""
    z = outcomes("z", [(t, a, 1, 0) for t, a in zip(A["task_id"], A["answerable"])])
    curve = coverage_precision_curve(pd.concat([A, B, z]), {"b": 0.0, "a": 0.5, "z": 1.0},
                                     np.random.default_rng(3), n_resamples=500)
    assert [p.policy for p in curve.points] == ["b", "a", "z"]
    assert [(p.coverage, p.precision) for p in curve.points][:2] == [
        (0.5, pytest.approx(1 / 3)), (1.0, 1.0)]
    assert curve.points[2].coverage == 0.0 and np.isnan(curve.points[2].precision)
    assert curve.area.estimate == pytest.approx(0.5 * (1 / 3 + 1.0) / 2)
    assert curve.area.low <= curve.area.estimate <= curve.area.high
    assert curve.n_tasks == 6
    with pytest.raises(HarnessError, match="two or more policies"):
        coverage_precision_curve(A, {"a": 0.5}, np.random.default_rng(0))
