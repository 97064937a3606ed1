"""Timing of the hierarchical bootstrap next to `scipy.stats.bootstrap` (``harness bench
stats``)."""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import scipy
import scipy.stats

from harness.stats.bootstrap import (_resample_counts, _seed_effects,
                                     hierarchical_bootstrap_batch)

__all__ = ["BenchResult", "bench_hierarchical_bootstrap", "synthetic_outcomes"]


@dataclass(frozen=True)
class BenchResult:
    """Wall-clock seconds of both implementations on the same data and statistic.

    ``scipy_seconds``: `scipy.stats.bootstrap` called per policy on that policy's
    ``(n_train_seeds, n_tasks, n_eval_seeds)`` outcomes; ``scipy_reduced_seconds``: scipy's
    best case, one vectorised call on per-task means. ``ratio`` and ``reduced_ratio`` divide
    those by ``harness_seconds``.
    """

    harness_seconds: float
    scipy_seconds: float
    ratio: float
    note: str
    scipy_reduced_seconds: float
    reduced_ratio: float
    max_endpoint_gap: float  # largest |gap| between harness and scipy (per-policy) bounds


def synthetic_outcomes(rng: np.random.Generator, n_policies: int, n_train_seeds: int,
                       n_tasks: int, n_eval_seeds: int) -> np.ndarray:
    """Bernoulli outcomes ``(n_policies, n_train_seeds, n_tasks, n_eval_seeds)`` with task
    difficulty, policy skill and training-seed effects (success probability
    ``clip(difficulty_t + skill_p + seed_ps, 0.02, 0.98)``)."""
    difficulty = rng.beta(2.0, 2.0, size=(1, 1, n_tasks, 1))
    skill = rng.uniform(-0.1, 0.1, size=(n_policies, 1, 1, 1))
    seed = rng.normal(0.0, 0.03, size=(n_policies, n_train_seeds, 1, 1))
    p = np.clip(difficulty + skill + seed, 0.02, 0.98)
    shape = (n_policies, n_train_seeds, n_tasks, n_eval_seeds)
    return (rng.random(shape) < p).astype(np.float64)


def _seed_statistic(effects: np.ndarray, rng: np.random.Generator, reduce):
    """A vectorised scipy statistic: ``reduce`` (the task-level mean of scipy's resampled
    data) plus the mean of resampled training-seed effects ``effects`` ``(n_stats, S)``,
    drawn exactly as `hierarchical_bootstrap_batch` draws them."""
    n_seeds = effects.shape[1]

    def statistic(data: np.ndarray, axis: int = -1) -> np.ndarray:
        task_part = reduce(data, axis)  # (n_stats,) on the data, (n_stats, batch) resampled
        if task_part.ndim == 1:
            return task_part
        seed_counts = _resample_counts(rng, task_part.shape[-1], n_seeds)
        return task_part + (seed_counts @ effects.T).T / n_seeds

    return statistic


def _scipy_per_policy(values: np.ndarray, rng: np.random.Generator, n_resamples: int,
                      confidence: float) -> np.ndarray:
    """The two-level scheme through `scipy.stats.bootstrap`, one call per policy on its
    ``(S, T, E)`` outcomes: scipy resamples tasks (axis moved last); the statistic averages
    the resampled outcomes and adds the training-seed level. Bounds ``(2, n_policies)``."""
    bounds = []
    for policy in values:
        effects, _ = _seed_effects(policy.mean(axis=2)[None])
        data = np.moveaxis(policy, 1, -1)  # (S, E, T)

        def reduce(x, axis):
            return x.mean(axis=axis).mean(axis=(0, 1))[None]

        result = scipy.stats.bootstrap(
            (data,), _seed_statistic(effects, rng, reduce), vectorized=True, axis=-1,
            n_resamples=n_resamples, batch=1000, confidence_level=confidence,
            method="percentile", rng=rng)
        bounds.append([result.confidence_interval.low[0], result.confidence_interval.high[0]])
    return np.array(bounds).T


