"""The abstention metrics (`harness.stats.abstention`) over stored episodes: per policy with
intervals, paired comparisons of two policies, and the coverage-precision curve over a
refusal threshold.

Input is the frame of `harness.store.load_episodes`; only episodes whose task declares its
answerability (``answerable`` not <NA>) count. Each episode contributes its outcome class
(``answerable``, ``abstained``, ``correct``); errored and timed-out episodes count as answered
and wrong, as they count as failures in the success rate.

- `abstention_table`: every metric of `METRICS` per (suite, policy), with the cluster
  bootstrap over tasks (`abstention.abstention_metrics`).
- `compare_abstention`: policy A against B on the keys both played (aligned as
  `harness.stats.frame.paired_outcomes` aligns them): per metric the difference A - B with a
  paired cluster bootstrap interval (the same resampled tasks for both; percentile) and a
  permutation p-value that swaps the two policies' episodes of whole tasks (exact over all
  ``2**n_tasks`` swaps up to 16 tasks, else random swaps; Phipson & Smyth's ``(1 + count) /
  (1 + n)``). A metric is a ratio of sums, so it is recomputed from the swapped counts.
- `coverage_precision_curve`: the (coverage, precision) points of policies that differ only in
  a refusal threshold (e.g. ``refuse:0.25``, ``refuse:0.5``) and the area under the curve
  (trapezoids over the points sorted by coverage; points with nothing answered, whose
  precision is undefined, are left out), with a cluster bootstrap interval of the area that
  resamples the tasks all of the curve's policies played, the same draw for every point.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from harness.core import HarnessError
from harness.stats.abstention import (METRICS, AbstentionCounts, _per_episode,
                                      abstention_metrics, metrics_from_counts)
from harness.stats.bootstrap import _blocks, _check_options, _resample_counts
from harness.stats.count_metrics import (CountComparison, compare_counts,
                                          format_count_comparison, task_sums)
from harness.stats.estimators import Interval
from harness.stats.frame import aligned_outcomes

__all__ = ["METRICS", "declared_episodes", "abstention_table", "AbstentionComparison",
           "compare_abstention", "CurvePoint", "CoveragePrecisionCurve",
           "coverage_precision_curve", "curve_area", "format_abstention_comparison"]

TABLE_COLUMNS = ["suite", "policy", "n", "n_tasks", "metric", "estimate", "low", "high"]


def declared_episodes(df: pd.DataFrame) -> pd.DataFrame:
    """The episodes whose task declares its answerability, with boolean ``answerable``,
    ``abstained`` and ``correct`` (an episode that did not finish ``ok`` is answered and not
    correct). Empty when none does (or the frame predates the outcome columns)."""
    if "answerable" not in df.columns or df.empty:
        return df.iloc[0:0]
    rows = df[df["answerable"].notna()].copy()
    ok = rows["status"] == "ok"
    rows["answerable"] = rows["answerable"].astype(bool)
    rows["abstained"] = rows["abstained"].fillna(False).astype(bool) & ok
    rows["correct"] = rows["correct"].fillna(False).astype(bool) & ok & ~rows["abstained"]
    return rows


def _flags(rows: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    return (rows["answerable"].to_numpy(bool), rows["abstained"].to_numpy(bool),
            rows["correct"].to_numpy(bool))


def abstention_table(df: pd.DataFrame, rng: np.random.Generator, *,
                     n_resamples: int = 10_000, confidence: float = 0.95) -> pd.DataFrame:
    """Every metric per (suite, policy): columns ``TABLE_COLUMNS``, one row per metric
    (``estimate``, percentile ``low``/``high`` of the cluster bootstrap over tasks; NaN bounds
    for a group with fewer than two tasks). Empty when no episode declares answerability."""
    rows = declared_episodes(df)
    out = []
    for (suite, policy), group in rows.groupby(["suite", "policy"], sort=True):
        tasks = group["task_id"].astype(str).to_numpy()
        n_tasks = int(np.unique(tasks).size)
        if n_tasks >= 2:
            intervals = abstention_metrics(*_flags(group), tasks, rng, n_resamples=n_resamples,
                                           confidence=confidence)
            values = {m: (i.estimate, i.low, i.high) for m, i in intervals.items()}
        else:
            point = metrics_from_counts(AbstentionCounts(*_per_episode(*_flags(group))
                                                         .sum(axis=0)))
            values = {m: (float(point[m]), np.nan, np.nan) for m in METRICS}
        out += [(suite, policy, len(group), n_tasks, m, *values[m]) for m in METRICS]
    return pd.DataFrame(out, columns=TABLE_COLUMNS)


AbstentionComparison = CountComparison
"""`compare_abstention`'s result."""


