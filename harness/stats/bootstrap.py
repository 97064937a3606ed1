"""Vectorised bootstrap intervals for means: plain, stratified, clustered, paired and
hierarchical (training seeds x tasks).

No Python loop runs per resample. A resample is a row of a *count matrix*: how often each
unit (episode, task, training seed) was drawn; a block of rows times the units' sums is one
matrix product giving a block of resampled means. Blocks keep memory bounded
(`_BLOCK_ELEMENTS` counts at a time), so results depend only on the generator's state.

Intervals: ``method="percentile"`` (Efron & Tibshirani 1993, ch. 13) or ``"bca"``
(bias-corrected and accelerated, ch. 14; acceleration from the delete-one jackknife over the
resampled units), computed exactly as `scipy.stats.bootstrap` computes them.
"""

from __future__ import annotations

import numbers
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
from scipy.special import ndtr, ndtri

from harness.core import HarnessError
from harness.stats.arrays import as_finite_array
from harness.stats.estimators import Interval

__all__ = [
    "HierarchicalResult", "bootstrap_mean", "stratified_bootstrap", "cluster_bootstrap",
    "paired_bootstrap", "hierarchical_bootstrap", "hierarchical_bootstrap_batch",
]

_BLOCK_ELEMENTS = 1 << 22
_METHODS = ("percentile", "bca")


def _check_options(n_resamples: int, confidence: float, method: str) -> None:
    if method not in _METHODS:
        raise HarnessError(f"bootstrap method must be one of {_METHODS}, got {method!r}")
    if not 0 < confidence < 1:
        raise HarnessError(f"confidence must lie in (0, 1), got {confidence}")
    if (isinstance(n_resamples, bool) or not isinstance(n_resamples, numbers.Integral)
            or n_resamples < 2):
        raise HarnessError(f"n_resamples must be an integer >= 2, got {n_resamples!r}")


