"""Score signals on a point set and summarise their alignment with the reference.

Per signal and metric: the mean over informative states with a cluster-bootstrap interval,
states resampled by behaviour episode (`harness.stats.bootstrap.cluster_bootstrap`: states
of one episode are correlated). The pooled Spearman gets an interval from the same
episode-clustered resampling (`pooled_spearman_interval`). Paired comparisons: per metric,
the best method (the reference and the progress heuristic excluded: they are upper
references) against every other, on the same states, by the clustered sign-flip test
(`harness.stats.paired.sign_flip_test`), Holm-adjusted within the metric's family of
comparisons (`harness.stats.multiplicity.adjust_pvalues`).
"""

from __future__ import annotations

import logging
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from harness.core import HarnessError
from harness.stats.bootstrap import bootstrap_mean, cluster_bootstrap
from harness.stats.estimators import Interval
from harness.stats.multiplicity import adjust_pvalues
from harness.stats.paired import sign_flip_test
from signals.base import EvaluationPoint
from signals.metrics import HIGHER_IS_BETTER, METRICS, pooled_spearman, within_state_metrics
from signals.reference import ReferenceQ
from signals.registry import SignalResources, make_signal, signal_info

log = logging.getLogger(__name__)

__all__ = ["ScoredSignal", "MetricSummary", "Comparison", "SignalSummary", "score_signals",
           "summarise", "pooled_spearman_interval", "REFERENCE_SIGNAL",
           "UPPER_REFERENCES"]

REFERENCE_SIGNAL = "reference"
UPPER_REFERENCES = (REFERENCE_SIGNAL, "progress")
"""Not candidates for "best" in the paired comparisons: the reference itself and the
env-specific heuristic (an upper reference built from the rules, not a learnable signal)."""


@dataclass(frozen=True)
class ScoredSignal:
    """One method's scores (one array per point, shape ``(n_candidates,)``), or its error."""

    name: str
    family: str
    scores: tuple[np.ndarray, ...] = ()
    wall_s: float = 0.0
    info: dict[str, Any] = field(default_factory=dict)
    error: str | None = None

    @property
    def points_per_second(self) -> float:
        return len(self.scores) / self.wall_s if self.wall_s > 0 else float("inf")


@dataclass(frozen=True)
class MetricSummary:
    signal: str
    family: str
    metric: str
    interval: Interval
    n_states: int


@dataclass(frozen=True)
class Comparison:
    """`best` against `signal` on `metric`: effect = mean(best - signal) with its paired
    bootstrap interval, the clustered sign-flip p-value and its Holm adjustment."""

    metric: str
    best: str
    signal: str
    effect: Interval
    p_value: float
    p_holm: float
    reject: bool


@dataclass(frozen=True)
class SignalSummary:
    suite: str
    reference: str
    n_points: int
    n_informative: int
    n_episodes: int
    metrics: tuple[MetricSummary, ...]
    pooled: dict[str, Interval]
    comparisons: tuple[Comparison, ...]
    errors: dict[str, str]

    def interval(self, signal: str, metric: str) -> Interval | None:
        for summary in self.metrics:
            if summary.signal == signal and summary.metric == metric:
                return summary.interval
        return None


def _check_scores(name: str, scores: Sequence[np.ndarray],
                  points: Sequence[EvaluationPoint]) -> tuple[np.ndarray, ...]:
    if len(scores) != len(points):
        raise HarnessError(f"signal {name!r} returned {len(scores)} arrays for {len(points)} "
                           "points")
    out = []
    for point, values in zip(points, scores):
        values = np.asarray(values, dtype=float)
        if values.shape != (len(point.candidates),) or not np.isfinite(values).all():
            raise HarnessError(f"signal {name!r} gave scores of shape {values.shape} (finite: "
                               f"{bool(np.isfinite(values).all())}) at {point.point_id}")
        out.append(values)
    return tuple(out)


def score_signals(points: Sequence[EvaluationPoint], names: Sequence[str],
                  resources: SignalResources, *,
                  on_signal: Callable[[ScoredSignal], None] | None = None
                  ) -> list[ScoredSignal]:
    """Build and run every method in `names` on `points`. A method that fails is recorded
    with its error (and logged), never raised: the others still run."""
    results = []
    for name in names:
        family = signal_info(name).family
        started = time.perf_counter()
        try:
            signal = make_signal(name, resources)
            scores = _check_scores(name, signal.score(points), points)
            info = {"unparsed": int(getattr(signal, "unparsed", 0))}
            result = ScoredSignal(name, family, scores, time.perf_counter() - started, info)
        except Exception as exc:  # noqa: BLE001 - stored per signal, like per-episode errors
            log.warning("signal %s failed: %s", name, exc)
            detail = str(exc) if isinstance(exc, HarnessError) else traceback.format_exc()
            result = ScoredSignal(name, family, wall_s=time.perf_counter() - started,
                                  error=detail)
        results.append(result)
        if on_signal:
            on_signal(result)
    return results


def _interval(values: np.ndarray, clusters: np.ndarray, rng: np.random.Generator,
              n_resamples: int) -> Interval:
    if values.size == 0:
        return Interval(float("nan"), float("nan"), float("nan"), method="no states")
    if values.size == 1 or np.ptp(values) == 0:
        return Interval(float(values.mean()), float(values.mean()), float(values.mean()),
                        method="constant")
    if np.unique(clusters).size >= 2:
        return cluster_bootstrap(values, clusters, rng, n_resamples=n_resamples)
    return bootstrap_mean(values, rng, n_resamples=n_resamples)


