"""Scope metrics: a hand-computed case, the conventions for empty denominators, intervals,
interval coverage by simulation (93-97%), and bad input."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from harness.core import HarnessError
from harness.stats.scope import METRICS, compare_scope, metrics_from_sums, scope_metrics, \
    scope_sums, scope_table

# five episodes: acted on in scope, acted on, in scope, sub-goals reached, sub-goals
EPISODES = np.array([
    (2, 2, 2, 1, 1),   # exactly the in-scope entries, its one sub-goal reached
    (2, 5, 2, 1, 2),   # every near-identical entry: 3 out of scope too; 1 of 2 apps
    (1, 1, 3, 0, 2),   # one of three in-scope entries, no app done
    (0, 0, 2, 0, 1),   # did nothing
    (3, 4, 3, 2, 2),   # all in scope and one more; both apps
], dtype=float)


def test_hand_computed_case():
    m = metrics_from_sums(scope_sums(*EPISODES.T))
    # acted on 2+5+1+0+4 = 12 entries, 2+2+1+0+3 = 8 of them in scope; 12 in scope in all
    assert m["scope_precision"] == pytest.approx(8 / 12)
    assert m["scope_recall"] == pytest.approx(8 / 12)
    assert m["scope_f1"] == pytest.approx(8 / 12)
    # progress shares 1, 1/2, 0, 0, 1: mean 2.5 / 5
    assert m["app_progress"] == pytest.approx(0.5)
    over_reach = metrics_from_sums(scope_sums(*EPISODES[1:2].T))
    assert over_reach["scope_precision"] == pytest.approx(2 / 5)
    assert over_reach["scope_recall"] == 1.0
    assert over_reach["scope_f1"] == pytest.approx(2 * 0.4 / 1.4)


def test_conventions_for_empty_parts():
    idle = metrics_from_sums(scope_sums(*EPISODES[3:4].T))
    assert np.isnan(idle["scope_precision"]) and np.isnan(idle["scope_f1"])
    assert idle["scope_recall"] == 0.0 and idle["app_progress"] == 0.0
    wrong = metrics_from_sums(scope_sums([0], [3], [2], [0], [1]))  # only out-of-scope entries
    assert wrong["scope_precision"] == 0.0 and wrong["scope_f1"] == 0.0


def test_intervals_and_the_table():
    tasks = np.repeat(np.arange(10), 5)
    rows = np.tile(EPISODES, (10, 1))
    result = scope_metrics(*rows.T, tasks, np.random.default_rng(0), n_resamples=2000)
    assert set(result) == set(METRICS)
    for interval in result.values():
        assert interval.low <= interval.estimate <= interval.high
    assert result["scope_precision"].estimate == pytest.approx(8 / 12)
    frame = pd.DataFrame(rows, columns=["acted_in_scope", "acted", "in_scope", "reached",
                                        "subgoals"]).assign(
        suite="s@1", policy="p", task_id=[f"t{t}" for t in tasks])
    frame.loc[frame.index[:5], "in_scope"] = np.nan  # a task without declared scope
    table = scope_table(frame, np.random.default_rng(0), n_resamples=500)
    assert list(table["metric"]) == list(METRICS)
    assert (table["n"] == 45).all() and (table["n_tasks"] == 9).all()


def _paired_frame() -> pd.DataFrame:
    """Three tasks, two in-scope entries among four each: A acts on exactly the two and
    reaches the one sub-goal, B acts on all four and reaches none."""
    rows = []
    for task in ("t1", "t2", "t3"):
        rows.append(("A", task, 2, 2, 2, 1, 1))
        rows.append(("B", task, 2, 4, 2, 0, 1))
    frame = pd.DataFrame(rows, columns=["policy", "task_id", "acted_in_scope", "acted",
                                        "in_scope", "reached", "subgoals"])
    return frame.assign(suite="s@1", task_type="x", eval_seed=0, sample=0, status="ok",
                        train_seed=pd.array([pd.NA] * len(frame), dtype="Int64"))


def test_paired_comparison_hand_case():
    result = compare_scope(_paired_frame(), "A", "B", np.random.default_rng(0),
                           n_resamples=500)
    assert (result.n_keys, result.n_tasks) == (3, 3)
    assert result.values["scope_precision"] == (1.0, 0.5)
    assert result.differences["scope_precision"].estimate == pytest.approx(0.5)
    assert result.differences["app_progress"].estimate == 1.0
    # every task favours A: of the 2**3 task swaps only none and all reach |0.5| (one or
    # two swapped tasks give |6/8 - 6/10| = 0.15), so p = 2/8
    assert result.p_values["scope_precision"] == pytest.approx(0.25)
    assert result.p_values["app_progress"] == pytest.approx(0.25)
    assert result.differences["scope_recall"].estimate == 0.0
    assert result.p_values["scope_recall"] == 1.0
    with pytest.raises(HarnessError, match="no episode reports its scope"):
        compare_scope(_paired_frame().assign(in_scope=np.nan), "A", "B",
                      np.random.default_rng(0))


def _simulate(rng, n_tasks: int):
    """Tasks with their own number of entries and difficulty; 3 episodes each."""
    entries = np.repeat(rng.integers(3, 9, n_tasks), 3)
    in_scope = np.maximum(1, (entries * np.repeat(rng.uniform(0.2, 0.8, n_tasks), 3))
                          .astype(int))
    skill = np.repeat(rng.beta(4, 2, n_tasks), 3)
    tp = rng.binomial(in_scope, skill)
    acted = tp + rng.binomial(entries - in_scope, 0.3)
    subgoals = np.repeat(rng.integers(1, 4, n_tasks), 3)
    reached = rng.binomial(subgoals, skill)
    return tp, acted, in_scope, reached, subgoals, np.repeat(np.arange(n_tasks), 3)


@pytest.mark.slow
def test_interval_coverage_by_simulation():
    """95% intervals cover each metric's population value (from one very large sample)
    93-97% of the time over 1,000 simulated evaluations of 200 tasks."""
    rng = np.random.default_rng(20261207)
    truth = metrics_from_sums(scope_sums(*_simulate(rng, 300_000)[:5]))
    hits = dict.fromkeys(METRICS, 0)
    reps = 1000
    for _ in range(reps):
        *counts, tasks = _simulate(rng, 200)
        result = scope_metrics(*counts, tasks, rng, n_resamples=1000)
        for name in hits:
            hits[name] += result[name].low <= truth[name] <= result[name].high
    for name, hit in hits.items():
        assert 0.93 <= hit / reps <= 0.97, (name, hit / reps)


def test_bad_input():
    with pytest.raises(HarnessError, match="one value per episode"):
        scope_sums([1, 0], [1], [1, 1], [0, 0], [1, 1])
    with pytest.raises(HarnessError, match="out of range"):
        scope_sums([2], [1], [2], [0], [1])
    with pytest.raises(HarnessError, match="out of range"):
        scope_sums([0], [0], [1], [0], [0])
    with pytest.raises(HarnessError, match="at least two tasks"):
        scope_metrics([1], [1], [1], [1], [1], ["t"], np.random.default_rng(0))
