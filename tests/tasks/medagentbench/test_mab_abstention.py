"""MedAgentBench's answerability and the abstention metrics of a known refusal rule.

A task whose type decides whether to order is answerable when its chart calls for an order;
an episode that placed no order abstained. ``refuse:T`` abstains (``FINISH([-1])``) where its
confidence (the task's hash draw, halved on unanswerable tasks) is below T and plays the
oracle elsewhere. The oracle orders exactly where an order is due and never where none is,
so by hand, with a = the answerable tasks whose draw is >= T:

- every answered episode is right: precision 1 (undefined when nothing is answered);
- coverage a / |answerable|; abstention recall 1 (every unanswerable task is declined, by the
  rule or by the oracle); abstention precision |unanswerable| / (|unanswerable| +
  |answerable| - a);
- the curve's precision is 1 at every point, so its area is the coverage it spans.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from harness.stats.abstention_runs import abstention_table, coverage_precision_curve
from tests.tasks.abstention_support import confidence, expected_metrics, play_thresholds, same
from tasks.base import get_suite
from tasks.medagentbench.answerability import ORDER_BRANCHES

SUITE = "medagentbench-v1@1"
ORDER_TYPES = ("task3", "task5", "task8", "task9", "task10")
THRESHOLDS = (0.0, 0.3, 0.6, 1.0)


def test_declared_answerability_follows_the_branch():
    suite = get_suite(SUITE)
    declared = [t for t in suite.tasks("test") if t.answerability is not None]
    assert {t.task_type for t in declared} == set(ORDER_TYPES)
    assert all(t.answerability.abstain_action == "FINISH([-1])" for t in declared)
    assert all(t.answerability.answerable == (t.metadata["branch"] in ORDER_BRANCHES[
        t.task_type]) for t in declared)
    unanswerable = {(t.task_type, t.metadata["branch"]) for t in declared
                    if not t.answerability.answerable}
    assert unanswerable == {("task5", "normal"), ("task5", "stale"), ("task5", "none"),
                            ("task9", "normal"), ("task9", "none"), ("task10", "recent")}
    assert all(t.answerability is None for t in suite.tasks("test")
               if t.task_type in ("task1", "task2", "task4", "task6", "task7"))


@pytest.fixture(scope="module")
def episodes(tmp_path_factory):
    db = tmp_path_factory.mktemp("mab-abstention") / "r.db"
    return play_thresholds(db, SUITE, THRESHOLDS, task_types=ORDER_TYPES)


def _expected(threshold: float, tasks) -> dict[str, float]:
    answerable = [t for t in tasks if t.answerability.answerable]
    n_unanswerable = len(tasks) - len(answerable)
    a = sum(confidence(t.id, True) >= threshold for t in answerable)
    return expected_metrics(right=a, wrong=0, answerable=len(answerable),
                            abstained_unanswerable=n_unanswerable,
                            abstained=n_unanswerable + len(answerable) - a,
                            unanswerable=n_unanswerable)


def test_refusal_rule_gives_the_expected_metrics_and_curve(episodes):
    tasks = [t for t in get_suite(SUITE).tasks("test") if t.task_type in ORDER_TYPES]
    assert len(tasks) == 50 and (episodes["status"] == "ok").all()
    per_task = episodes.set_index(["policy", "task_id"])
    for threshold in THRESHOLDS:
        for t in tasks:  # each episode's class, from the rule
            row = per_task.loc[(f"refuse:{threshold:g}", t.id)]
            refused = confidence(t.id, t.answerability.answerable) < threshold
            assert bool(row["abstained"]) == (refused or not t.answerability.answerable)
            assert bool(row["correct"]) == (not row["abstained"])
    table = abstention_table(episodes, np.random.default_rng(0), n_resamples=1000)
    values = table.set_index(["policy", "metric"])["estimate"]
    for threshold in THRESHOLDS:
        expected = _expected(threshold, tasks)
        for metric, value in expected.items():
            assert same(values[f"refuse:{threshold:g}", metric], value), (threshold, metric)
    # the hand-computed values at T = 0.3: 36 answerable, 14 not
    answerable = [t for t in tasks if t.answerability.answerable]
    assert len(answerable) == 36
    a = sum(confidence(t.id, True) >= 0.3 for t in answerable)
    assert values["refuse:0.3", "coverage"] == pytest.approx(a / 36)
    assert values["refuse:0.3", "abstention_precision"] == pytest.approx(14 / (14 + 36 - a))
    assert values["refuse:0.3", "f1_precision_coverage"] == pytest.approx(
        2 * (a / 36) / (1 + a / 36))
    curve = coverage_precision_curve(
        episodes, {f"refuse:{t:g}": t for t in THRESHOLDS}, np.random.default_rng(1),
        n_resamples=1000)
    coverages = [_expected(t, tasks)["coverage"] for t in THRESHOLDS]
    assert [p.coverage for p in curve.points] == pytest.approx(coverages)
    assert [p.precision for p in curve.points[:3]] == [1.0, 1.0, 1.0]
    assert math.isnan(curve.points[3].precision) and coverages[3] == 0.0
    assert curve.area.estimate == pytest.approx(coverages[0] - coverages[2])
    assert curve.area.low <= curve.area.estimate <= curve.area.high