def _weighted_ranks(values: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Average ranks of a multiset given by `values` (shape ``(n,)``) with multiplicities
    `weights` (shape ``(b, n)``): shape ``(b, n)``, as `scipy.stats.rankdata` would rank the
    expanded sample."""
    order = np.argsort(values, kind="stable")
    sorted_values = values[order]
    group = np.concatenate([[0], np.cumsum(np.diff(sorted_values) > 0)])
    n_groups = group[-1] + 1 if group.size else 0
    w = weights[:, order]
    group_weight = np.zeros((weights.shape[0], n_groups))
    np.add.at(group_weight.T, group, w.T)
    below = np.cumsum(group_weight, axis=1) - group_weight
    ranks_sorted = (below + (group_weight + 1) / 2)[:, group]
    ranks = np.empty_like(ranks_sorted)
    ranks[:, order] = ranks_sorted
    return ranks


def pooled_spearman_interval(scores: Sequence[np.ndarray], q: Sequence[np.ndarray],
                             clusters: Sequence[str], rng: np.random.Generator, *,
                             n_resamples: int = 2000, confidence: float = 0.95) -> Interval:
    """Pooled Spearman with a percentile interval from resampling whole clusters (episodes)
    of states with replacement. A resample's statistic is Spearman's rho of the expanded
    sample (every pair repeated as often as its cluster was drawn), computed from weighted
    average ranks without expanding."""
    estimate = pooled_spearman(scores, q)
    s = np.concatenate(scores)
    v = np.concatenate(q)
    codes = np.unique(np.repeat(np.asarray(clusters), [len(x) for x in scores]),
                      return_inverse=True)[1]
    n_clusters = codes.max() + 1 if codes.size else 0
    if not np.isfinite(estimate) or n_clusters < 2:
        return Interval(estimate, float("nan"), float("nan"), confidence, "pooled, no interval")
    draws = np.empty(n_resamples)
    block = max(1, 2_000_000 // max(s.size, 1))
    for start in range(0, n_resamples, block):
        rows = min(block, n_resamples - start)
        picks = rng.integers(0, n_clusters, (rows, n_clusters))
        counts = np.stack([np.bincount(p, minlength=n_clusters) for p in picks]).astype(float)
        weights = counts[:, codes]
        rs, rv = _weighted_ranks(s, weights), _weighted_ranks(v, weights)
        total = weights.sum(axis=1, keepdims=True)
        ms = (weights * rs).sum(1, keepdims=True) / total
        mv = (weights * rv).sum(1, keepdims=True) / total
        cov = (weights * (rs - ms) * (rv - mv)).sum(1)
        var = np.sqrt((weights * (rs - ms) ** 2).sum(1) * (weights * (rv - mv) ** 2).sum(1))
        draws[start:start + rows] = np.where(var > 0, cov / np.where(var > 0, var, 1), np.nan)
    alpha = (1 - confidence) / 2
    low, high = np.nanquantile(draws, [alpha, 1 - alpha])
    return Interval(estimate, float(low), float(high), confidence, "pooled cluster percentile")


def _comparisons(metric: str, values: dict[str, np.ndarray], clusters: np.ndarray,
                 rng: np.random.Generator, n_resamples: int) -> list[Comparison]:
    sign = 1.0 if HIGHER_IS_BETTER[metric] else -1.0
    means = {name: sign * float(np.nanmean(v)) for name, v in values.items()
             if name not in UPPER_REFERENCES and np.isfinite(v).any()}
    if len(means) < 2:
        return []
    best = max(means, key=means.get)
    raw = []
    for name in means:
        if name == best:
            continue
        mask = np.isfinite(values[best]) & np.isfinite(values[name])
        if mask.sum() < 2:
            continue
        grouped = clusters[mask] if np.unique(clusters[mask]).size >= 2 else None
        test = sign_flip_test(values[best][mask], values[name][mask], rng=rng,
                              clusters=grouped, n_resamples=n_resamples)
        raw.append((name, test))
    if not raw:
        return []
    adjusted = adjust_pvalues([t.p_value for _, t in raw], method="holm")
    return [Comparison(metric, best, name, test.effect, test.p_value,
                       float(adjusted.p_adjusted[k]), bool(adjusted.reject[k]))
            for k, (name, test) in enumerate(raw)]


def summarise(points: Sequence[EvaluationPoint], reference: ReferenceQ,
              scored: Sequence[ScoredSignal], rng: np.random.Generator, *,
              n_resamples: int = 2000) -> SignalSummary:
    """Metrics with intervals, pooled Spearman, and paired comparisons (module docstring)."""
    clusters = np.array([p.episode or p.task_id for p in points])
    per_signal: dict[str, dict[str, np.ndarray]] = {}
    summaries, pooled, errors = [], {}, {}
    for result in scored:
        if result.error is not None:
            errors[result.name] = result.error
            continue
        metrics = within_state_metrics(result.scores, reference.q)
        per_signal[result.name] = metrics
        for metric in METRICS:
            mask = np.isfinite(metrics[metric])
            summaries.append(MetricSummary(result.name, result.family, metric,
                                           _interval(metrics[metric][mask], clusters[mask],
                                                     rng, n_resamples), int(mask.sum())))
        pooled[result.name] = pooled_spearman_interval(result.scores, reference.q, clusters,
                                                       rng, n_resamples=n_resamples)
    comparisons = []
    for metric in METRICS:
        comparisons += _comparisons(metric, {n: m[metric] for n, m in per_signal.items()},
                                    clusters, rng, n_resamples)
    informative = int(np.isfinite(next(iter(per_signal.values()))["kendall_tau"]).sum()) \
        if per_signal else 0
    return SignalSummary(points[0].suite if points else "", reference.method, len(points),
                         informative, int(np.unique(clusters).size), tuple(summaries), pooled,
                         tuple(comparisons), errors)