def _scipy_reduced(values: np.ndarray, rng: np.random.Generator, n_resamples: int,
                   confidence: float) -> None:
    """scipy's best case: one vectorised call on the per-task means ``(P, T)`` (exact for a
    mean), all policies at once; the statistic adds the training-seed level."""
    cells = values.mean(axis=3)
    effects, _ = _seed_effects(cells)
    scipy.stats.bootstrap(
        (cells.mean(axis=1),), _seed_statistic(effects, rng, lambda x, a: x.mean(axis=a)),
        vectorized=True, axis=-1, n_resamples=n_resamples, batch=1000,
        confidence_level=confidence, method="percentile", rng=rng)


def _timed(function, *args):
    start = time.perf_counter()
    result = function(*args)
    return result, time.perf_counter() - start


def _best_of(repeats: int, function):
    runs = [_timed(function) for _ in range(repeats)]
    return runs[-1][0], min(seconds for _, seconds in runs)


def bench_hierarchical_bootstrap(rng: np.random.Generator, *, n_policies: int = 20,
                                 n_tasks: int = 500, n_eval_seeds: int = 5,
                                 n_train_seeds: int = 3, n_resamples: int = 10_000,
                                 confidence: float = 0.95) -> BenchResult:
    """Time `hierarchical_bootstrap_batch` (percentile, all policies sharing resamples)
    against `scipy.stats.bootstrap` running the same two-level scheme on the same synthetic
    ``(n_policies, n_train_seeds, n_tasks, n_eval_seeds)`` outcomes. scipy cannot resample
    two levels itself, so it resamples tasks and its statistic draws the training-seed level
    the way the harness does. Every run does all ``n_resamples`` resamples (nothing is
    extrapolated) and starts from the raw 4-d array. Two scipy protocols are timed: per
    policy on that policy's outcomes (``scipy_seconds``), and scipy's best case, one
    vectorised call on per-task means (``scipy_reduced_seconds``).
    """
    values = synthetic_outcomes(rng, n_policies, n_train_seeds, n_tasks, n_eval_seeds)
    harness_rng, scipy_rng, reduced_rng, warm_rng = rng.spawn(4)
    warm = values[:2, :, : min(n_tasks, 50)]  # untimed: first-call costs out of both timings
    hierarchical_bootstrap_batch(warm, warm_rng, n_resamples=200)
    _scipy_per_policy(warm, warm_rng, 200, confidence)
    _scipy_reduced(warm, warm_rng, 200, confidence)
    ours, harness_seconds = _best_of(3, lambda: hierarchical_bootstrap_batch(
        values, harness_rng, n_resamples=n_resamples, confidence=confidence))
    theirs, scipy_seconds = _timed(_scipy_per_policy, values, scipy_rng, n_resamples,
                                   confidence)
    _, reduced_seconds = _best_of(3, lambda: _scipy_reduced(values, reduced_rng, n_resamples,
                                                            confidence))
    mine = np.array([[i.low for i in ours.intervals], [i.high for i in ours.intervals]])
    ratio, reduced_ratio = scipy_seconds / harness_seconds, reduced_seconds / harness_seconds
    note = (f"{n_resamples} resamples, {n_policies} policies x {n_train_seeds} training "
            f"seeds x {n_tasks} tasks x {n_eval_seeds} eval seeds, percentile intervals, "
            "all resamples run (no extrapolation), after an untimed warm-up; harness and "
            "scipy best case: best of 3 runs, scipy per policy: one run. "
            f"scipy {scipy.__version__} "
            "stats.bootstrap resamples tasks (vectorized, batch=1000) and its statistic "
            f"adds the same training-seed draw: per policy on raw outcomes {ratio:.1f}x "
            f"slower; best case (one call on per-task means) {reduced_ratio:.1f}x slower")
    return BenchResult(harness_seconds, scipy_seconds, ratio, note, reduced_seconds,
                       reduced_ratio, float(np.abs(mine - theirs).max()))
