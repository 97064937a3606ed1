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
percentile intervals. `compare_scope` pairs two policies on the keys both played: the
difference with a paired cluster bootstrap interval and a permutation p that swaps whole
tasks' episodes between them (as `harness.stats.abstention_runs.compare_abstention`). A
metric whose denominator is empty is NaN (precision of a policy that acted on nothing).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from harness.core import HarnessError
from harness.stats.abstention import _harmonic, _ratio
from harness.stats.bootstrap import _check_options, _labels_to_codes
from harness.stats.count_metrics import (CountComparison, cluster_intervals, compare_counts,
                                          format_count_comparison, task_sums)
from harness.stats.estimators import Interval
from harness.stats.frame import aligned_outcomes

__all__ = ["METRICS", "COLUMNS", "scope_sums", "metrics_from_sums", "scope_metrics",
           "scope_table", "ScopeComparison", "compare_scope", "format_scope_comparison"]

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
    if int(codes.max()) + 1 < 2:
        raise HarnessError("scope intervals need at least two tasks")
    return cluster_intervals(task_sums(rows, codes), metrics_from_sums, METRICS, rng,
                             n_resamples, confidence)


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


ScopeComparison = CountComparison
"""`compare_scope`'s result."""


def _paired_sums(df: pd.DataFrame, a: str, b: str, suite: str | None
                 ) -> tuple[np.ndarray, np.ndarray, int]:
    """Per-task sums ``(n_tasks, 5)`` of A and B on the keys both played (aligned as
    `harness.stats.frame.aligned_outcomes` aligns them: each row's position travels through
    its score column), and the key count."""
    rows = df[df["in_scope"].notna()].reset_index(drop=True) if "in_scope" in df else df[:0]
    if rows.empty:
        raise HarnessError("no episode reports its scope: the scope metrics need tasks that "
                           "declare it (appworld-lite@3's scope templates)")
    aligned = aligned_outcomes(rows.assign(score=np.arange(len(rows), dtype=float)), (a, b),
                               metric="score", suite=suite)
    codes = np.unique(aligned.tasks, return_inverse=True)[1].reshape(-1)
    n_tasks = int(codes.max()) + 1
    sums = []
    for j in range(2):
        picked = rows.iloc[aligned.values[:, j].astype(int)]
        per_episode = _per_episode(*(picked[c].to_numpy(float) for c in COLUMNS))
        sums.append(task_sums(per_episode, codes, n_tasks))
    return sums[0], sums[1], aligned.n_keys


def compare_scope(df: pd.DataFrame, a: str, b: str, rng: np.random.Generator, *,
                  suite: str | None = None, n_resamples: int = 10_000,
                  confidence: float = 0.95) -> ScopeComparison:
    """Paired comparison of policies `a` and `b` on every scope metric over the rows of `df`
    that carry the scope counts: the difference A - B with a paired cluster bootstrap
    interval (the same resampled tasks for both) and a task-swap permutation p; needs at
    least two shared tasks."""
    _check_options(n_resamples, confidence, "percentile")
    sum_a, sum_b, n_keys = _paired_sums(df, a, b, suite)
    n_tasks = sum_a.shape[0]
    if n_tasks < 2:
        raise HarnessError(f"policies {a!r} and {b!r} share {n_tasks} task that reports its "
                           "scope; a comparison clustered by task needs at least 2")
    return compare_counts(sum_a, sum_b, policies=(a, b), n_keys=n_keys,
                          metrics_of=metrics_from_sums, names=METRICS, rng=rng,
                          n_resamples=n_resamples, confidence=confidence)


def format_scope_comparison(c: ScopeComparison, metric: str) -> str:
    """Terminal text of one metric of a `compare_scope` result."""
    return format_count_comparison(c, metric, "that declare their scope")