def _task_counts(flags: np.ndarray, codes: np.ndarray, n_tasks: int) -> np.ndarray:
    """``(n_tasks, 7)`` per-task sums of the episodes' count contributions (flags
    ``(n_keys, 3)``: answerable, abstained, correct)."""
    return task_sums(_per_episode(flags[:, 0], flags[:, 1], flags[:, 2]), codes, n_tasks)


def _metrics(totals: np.ndarray) -> dict[str, np.ndarray]:
    """Metrics of count totals ``(..., 7)``."""
    return metrics_from_counts(AbstentionCounts(*np.moveaxis(totals, -1, 0)))


def _aligned_counts(df: pd.DataFrame, a: str, b: str, suite: str | None
                    ) -> tuple[np.ndarray, np.ndarray, int]:
    """Per-task counts ``(n_tasks, 7)`` of A and B on their shared keys, and the key count.
    The outcome class travels through `aligned_outcomes` as a code in the score column."""
    rows = declared_episodes(df)
    if rows.empty:
        raise HarnessError("no episode declares answerability: the abstention metrics need "
                           "suites that declare it (osworld-files, medagentbench, ...)")
    coded = rows.assign(score=4.0 * rows["answerable"] + 2.0 * rows["abstained"]
                        + rows["correct"])
    aligned = aligned_outcomes(coded, (a, b), metric="score", suite=suite)
    codes = np.unique(aligned.tasks, return_inverse=True)[1].reshape(-1)
    n_tasks = int(codes.max()) + 1
    counts = []
    for j in range(2):
        value = aligned.values[:, j].astype(int)
        flags = np.column_stack([(value >> 2) & 1, (value >> 1) & 1, value & 1]).astype(bool)
        counts.append(_task_counts(flags, codes, n_tasks))
    return counts[0], counts[1], aligned.n_keys


def compare_abstention(df: pd.DataFrame, a: str, b: str, rng: np.random.Generator, *,
                       suite: str | None = None, n_resamples: int = 10_000,
                       confidence: float = 0.95) -> AbstentionComparison:
    """Paired comparison of policies `a` and `b` on every abstention metric (module doc);
    needs at least two shared tasks."""
    _check_options(n_resamples, confidence, "percentile")
    count_a, count_b, n_keys = _aligned_counts(df, a, b, suite)
    n_tasks = count_a.shape[0]
    if n_tasks < 2:
        raise HarnessError(f"policies {a!r} and {b!r} share {n_tasks} task with declared "
                           "answerability; a comparison clustered by task needs at least 2")
    return compare_counts(count_a, count_b, policies=(a, b), n_keys=n_keys,
                          metrics_of=_metrics, names=METRICS, rng=rng,
                          n_resamples=n_resamples, confidence=confidence)


@dataclass(frozen=True)
class CurvePoint:
    """One policy of a curve: its refusal `threshold`, coverage and precision (NaN when it
    answered nothing), and its episodes."""

    policy: str
    threshold: float
    coverage: float
    precision: float
    n: int


@dataclass(frozen=True)
class CoveragePrecisionCurve:
    """Points sorted by threshold; `area` under precision over coverage with its interval."""

    suite: str | None
    points: tuple[CurvePoint, ...]
    area: Interval
    n_tasks: int


