"""Abstention metrics: hand-computed cases, the harmonic-mean conventions, interval coverage
by simulation (93-97%), and bad input."""

from __future__ import annotations

import numpy as np
import pytest

from harness.core import HarnessError
from harness.stats.abstention import (METRICS, abstention_counts, abstention_metrics,
                                      metrics_from_counts)

# ten episodes: answerable, abstained, correct
EPISODES = np.array([
    (1, 0, 1), (1, 0, 1), (1, 0, 1), (1, 0, 0),   # answerable, answered: 3 right, 1 wrong
    (1, 1, 0),                                    # answerable, abstained (a missed answer)
    (0, 1, 0), (0, 1, 0),                         # unanswerable, abstained (right to)
    (0, 0, 0), (0, 0, 1),                         # unanswerable, answered (fabricated); the
    (0, 0, 0),                                    # grader may still call one "correct"
], dtype=bool)


def test_hand_computed_case():
    m = metrics_from_counts(abstention_counts(*EPISODES.T))
    # answered 7, of them correct 4 (3 answerable + 1 unanswerable marked correct)
    assert m["precision"] == pytest.approx(4 / 7)
    # answerable 5, correct answers to them 3
    assert m["coverage"] == pytest.approx(3 / 5)
    # abstained 3, on unanswerable 2; unanswerable 5
    assert m["abstention_precision"] == pytest.approx(2 / 3)
    assert m["abstention_recall"] == pytest.approx(2 / 5)
    answer_f1 = 2 * (4 / 7) * (3 / 5) / (4 / 7 + 3 / 5)
    abstain_f1 = 2 * (2 / 3) * (2 / 5) / (2 / 3 + 2 / 5)
    assert m["f1_precision_coverage"] == pytest.approx(answer_f1)
    assert m["f1_answer_abstain"] == pytest.approx(2 * answer_f1 * abstain_f1 /
                                                   (answer_f1 + abstain_f1))


def test_conventions_for_empty_and_zero_parts():
    # never abstains, every task answerable: abstention metrics undefined (NaN)
    always = metrics_from_counts(abstention_counts([1, 1], [0, 0], [1, 0]))
    assert np.isnan(always["abstention_precision"]) and np.isnan(always["abstention_recall"])
    assert np.isnan(always["f1_answer_abstain"]) and always["precision"] == 0.5
    # always wrong: precision 0 and coverage 0 give an F1 of 0, not NaN
    wrong = metrics_from_counts(abstention_counts([1, 1], [0, 0], [0, 0]))
    assert wrong["f1_precision_coverage"] == 0.0


def test_intervals_contain_the_estimate_and_name_no_bare_ra_f1():
    rng = np.random.default_rng(0)
    tasks = np.repeat(np.arange(10), 3)
    flags = np.tile(EPISODES, (3, 1))[np.argsort(tasks, kind="stable")]
    result = abstention_metrics(*flags.T, tasks, rng, n_resamples=2000)
    assert set(result) == set(METRICS) and "ra_f1" not in result
    for interval in result.values():
        assert interval.low <= interval.estimate <= interval.high
    assert result["precision"].estimate == pytest.approx(4 / 7)


def _simulate(rng, n_tasks: int):
    """Tasks with their own difficulty; 3 episodes each; 30% unanswerable; the agent
    abstains more on unanswerable tasks."""
    answerable = np.repeat(rng.random(n_tasks) > 0.3, 3)
    skill = np.repeat(rng.beta(4, 3, n_tasks), 3)
    abstained = rng.random(answerable.size) < np.where(answerable, 0.15, 0.6)
    correct = rng.random(answerable.size) < np.where(answerable, skill, 0.1)
    return answerable, abstained, correct, np.repeat(np.arange(n_tasks), 3)


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_interval_coverage_by_simulation():
    """95% intervals of every metric cover its population value (from counts of one very
    large sample) 93-97% of the time over 2,000 simulated evaluations of 200 tasks."""
    rng = np.random.default_rng(20261206)
    truth = metrics_from_counts(abstention_counts(*_simulate(rng, 400_000)[:3]))
    hits = dict.fromkeys(METRICS, 0)
    reps = 2000
    for _ in range(reps):
        *flags, tasks = _simulate(rng, 200)
        result = abstention_metrics(*flags, tasks, rng, n_resamples=1000)
        for name in hits:
            hits[name] += result[name].low <= truth[name] <= result[name].high
    for name, hit in hits.items():
        assert 0.93 <= hit / reps <= 0.97, (name, hit / reps)


def test_bad_input():
    with pytest.raises(HarnessError, match="one value per episode"):
        abstention_counts([1, 0], [0], [1, 1])
    with pytest.raises(HarnessError, match="booleans"):
        abstention_counts([1, 2], [0, 0], [1, 1])
    with pytest.raises(HarnessError, match="at least two tasks"):
        abstention_metrics([1, 1], [0, 0], [1, 0], ["t", "t"], np.random.default_rng(0))
