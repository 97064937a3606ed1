"""Abstention metrics: what a success rate hides when an agent may decline to answer.

Each episode has three flags: whether its task is **answerable** (feasible), whether the
agent **abstained** (its declared abstain action: OSWorld's ``FAIL``, "not enough
information") and whether its answer was **correct** (meaningful when it answered). With
``answered = not abstained``:

- ``precision``: correct answers / answered episodes (how far its answers can be trusted);
- ``coverage``: correct answers to answerable tasks / answerable episodes (how much of what
  can be done it does);
- ``abstention_precision``: abstentions on unanswerable tasks / abstentions;
- ``abstention_recall``: abstentions on unanswerable tasks / unanswerable episodes;
- two candidate RA-F1 definitions (an F1 is 0 when both its parts are 0), under explicit
  names since the published formula could not be confirmed: ``f1_precision_coverage`` (the
  harmonic mean of precision and coverage) and ``f1_answer_abstain`` (the harmonic mean of
  that answer F1 and the abstention F1, the harmonic mean of abstention precision and
  recall). No metric is called "RA-F1".

Intervals: the cluster bootstrap over tasks (all of a task's episodes resampled together),
every metric computed from the resampled counts (ratios of sums), percentile intervals. A
metric whose denominator is empty is NaN (e.g. abstention recall with no unanswerable task).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from harness.core import HarnessError
from harness.stats.bootstrap import _check_options, _labels_to_codes
from harness.stats.count_metrics import cluster_intervals, task_sums
from harness.stats.estimators import Interval

__all__ = ["METRICS", "AbstentionCounts", "abstention_counts", "abstention_metrics",
           "metrics_from_counts"]

METRICS = ("precision", "coverage", "abstention_precision", "abstention_recall",
           "f1_precision_coverage", "f1_answer_abstain")
_FIELDS = ("correct_answered", "answered", "correct_answerable", "answerable",
           "abstained_unanswerable", "abstained", "unanswerable")


@dataclass(frozen=True)
class AbstentionCounts:
    """The counts every metric is a function of (scalars, or arrays over resamples)."""

    correct_answered: np.ndarray
    answered: np.ndarray
    correct_answerable: np.ndarray
    answerable: np.ndarray
    abstained_unanswerable: np.ndarray
    abstained: np.ndarray
    unanswerable: np.ndarray


def _flags(answerable, abstained, correct) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    arrays = []
    for name, values in (("answerable", answerable), ("abstained", abstained),
                         ("correct", correct)):
        array = np.asarray(values)
        if array.ndim != 1 or not np.isin(array, (0, 1, True, False)).all():
            raise HarnessError(f"{name} must be a 1-D array of booleans (0/1), one per episode")
        arrays.append(array.astype(bool))
    if len({a.size for a in arrays}) != 1 or arrays[0].size == 0:
        raise HarnessError("answerable, abstained and correct need one value per episode, "
                           f"got sizes {[a.size for a in arrays]}")
    return arrays[0], arrays[1], arrays[2]


def _per_episode(answerable, abstained, correct) -> np.ndarray:
    """``(n_episodes, 7)``: each episode's contribution to `_FIELDS`."""
    answerable, abstained, correct = _flags(answerable, abstained, correct)
    answered = ~abstained
    right = answered & correct
    return np.stack([right, answered, right & answerable, answerable,
                     abstained & ~answerable, abstained, ~answerable], axis=1).astype(float)


def abstention_counts(answerable, abstained, correct) -> AbstentionCounts:
    """The counts of a set of episodes (each argument ``(n_episodes,)`` of booleans)."""
    totals = _per_episode(answerable, abstained, correct).sum(axis=0)
    return AbstentionCounts(*(np.asarray(v) for v in totals))


def _ratio(top: np.ndarray, bottom: np.ndarray) -> np.ndarray:
    top, bottom = np.asarray(top, dtype=float), np.asarray(bottom, dtype=float)
    return np.divide(top, bottom, out=np.full(np.broadcast(top, bottom).shape, np.nan),
                     where=bottom > 0)


def _harmonic(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Harmonic mean: 0 when both are 0, NaN when either is NaN."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    total = a + b
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(total > 0, 2 * a * b / np.where(total > 0, total, 1.0),
                        np.where(np.isnan(total), np.nan, 0.0))


def _metrics_of_sums(sums: np.ndarray) -> dict[str, np.ndarray]:
    """Every metric of count sums ``(..., 7)`` in `_FIELDS` order."""
    return metrics_from_counts(AbstentionCounts(*np.moveaxis(sums, -1, 0)))


def metrics_from_counts(c: AbstentionCounts) -> dict[str, np.ndarray]:
    """Every metric of `METRICS` from the counts (elementwise over resamples)."""
    precision = _ratio(c.correct_answered, c.answered)
    coverage = _ratio(c.correct_answerable, c.answerable)
    abstain_p = _ratio(c.abstained_unanswerable, c.abstained)
    abstain_r = _ratio(c.abstained_unanswerable, c.unanswerable)
    answer_f1 = _harmonic(precision, coverage)
    return {"precision": precision, "coverage": coverage, "abstention_precision": abstain_p,
            "abstention_recall": abstain_r, "f1_precision_coverage": answer_f1,
            "f1_answer_abstain": _harmonic(answer_f1, _harmonic(abstain_p, abstain_r))}


def abstention_metrics(answerable, abstained, correct, tasks, rng: np.random.Generator, *,
                       n_resamples: int = 10_000, confidence: float = 0.95
                       ) -> dict[str, Interval]:
    """Every metric with its cluster-bootstrap interval over `tasks` (labels, one per
    episode; at least two tasks)."""
    _check_options(n_resamples, confidence, "percentile")
    rows = _per_episode(answerable, abstained, correct)
    codes = _labels_to_codes(tasks, len(rows), "tasks")
    if int(codes.max()) + 1 < 2:
        raise HarnessError("abstention intervals need at least two tasks")
    return cluster_intervals(task_sums(rows, codes), _metrics_of_sums, METRICS, rng,
                             n_resamples, confidence)