def curve_area(coverage, precision) -> np.ndarray:
    """Area under precision over coverage by trapezoids, over the points sorted by coverage
    (each row of ``coverage``/``precision``, shape ``(n_points,)`` or ``(n_rows, n_points)``, is
    one curve; points with a NaN are left out; fewer than two points: area 0)."""
    coverage = np.atleast_2d(np.asarray(coverage, dtype=float))
    precision = np.atleast_2d(np.asarray(precision, dtype=float))
    finite = np.isfinite(coverage) & np.isfinite(precision)
    # points left out go to the end in place of the last kept point: they add zero width
    x = np.where(finite, coverage, np.inf)
    order = np.argsort(x, axis=1, kind="stable")
    x, y = np.take_along_axis(x, order, 1), np.take_along_axis(precision, order, 1)
    last = np.maximum(finite.sum(axis=1) - 1, 0)[:, None]
    kept = np.arange(x.shape[1])[None, :] <= last
    x = np.where(kept, x, np.take_along_axis(x, last, 1))
    y = np.where(kept, y, np.take_along_axis(y, last, 1))
    x, y = np.where(np.isfinite(x), x, 0.0), np.where(np.isfinite(y), y, 0.0)  # no point
    area = (np.diff(x, axis=1) * (y[:, 1:] + y[:, :-1]) / 2).sum(axis=1)
    return np.where(finite.sum(axis=1) >= 2, area, 0.0)


def _curve_counts(rows: pd.DataFrame, policies: Sequence[str]) -> tuple[np.ndarray, int]:
    """``(n_policies, n_tasks, 7)`` per-task counts on the tasks every policy played."""
    shared = set.intersection(*(set(rows.loc[rows["policy"] == p, "task_id"].astype(str))
                                for p in policies))
    if len(shared) < 2:
        raise HarnessError(f"the curve's policies share {len(shared)} task with declared "
                           "answerability; the area's interval needs at least 2")
    tasks = sorted(shared)
    index = {t: i for i, t in enumerate(tasks)}
    counts = []
    for policy in policies:
        group = rows[(rows["policy"] == policy) & rows["task_id"].astype(str).isin(shared)]
        codes = group["task_id"].astype(str).map(index).to_numpy(int)
        counts.append(_task_counts(np.column_stack(_flags(group)), codes, len(tasks)))
    return np.stack(counts), len(tasks)


def coverage_precision_curve(df: pd.DataFrame, thresholds: Mapping[str, float],
                             rng: np.random.Generator, *, suite: str | None = None,
                             n_resamples: int = 10_000, confidence: float = 0.95
                             ) -> CoveragePrecisionCurve:
    """The curve of the policies of `thresholds` (policy id -> its refusal threshold) on
    `suite` (all suites when None): each point on every episode the policy played, the area
    and its interval on the tasks all of them played (module doc)."""
    _check_options(n_resamples, confidence, "percentile")
    rows = declared_episodes(df if suite is None else df[df["suite"] == suite])
    policies = sorted(thresholds, key=lambda p: (thresholds[p], p))
    missing = [p for p in policies if not (rows["policy"] == p).any()]
    if len(policies) < 2 or missing:
        raise HarnessError(f"a coverage-precision curve needs two or more policies with "
                           f"declared-answerability episodes; none for {missing or policies}")
    points = []
    for policy in policies:
        group = rows[rows["policy"] == policy]
        m = _metrics(_per_episode(*_flags(group)).sum(axis=0))
        points.append(CurvePoint(policy, float(thresholds[policy]), float(m["coverage"]),
                                 float(m["precision"]), len(group)))
    counts, n_tasks = _curve_counts(rows, policies)
    area = float(curve_area([p.coverage for p in points], [p.precision for p in points])[0])
    areas = np.empty(n_resamples)
    start = 0
    for size in _blocks(n_resamples, n_tasks):
        weights = _resample_counts(rng, size, n_tasks)  # (size, n_tasks)
        m = _metrics(np.einsum("rt,ptk->rpk", weights, counts))
        areas[start:start + size] = curve_area(m["coverage"], m["precision"])
        start += size
    alpha = (1 - confidence) / 2
    low, high = np.quantile(areas, [alpha, 1 - alpha])
    return CoveragePrecisionCurve(suite, tuple(points),
                                  Interval(area, float(low), float(high), confidence,
                                           "cluster percentile"), n_tasks)


def format_abstention_comparison(c: AbstentionComparison, metric: str) -> str:
    """Terminal text of one metric of a `compare_abstention` result."""
    return format_count_comparison(c, metric, "that declare answerability")
