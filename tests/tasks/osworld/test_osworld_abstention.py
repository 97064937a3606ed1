"""osworld-files' answerability and the abstention metrics of a known refusal rule.

Upstream's infeasible tasks are unanswerable; an episode that ends on ``FAIL`` abstained.
``refuse:T:done`` declares ``FAIL`` where its confidence is below T (the task's hash draw c,
halved on infeasible tasks) and otherwise answers: the oracle's solution on a feasible task
(right), ``DONE`` instead of the oracle's ``FAIL`` on an infeasible one (wrong). By hand:
a feasible task is answered right when c >= T, an infeasible one answered wrong when
c >= 2T. On the 11 test tasks (5 feasible, 6 infeasible) the draws give, at T = 0, 0.25,
0.5: right 5, 3, 1; wrong 6, 3, 0; so coverage 1, 0.6, 0.2 and precision 5/11, 1/2, 1, and
the area under the curve 0.4 (5/11 + 1/2) / 2 + 0.4 (1/2 + 1) / 2. Needs the sandbox.
"""

from __future__ import annotations

import numpy as np
import pytest

from harness.stats.abstention_runs import abstention_table, coverage_precision_curve
from tasks.base import get_suite
from tasks.sandbox import sandbox_available
from tests.tasks.abstention_support import confidence, expected_metrics, play_thresholds, same

pytestmark = pytest.mark.skipif(sandbox_available() is not None,
                                reason=f"sandbox unavailable: {sandbox_available()}")

SUITE = "osworld-files@1"
THRESHOLDS = (0.0, 0.25, 0.5)


def test_infeasible_tasks_are_declared_unanswerable():
    tasks = get_suite(SUITE).tasks()
    assert all(t.answerability.answerable == (not t.metadata["infeasible"])
               and t.answerability.abstain_action == "FAIL" for t in tasks)
    assert sum(not t.answerability.answerable for t in tasks) == 18


def test_refusal_rule_gives_the_expected_metrics_and_curve(tmp_path):
    tasks = get_suite(SUITE).tasks("test")
    episodes = play_thresholds(tmp_path / "r.db", SUITE, THRESHOLDS, trivial="done")
    assert len(episodes) == 3 * len(tasks) and (episodes["status"] == "ok").all()
    feasible = [t for t in tasks if t.answerability.answerable]
    infeasible = [t for t in tasks if not t.answerability.answerable]
    assert (len(feasible), len(infeasible)) == (5, 6)
    values = abstention_table(episodes, np.random.default_rng(0), n_resamples=1000) \
        .set_index(["policy", "metric"])["estimate"]
    counts = {}
    for threshold in THRESHOLDS:
        right = sum(confidence(t.id, True) >= threshold for t in feasible)
        wrong = sum(confidence(t.id, False) >= threshold for t in infeasible)
        counts[threshold] = (right, wrong)
        expected = expected_metrics(
            right=right, wrong=wrong, answerable=5, abstained_unanswerable=6 - wrong,
            abstained=(5 - right) + (6 - wrong), unanswerable=6)
        for metric, value in expected.items():
            assert same(values[f"refuse:{threshold:g}:done", metric], value), (threshold, metric)
    assert counts == {0.0: (5, 6), 0.25: (3, 3), 0.5: (1, 0)}
    curve = coverage_precision_curve(
        episodes, {f"refuse:{t:g}:done": t for t in THRESHOLDS}, np.random.default_rng(1),
        n_resamples=1000)
    assert [(p.coverage, p.precision) for p in curve.points] == [
        (1.0, pytest.approx(5 / 11)), (pytest.approx(0.6), 0.5), (pytest.approx(0.2), 1.0)]
    assert curve.area.estimate == pytest.approx(0.4 * (5 / 11 + 0.5) / 2 + 0.4 * 1.5 / 2)
    assert curve.area.low <= curve.area.estimate <= curve.area.high