def _blocks(n_resamples: int, n_units: int) -> Iterator[int]:
    rows = max(1, _BLOCK_ELEMENTS // max(n_units, 1))
    for start in range(0, n_resamples, rows):
        yield min(rows, n_resamples - start)


def _counts_from_indices(index: np.ndarray, n_units: int) -> np.ndarray:
    """Count matrix ``(n_rows, n_units)`` from drawn unit indices ``(n_rows, n_draws)``."""
    n_rows = index.shape[0]
    flat = index + (np.arange(n_rows, dtype=index.dtype) * n_units)[:, None]
    counts = np.bincount(flat.ravel(), minlength=n_rows * n_units)
    return counts.reshape(n_rows, n_units).astype(np.float64)


def _resample_counts(rng: np.random.Generator, n_rows: int, n_units: int) -> np.ndarray:
    """``(n_rows, n_units)`` counts of ``n_units`` draws with replacement per row."""
    dtype = np.int32 if n_rows * n_units < 2**31 else np.int64
    return _counts_from_indices(rng.integers(0, n_units, (n_rows, n_units), dtype=dtype),
                                n_units)


def _interval_bounds(theta_hat: np.ndarray, theta_b: np.ndarray, jackknife: np.ndarray,
                     confidence: float, method: str) -> tuple[np.ndarray, np.ndarray]:
    """Percentile or BCa bounds, per column.

    theta_hat: ``(n_stats,)``; theta_b: ``(n_resamples, n_stats)``; jackknife:
    ``(n_units, n_stats)`` delete-one estimates (used by BCa only).
    """
    alpha = (1 - confidence) / 2
    if method == "percentile":
        low_q = np.full(theta_hat.shape, alpha)
        high_q = np.full(theta_hat.shape, 1 - alpha)
    else:
        below = (theta_b < theta_hat).sum(axis=0) + (theta_b <= theta_hat).sum(axis=0)
        z0 = ndtri(below / (2 * theta_b.shape[0]))
        if not np.isfinite(z0).all():
            raise HarnessError("BCa is undefined here (the estimate lies outside every "
                               "resample); use method='percentile'")
        influence = jackknife.mean(axis=0) - jackknife
        numerator = (influence**3).sum(axis=0)
        denominator = 6 * (influence**2).sum(axis=0) ** 1.5
        safe = np.where(denominator > 0, denominator, 1.0)
        accel = np.where(denominator > 0, numerator / safe, 0.0)
        z_low, z_high = z0 + ndtri(alpha), z0 + ndtri(1 - alpha)
        low_q = ndtr(z0 + z_low / (1 - accel * z_low))
        high_q = ndtr(z0 + z_high / (1 - accel * z_high))
    low = np.array([np.quantile(theta_b[:, j], low_q[j]) for j in range(theta_b.shape[1])])
    high = np.array([np.quantile(theta_b[:, j], high_q[j]) for j in range(theta_b.shape[1])])
    if not (np.isfinite(low).all() and np.isfinite(high).all()):
        raise HarnessError("the bootstrap interval came out non-finite; check the input")
    return low, high


def _unit_bootstrap(sums: np.ndarray, sizes: np.ndarray, rng: np.random.Generator,
                    n_resamples: int, confidence: float, method: str, scheme: str
                    ) -> Interval:
    """Ratio-mean bootstrap over units: units ``(n_units,)`` with value sums and sizes."""
    n_units = sums.size
    if n_units < 2:
        raise HarnessError(f"a {scheme} bootstrap needs at least two units, got {n_units}")
    theta_hat = np.array([sums.sum() / sizes.sum()])
    theta_b = np.empty((n_resamples, 1))
    start = 0
    for rows in _blocks(n_resamples, n_units):
        counts = _resample_counts(rng, rows, n_units)
        theta_b[start:start + rows, 0] = (counts @ sums) / (counts @ sizes)
        start += rows
    jackknife = ((sums.sum() - sums) / (sizes.sum() - sizes))[:, None]
    low, high = _interval_bounds(theta_hat, theta_b, jackknife, confidence, method)
    return Interval(float(theta_hat[0]), float(low[0]), float(high[0]), confidence,
                    f"{scheme} {method}")


def bootstrap_mean(values, rng: np.random.Generator, *, n_resamples: int = 10_000,
                   confidence: float = 0.95, method: str = "percentile") -> Interval:
    """Bootstrap interval for ``mean(values)``, episodes resampled independently.

    ``values``: shape ``(n,)``, ``n >= 2``. Matches `scipy.stats.bootstrap` with
    ``statistic=np.mean`` up to Monte-Carlo error.
    """
    _check_options(n_resamples, confidence, method)
    x = as_finite_array(values, name="values", ndim=1)
    return _unit_bootstrap(x, np.ones_like(x), rng, n_resamples, confidence, method, "iid")


def _labels_to_codes(labels, n: int, name: str) -> np.ndarray:
    labels = np.asarray(labels)
    if labels.shape != (n,):
        raise HarnessError(f"{name} must have shape ({n},), got {labels.shape}")
    try:
        return np.unique(labels, return_inverse=True)[1].reshape(n)
    except TypeError as error:
        raise HarnessError(f"{name} labels must be comparable: {error}") from None


def cluster_bootstrap(values, clusters, rng: np.random.Generator, *,
                      n_resamples: int = 10_000, confidence: float = 0.95,
                      method: str = "percentile") -> Interval:
    """Cluster bootstrap of the overall mean: whole clusters (e.g. tasks, keeping all their
    seeds together) are resampled with replacement; each resample's mean is
    ``sum of resampled cluster sums / sum of their sizes`` (Davison & Hinkley 1997, §3.8,
    strategy 1). BCa acceleration from the delete-one-cluster jackknife.

    ``values``: ``(n,)``; ``clusters``: ``(n,)`` labels (at least two distinct).
    """
    _check_options(n_resamples, confidence, method)
    x = as_finite_array(values, name="values", ndim=1)
    codes = _labels_to_codes(clusters, x.size, "clusters")
    sums = np.bincount(codes, weights=x)
    sizes = np.bincount(codes).astype(np.float64)
    return _unit_bootstrap(sums, sizes, rng, n_resamples, confidence, method, "cluster")


def stratified_bootstrap(values, strata, rng: np.random.Generator, *,
                         n_resamples: int = 10_000, confidence: float = 0.95,
                         method: str = "percentile") -> Interval:
    """Stratified bootstrap of the overall mean (rliable's ``StratifiedBootstrap``): within
    each stratum (e.g. task) its observations are resampled with replacement, stratum sizes
    fixed. Inference is about *these* tasks (tasks fixed, seeds random); for tasks as a
    sample of a population use `cluster_bootstrap`. BCa: delete-one-observation jackknife.

    ``values``: ``(n,)``; ``strata``: ``(n,)`` labels.
    """
    _check_options(n_resamples, confidence, method)
    x = as_finite_array(values, name="values", ndim=1)
    if x.size < 2:
        raise HarnessError("a stratified bootstrap needs at least two observations")
    codes = _labels_to_codes(strata, x.size, "strata")
    order = np.argsort(codes, kind="stable")
    x_sorted, codes_sorted = x[order], codes[order]
    sizes = np.bincount(codes_sorted)
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    unit_start, unit_size = starts[codes_sorted], sizes[codes_sorted]
    n = x.size
    theta_hat = np.array([x.mean()])
    theta_b = np.empty((n_resamples, 1))
    start = 0
    for rows in _blocks(n_resamples, n):
        index = unit_start + (rng.random((rows, n)) * unit_size).astype(np.int64)
        theta_b[start:start + rows, 0] = _counts_from_indices(index, n) @ x_sorted / n
        start += rows
    jackknife = ((x.sum() - x) / (n - 1))[:, None]
    low, high = _interval_bounds(theta_hat, theta_b, jackknife, confidence, method)
    return Interval(float(x.mean()), float(low[0]), float(high[0]), confidence,
                    f"stratified {method}")


def paired_bootstrap(a, b, rng: np.random.Generator, *, clusters=None,
                     n_resamples: int = 10_000, confidence: float = 0.95,
                     method: str = "percentile") -> Interval:
    """Paired bootstrap of ``mean(a - b)`` for two policies on the same keys.

    ``a``, ``b``: ``(n_keys,)`` aligned outcomes (key i = the same task and eval seed for
    both; see `frame.paired_outcomes`). ``clusters``: optional ``(n_keys,)`` labels (e.g.
    task ids); if given, whole clusters of key differences are resampled
    (`cluster_bootstrap`), otherwise keys independently (`bootstrap_mean`).
    """
    x = as_finite_array(a, name="a", ndim=1)
    y = as_finite_array(b, name="b", ndim=1)
    if x.shape != y.shape:
        raise HarnessError(f"paired outcomes must be aligned, got shapes {x.shape} and "
                           f"{y.shape}")
    options = dict(n_resamples=n_resamples, confidence=confidence, method=method)
    result = (bootstrap_mean(x - y, rng, **options) if clusters is None
              else cluster_bootstrap(x - y, clusters, rng, **options))
    return Interval(result.estimate, result.low, result.high, confidence,
                    f"paired {result.method}")


@dataclass(frozen=True, eq=False)
class HierarchicalResult:
    """Per-policy hierarchical bootstrap intervals.

    ``resampled_means``: ``(n_resamples, n_policies)``, every policy's mean under the same
    resample indices (present when asked for), so ``resampled_means[:, i] -
    resampled_means[:, j]`` is the bootstrap distribution of a paired difference.
    ``train_seed_variance``: ``(n_policies,)`` method-of-moments between-seed variance.
    """

    intervals: tuple[Interval, ...]
    train_seed_variance: np.ndarray
    resampled_means: np.ndarray | None = None


def _seed_effects(cells: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Moment-corrected training-seed effects ``(n_policies, n_seeds)`` and the
    between-seed variance estimate ``(n_policies,)`` from cell means ``(P, S, T)``."""
    n_policies, n_seeds, n_tasks = cells.shape
    if n_seeds == 1:
        return np.zeros((n_policies, 1)), np.zeros(n_policies)
    grand = cells.mean(axis=(1, 2))
    effects = cells.mean(axis=2) - grand[:, None]
    residual = cells - cells.mean(axis=2, keepdims=True) - cells.mean(axis=1, keepdims=True)
    residual += grand[:, None, None]
    ms_seeds = n_tasks * (effects**2).sum(axis=1) / (n_seeds - 1)
    ms_residual = (residual**2).sum(axis=(1, 2)) / ((n_seeds - 1) * (n_tasks - 1))
    variance = np.maximum(0.0, (ms_seeds - ms_residual) / n_tasks)
    spread = (effects**2).mean(axis=1)
    scale = np.sqrt(np.divide(variance, spread, out=np.zeros_like(spread),
                              where=spread > 1e-300))
    return effects * scale[:, None], variance


def hierarchical_bootstrap_batch(values, rng: np.random.Generator, *,
                                 n_resamples: int = 10_000, confidence: float = 0.95,
                                 method: str = "percentile", return_resamples: bool = False,
                                 ) -> HierarchicalResult:
    """Two-level bootstrap of each policy's mean over training seeds, tasks and eval seeds,
    with all policies sharing the resample indices (a leaderboard's policies are compared on
    the same resampled tasks and seed draws).

    ``values``: ``(n_policies, n_train_seeds, n_tasks, n_eval_seeds)``, from
    `arrays.outcome_tensor`. The estimate is the plain mean of each policy's slice.

    Scheme. Tasks are *crossed* with training seeds (every seed ran every task), so the
    levels cannot be nested naively: drawing tasks afresh inside each resampled seed would
    shrink the task component of the variance by ``n_train_seeds``, and drawing seeds and
    tasks independently over the seed x task table (Owen 2007's "pigeonhole" bootstrap)
    counts the seed x task residual three times. Instead, for the model
    ``cell[s, t] = mu + a_s + b_t + e_st`` (cell = mean over eval seeds), each resample is
    ``mean of resampled task means + mean of resampled training-seed effects``:

    1. training seeds: draw ``n_train_seeds`` seeds with replacement and average their
       effects ``a_s``, estimated as row mean minus grand mean and rescaled so their spread
       is the ANOVA method-of-moments between-seed variance ``max(0, (MS_seed -
       MS_resid) / n_tasks)`` (raw row means also carry task/eval noise that level 2
       already counts; "shrunken residuals", Carpenter, Goldstein & Rasbash 2003);
    2. tasks: draw ``n_tasks`` tasks with replacement, one draw shared by all seeds, each
       task keeping all its (training seed, eval seed) cells. Eval seeds are not resampled
       again inside a task: their noise is already in the task's mean, and a further level
       would count it twice (Davison & Hinkley 1997, §3.8).

    The bootstrap variance is then about ``var(a)/S + var(b)/T + var(e)/(S T)``, the true
    variance of the mean. With one training seed (or seeds that do not differ beyond noise)
    level 1 vanishes and this is the cluster bootstrap over tasks. With very few training
    seeds (2-5) no bootstrap reaches nominal coverage of the training-seed component; the
    interval is then too narrow, and more seeds are the remedy. BCa acceleration: the
    delete-one-task jackknife.
    """
    _check_options(n_resamples, confidence, method)
    data = as_finite_array(values, name="values", ndim=4)
    n_policies, n_seeds, n_tasks, _ = data.shape
    if n_tasks < 2:
        raise HarnessError(f"the hierarchical bootstrap needs at least two tasks, got {n_tasks}")
    cells = data.mean(axis=3)
    task_means = cells.mean(axis=1)  # (P, T)
    effects, variance = _seed_effects(cells)  # (P, S), (P,)
    theta_hat = task_means.mean(axis=1)
    theta_b = np.empty((n_resamples, n_policies))
    start = 0
    for rows in _blocks(n_resamples, n_tasks + n_seeds):
        task_counts = _resample_counts(rng, rows, n_tasks)
        seed_counts = _resample_counts(rng, rows, n_seeds)
        theta_b[start:start + rows] = ((task_counts @ task_means.T) / n_tasks
                                       + (seed_counts @ effects.T) / n_seeds)
        start += rows
    total = task_means.sum(axis=1)
    jackknife = ((total[None, :] - task_means.T) / (n_tasks - 1))  # (T, P)
    low, high = _interval_bounds(theta_hat, theta_b, jackknife, confidence, method)
    intervals = tuple(Interval(float(e), float(lo), float(hi), confidence,
                               f"hierarchical {method}")
                      for e, lo, hi in zip(theta_hat, low, high))
    return HierarchicalResult(intervals, variance, theta_b if return_resamples else None)


def hierarchical_bootstrap(values, rng: np.random.Generator, *, n_resamples: int = 10_000,
                           confidence: float = 0.95, method: str = "percentile") -> Interval:
    """`hierarchical_bootstrap_batch` for one policy.

    ``values``: ``(n_train_seeds, n_tasks, n_eval_seeds)``.
    """
    data = as_finite_array(values, name="values", ndim=3)
    result = hierarchical_bootstrap_batch(data[None], rng, n_resamples=n_resamples,
                                          confidence=confidence, method=method)
    return result.intervals[0]
