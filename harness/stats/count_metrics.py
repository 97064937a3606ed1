"""Metrics that are functions of counts summed over tasks (ratios of sums and their harmonic
means), with the task-level machinery they share: per-task sums, cluster-bootstrap intervals
(all of a task's episodes resampled together, every metric computed from the resampled
sums), paired comparisons of two policies on the same tasks (the same resampled tasks for
both) and the task-swap permutation p. The abstention metrics (`harness.stats.abstention`,
`harness.stats.abstention_runs`) and the scope metrics (`harness.stats.scope`) are such
metrics; each passes its `MetricsOf` and its metric names.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from harness.stats.bootstrap import _blocks, _resample_counts
from harness.stats.estimators import Interval

__all__ = ["MetricsOf", "task_sums", "cluster_intervals", "paired_differences",
           "swap_pvalues", "CountComparison", "compare_counts", "format_count_comparison"]

MetricsOf = Callable[[np.ndarray], Mapping[str, np.ndarray]]
"""Sums ``(..., k)`` -> every metric, elementwise over the leading axes (NaN where a
denominator is empty)."""


def task_sums(rows: np.ndarray, codes: np.ndarray, n_tasks: int | None = None) -> np.ndarray:
    """Per-episode counts ``(n_episodes, k)`` summed per task (`codes`: 0-based task codes)
    -> ``(n_tasks, k)`` (`n_tasks`: at least ``codes.max() + 1``)."""
    n_tasks = int(codes.max()) + 1 if n_tasks is None else n_tasks
    return np.stack([np.bincount(codes, weights=rows[:, j], minlength=n_tasks)
                     for j in range(rows.shape[1])], axis=1)


def _resampled(per_task: np.ndarray, rng: np.random.Generator, n_resamples: int
               ) -> list[np.ndarray]:
    """Sums over resampled tasks, ``(n_resamples, k)``, for each of the ``(n_tasks, k)``
    arrays of `per_task` (a stack: the same resampled tasks for every array)."""
    n_tasks = per_task.shape[1]
    out = [np.empty((n_resamples, per_task.shape[2])) for _ in range(per_task.shape[0])]
    start = 0
    for size in _blocks(n_resamples, n_tasks):
        weights = _resample_counts(rng, size, n_tasks)
        for array, counts in zip(out, per_task):
            array[start:start + size] = weights @ counts
        start += size
    return out


def _percentile(values: np.ndarray, confidence: float) -> tuple[float, float]:
    values = values[np.isfinite(values)]
    if not values.size:
        return float("nan"), float("nan")
    alpha = (1 - confidence) / 2
    low, high = np.quantile(values, [alpha, 1 - alpha])
    return float(low), float(high)


def cluster_intervals(per_task: np.ndarray, metrics_of: MetricsOf, names: Sequence[str],
                      rng: np.random.Generator, n_resamples: int, confidence: float
                      ) -> dict[str, Interval]:
    """Every metric of the ``(n_tasks, k)`` sums with its cluster percentile interval."""
    point = metrics_of(per_task.sum(axis=0))
    (resampled,) = _resampled(per_task[None], rng, n_resamples)
    boot = metrics_of(resampled)
    return {name: Interval(float(point[name]), *_percentile(boot[name], confidence),
                           confidence, "cluster percentile") for name in names}


def paired_differences(count_a: np.ndarray, count_b: np.ndarray, metrics_of: MetricsOf,
                       names: Sequence[str], rng: np.random.Generator, n_resamples: int,
                       confidence: float
                       ) -> tuple[dict[str, tuple[float, float]], dict[str, Interval]]:
    """Each metric of A and of B, and the difference A - B with its paired cluster percentile
    interval (A and B: ``(n_tasks, k)`` sums over the same tasks, in the same order)."""
    point_a, point_b = metrics_of(count_a.sum(0)), metrics_of(count_b.sum(0))
    boot_a, boot_b = _resampled(np.stack([count_a, count_b]), rng, n_resamples)
    ma, mb = metrics_of(boot_a), metrics_of(boot_b)
    values = {m: (float(point_a[m]), float(point_b[m])) for m in names}
    differences = {m: Interval(values[m][0] - values[m][1],
                               *_percentile(ma[m] - mb[m], confidence), confidence,
                               "paired cluster percentile") for m in names}
    return values, differences


def swap_pvalues(count_a: np.ndarray, count_b: np.ndarray, observed: Mapping[str, float],
                 metrics_of: MetricsOf, names: Sequence[str], rng: np.random.Generator,
                 n_resamples: int, exact_max_units: int = 16
                 ) -> tuple[dict[str, float], str]:
    """Permutation p of ``|metric_a - metric_b|`` under swaps of whole tasks' episodes
    between A and B: exact over all ``2**n_tasks`` swaps up to `exact_max_units` tasks, else
    `n_resamples` random swaps with ``(1 + hits) / (1 + n)``; NaN where the observed
    difference or every swapped one is undefined."""
    n_tasks = count_a.shape[0]
    exact = n_tasks <= exact_max_units
    total = 2**n_tasks if exact else n_resamples
    delta = count_b - count_a  # what swapping a task moves from B to A
    hits, seen = dict.fromkeys(names, 0), dict.fromkeys(names, 0)
    for start in range(0, total, 65_536):
        size = min(65_536, total - start)
        swaps = ((np.arange(start, start + size)[:, None] >> np.arange(n_tasks)) & 1 if exact
                 else rng.integers(0, 2, size=(size, n_tasks)))
        moved = swaps @ delta
        ma, mb = metrics_of(count_a.sum(0) + moved), metrics_of(count_b.sum(0) - moved)
        for m in names:
            d = np.abs(ma[m] - mb[m])
            finite = np.isfinite(d)
            seen[m] += int(finite.sum())
            hits[m] += int((d[finite] >= abs(observed[m]) - 1e-12).sum())
    p = {m: (float("nan") if not np.isfinite(observed[m]) or seen[m] == 0
             else hits[m] / seen[m] if exact else (hits[m] + 1) / (seen[m] + 1))
         for m in names}
    return p, "exact over all task swaps" if exact else f"{n_resamples} random task swaps"


@dataclass(frozen=True)
class CountComparison:
    """Policy A against B on their shared keys: per metric, ``values[m]`` is
    ``(value_a, value_b)``, ``differences[m]`` A - B with its paired cluster bootstrap
    interval and ``p_values[m]`` the task-swap permutation p (NaN where undefined)."""

    policy_a: str
    policy_b: str
    n_keys: int
    n_tasks: int
    values: Mapping[str, tuple[float, float]]
    differences: Mapping[str, Interval]
    p_values: Mapping[str, float]
    method: str


def compare_counts(count_a: np.ndarray, count_b: np.ndarray, *, policies: tuple[str, str],
                   n_keys: int, metrics_of: MetricsOf, names: Sequence[str],
                   rng: np.random.Generator, n_resamples: int, confidence: float
                   ) -> CountComparison:
    """`paired_differences` and `swap_pvalues` of the ``(n_tasks, k)`` sums of A and B."""
    values, differences = paired_differences(count_a, count_b, metrics_of, names, rng,
                                             n_resamples, confidence)
    observed = {m: differences[m].estimate for m in names}
    p_values, how = swap_pvalues(count_a, count_b, observed, metrics_of, names, rng,
                                 n_resamples)
    return CountComparison(*policies, n_keys, count_a.shape[0], values, differences, p_values,
                           f"paired cluster bootstrap; permutation p {how}")


def format_count_comparison(c: CountComparison, metric: str, tasks: str) -> str:
    """Terminal text of one metric of a comparison; `tasks` says which tasks count (e.g.
    "that declare answerability")."""
    a, b = c.values[metric]
    d, p = c.differences[metric], c.p_values[metric]
    return "\n".join([
        f"{c.policy_a} (A) vs {c.policy_b} (B): {c.n_keys} paired keys over {c.n_tasks} tasks "
        f"{tasks}, metric {metric}",
        f"  A {a:.4f}   B {b:.4f}",
        f"  A - B {d.estimate:+.4f}  {100 * d.confidence:g}% CI [{d.low:+.4f}, {d.high:+.4f}] "
        "(paired cluster bootstrap over tasks)",
        f"  permutation p = {p:.4f} ({c.method.split('; ')[-1].removeprefix('permutation p ')})"])
