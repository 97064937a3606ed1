"""Scope metrics: whether an agent acted on exactly the entries an instruction covers, and how
many of a task's per-app sub-goals it reached.

A task that declares its scope (`tasks.base.Scope`) ranges over near-identical entries, some
of which the instruction's constraint excludes. Per episode: ``acted_in_scope`` (entries
acted on that are in scope), ``acted`` (entries acted on), ``in_scope`` (entries in scope),
``reached`` and ``subgoals`` (sub-goals reached, declared). Over a set of episodes:

- ``scope_precision``: acted-on in-scope entries / acted-on entries (summed over episodes);
- ``scope_recall``: acted-on in-scope entries / in-scope entries;
- ``scope_f1``: the harmonic mean of those two (scope-aware F1 over pooled entries; 0 when
  both are 0);
- ``app_progress``: the mean over episodes of each episode's share of sub-goals reached
  (app-level progress: every task weighs the same, however many apps it spans).

Intervals: the cluster bootstrap over tasks (all of a task's episodes resampled together,
`harness.stats.bootstrap`'s resampling), every metric recomputed from the resampled sums,
percentile intervals. A metric whose denominator is empty is NaN (precision of a policy that
acted on nothing).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from harness.core import HarnessError
from harness.stats.abstention import _harmonic, _ratio
from harness.stats.bootstrap import _blocks, _check_options, _labels_to_codes, _resample_counts
from harness.stats.estimators import Interval

__all__ = ["METRICS", "COLUMNS", "scope_sums", "metrics_from_sums", "scope_metrics",
           "scope_table"]

METRICS = ("scope_precision", "scope_recall", "scope_f1", "app_progress")
COLUMNS = ("acted_in_scope", "acted", "in_scope", "reached", "subgoals")
"""The per-episode counts a frame passed to `scope_table` carries (NaN: no scope declared)."""
TABLE_COLUMNS = ["suite", "policy", "n", "n_tasks", "metric", "estimate", "low", "high"]


def _per_episode(acted_in_scope, acted, in_scope, reached, subgoals) -> np.ndarray:
    """``(n_episodes, 5)``: acted_in_scope, acted, in_scope, progress share, 1."""
    arrays = [np.asarray(a, dtype=float) for a in (acted_in_scope, acted, in_scope, reached,
                                                   subgoals)]
    if len({a.shape for a in arrays}) != 1 or arrays[0].ndim != 1 or arrays[0].size == 0:
        raise HarnessError("scope counts need one value per episode in each of "
                           f"{', '.join(COLUMNS)}")
    tp, acted, in_scope, reached, subgoals = arrays
    if ((tp < 0) | (tp > acted) | (tp > in_scope) | (reached < 0) | (reached > subgoals)
            | (subgoals <= 0)).any():
        raise HarnessError("scope counts out of range: 0 <= acted_in_scope <= acted, "
                           "in_scope; 0 <= reached <= subgoals; subgoals >= 1")
    return np.stack([tp, acted, in_scope, reached / subgoals, np.ones_like(tp)], axis=1)


def scope_sums(acted_in_scope, acted, in_scope, reached, subgoals) -> np.ndarray:
    """The sums every metric is a function of, ``(5,)``: acted-on in-scope entries, acted-on
    entries, in-scope entries, summed progress shares, episodes (each argument
    ``(n_episodes,)``)."""
    return _per_episode(acted_in_scope, acted, in_scope, reached, subgoals).sum(axis=0)


def metrics_from_sums(sums: np.ndarray) -> dict[str, np.ndarray]:
    """Every metric of `METRICS` from sums ``(..., 5)`` (elementwise over leading axes)."""
    tp, acted, in_scope, progress, n = np.moveaxis(np.asarray(sums, dtype=float), -1, 0)
    precision, recall = _ratio(tp, acted), _ratio(tp, in_scope)
    return {"scope_precision": precision, "scope_recall": recall,
            "scope_f1": _harmonic(precision, recall), "app_progress": _ratio(progress, n)}


def scope_metrics(acted_in_scope, acted, in_scope, reached, subgoals, tasks,
                  rng: np.random.Generator, *, n_resamples: int = 10_000,
                  confidence: float = 0.95) -> dict[str, Interval]:
    """Every metric with its cluster-bootstrap interval over `tasks` (labels, one per episode;
    at least two tasks); the counts as `scope_sums` takes them."""
    _check_options(n_resamples, confidence, "percentile")
    rows = _per_episode(acted_in_scope, acted, in_scope, reached, subgoals)
    codes = _labels_to_codes(tasks, len(rows), "tasks")
    n_tasks = int(codes.max()) + 1
    if n_tasks < 2:
        raise HarnessError("scope intervals need at least two tasks")
    per_task = np.stack([np.bincount(codes, weights=rows[:, j], minlength=n_tasks)
                         for j in range(rows.shape[1])], axis=1)  # (n_tasks, 5)
    point = metrics_from_sums(per_task.sum(axis=0))
    resampled = np.empty((n_resamples, rows.shape[1]))
    start = 0
    for size in _blocks(n_resamples, n_tasks):
        resampled[start:start + size] = _resample_counts(rng, size, n_tasks) @ per_task
        start += size
    boot = metrics_from_sums(resampled)
    alpha = (1 - confidence) / 2
    out = {}
    for name in METRICS:
        values = boot[name][np.isfinite(boot[name])]
        low, high = (np.quantile(values, [alpha, 1 - alpha]) if values.size
                     else (np.nan, np.nan))
        out[name] = Interval(float(point[name]), float(low), float(high), confidence,
                             "cluster percentile")
    return out


def scope_table(df: pd.DataFrame, rng: np.random.Generator, *, n_resamples: int = 10_000,
                confidence: float = 0.95) -> pd.DataFrame:
    """Every metric per (suite, policy) over the rows of `df` that carry the scope counts
    (`COLUMNS` not NaN; `harness.report.scope.with_scope` adds them to the episode frame):
    columns ``TABLE_COLUMNS``, one row per metric, NaN bounds for a group with fewer than two
    tasks. Empty when no row carries them."""
    if not set(COLUMNS) <= set(df.columns) or df.empty:
        return pd.DataFrame(columns=TABLE_COLUMNS)
    rows = df[df["in_scope"].notna()]
    out = []
    for (suite, policy), group in rows.groupby(["suite", "policy"], sort=True):
        counts = [group[c].to_numpy(float) for c in COLUMNS]
        tasks = group["task_id"].astype(str).to_numpy()
        n_tasks = int(np.unique(tasks).size)
        if n_tasks >= 2:
            intervals = scope_metrics(*counts, tasks, rng, n_resamples=n_resamples,
                                      confidence=confidence)
            values = {m: (i.estimate, i.low, i.high) for m, i in intervals.items()}
        else:
            point = metrics_from_sums(scope_sums(*counts))
            values = {m: (float(point[m]), np.nan, np.nan) for m in METRICS}
        out += [(suite, policy, len(group), n_tasks, m, *values[m]) for m in METRICS]
    return pd.DataFrame(out, columns=TABLE_COLUMNS)
