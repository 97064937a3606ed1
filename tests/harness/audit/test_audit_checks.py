"""Hand-computed cases for the audit's pure functions (ceilings, learnability, re-grading)."""

import pandas as pd
import pytest
from statsmodels.stats.proportion import proportion_confint

from harness.audit.ceilings import oracle_ceiling, success_by_type, trivial_ceiling
from harness.audit.determinism import first_difference
from harness.audit.learnability import learnability
from harness.core import HarnessError


def _frame(rows):
    """rows: (policy, task_id, task_type, eval_seed, sample, success)."""
    frame = pd.DataFrame(rows, columns=["policy", "task_id", "task_type", "eval_seed", "sample",
                                        "success"])
    frame["suite"] = "toy@1"
    frame["train_seed"] = pd.array([None] * len(frame), dtype="Int64")
    frame["status"] = "ok"
    return frame


def test_success_by_type_and_ceiling_by_hand():
    frame = _frame([("noop", "a1", "a", 0, 0, True), ("noop", "a2", "a", 0, 0, False),
                    ("noop", "b1", "b", 0, 0, False), ("noop", "b2", "b", 0, 0, False),
                    ("rand", "a1", "a", 0, 0, False), ("rand", "a2", "a", 0, 0, False),
                    ("rand", "b1", "b", 0, 0, True), ("rand", "b2", "b", 0, 0, False)])
    rates = success_by_type(frame, {"noop": ("noop", "trivial"), "rand": ("random", "trivial")})
    assert list(rates["task_type"]) == ["a", "b", "all", "a", "b", "all"]
    assert list(rates["success"]) == [0.5, 0.0, 0.25, 0.0, 0.5, 0.25]
    low, high = proportion_confint(1, 2, method="wilson")
    assert rates.loc[0, "low"] == pytest.approx(low) and rates.loc[0, "high"] == pytest.approx(high)

    ceiling = trivial_ceiling(rates, threshold=0.3).set_index("task_type")
    assert ceiling.loc["a", "probe"] == "noop" and ceiling.loc["b", "probe"] == "random"
    assert ceiling.loc["a", "success"] == 0.5 and ceiling.loc["all", "success"] == 0.25
    assert ceiling["flagged"].to_dict() == {"a": True, "b": True, "all": False}
    assert not ceiling["significant"].any()  # one success in two is no evidence


def test_trivial_ceiling_rejects_a_bad_threshold():
    rates = pd.DataFrame({"kind": ["trivial"], "task_type": ["all"], "success": [0.0]})
    with pytest.raises(HarnessError, match="threshold"):
        trivial_ceiling(rates, threshold=1.5)


def test_oracle_failures_listed_with_verdicts():
    frame = _frame([("oracle", "t1", "x", 0, 0, True), ("oracle", "t1", "x", 1, 0, True),
                    ("oracle", "t2", "x", 0, 0, True), ("oracle", "t2", "x", 1, 0, False),
                    ("oracle", "t3", "y", 0, 0, False), ("oracle", "t3", "y", 1, 0, False)])
    rates, failures = oracle_ceiling(frame, "oracle")
    assert rates.set_index("task_type")["success"].to_dict() == {"x": 0.75, "y": 0.0,
                                                                 "all": 0.5}
    assert failures[["task_id", "successes", "n"]].values.tolist() == [["t2", 1, 2],
                                                                       ["t3", 0, 2]]
    assert list(failures["verdict"]) == ["failed on some eval seeds", "never solved"]


def test_learnability_by_hand():
    rows = []
    for task, task_type, wins in (("t1", "x", 0), ("t2", "x", 4), ("t3", "y", 2)):
        rows += [("base", task, task_type, 0, s, s < wins) for s in range(4)]
    table = learnability(_frame(rows), "base", 4).set_index("task_type")
    assert table.loc["all", "all_fail"] == pytest.approx(1 / 3)
    assert table.loc["all", "all_succeed"] == pytest.approx(1 / 3)
    assert table.loc["all", "zero_gradient"] == pytest.approx(2 / 3)
    assert table.loc["all", "pass_at_k"] == pytest.approx(2 / 3)  # pass@4 of 4: 0, 1, 1
    assert table.loc["all", "success"] == pytest.approx(6 / 12)
    assert table.loc["x", "zero_gradient"] == 1.0 and table.loc["y", "zero_gradient"] == 0.0
    assert table.loc["y", "pass_at_k"] == 1.0


def test_learnability_needs_k_samples():
    rows = [("base", "t1", "x", 0, s, False) for s in range(3)]
    with pytest.raises(HarnessError, match="k=4"):
        learnability(_frame(rows), "base", 4)


def test_first_difference():
    same = [(0.0, False, 0.0), (1.0, True, 1.0)]
    assert first_difference(same, list(same)) is None
    assert "step 1" in first_difference(same, [(0.0, False, 0.0), (0.0, False, 0.0)])
    assert "ended after 1" in first_difference(same, same[:1])
    nan = [(0.0, False, float("nan"))]
    assert first_difference(nan, list(nan)) is None
