"""The scope metrics (`harness.stats.scope`) in the leaderboard and the report: one metric per
(suite, policy) for ``harness leaderboard --metric NAME`` and the table of every metric.

The counts come from the stored episodes: the step that ends an episode of a task that
declares its scope carries ``info["scope"]`` (the entries with their in-scope labels, those
acted on) and ``info["subgoals"]`` (each sub-goal, reached or not), as `tasks.base.Scope`
describes; `with_scope` reads them back through `harness.store.Store.step_info`. An episode
that did not finish (error, timeout) has no such step: it counts as acting on no entry and
reaching no sub-goal, its task's declaration read from another episode of the task (left out
when no episode of the task finished). Intervals: the cluster bootstrap over tasks, its RNG
derived from fixed labels, so the same store gives the same tables.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from harness.core import HarnessError, make_rng
from harness.report.abstention import LEADERBOARD_COLUMNS, metric_markdown
from harness.report.tables import Cell, Table, interval_cell
from harness.stats.scope import COLUMNS, METRICS, scope_table
from harness.store import Store

__all__ = ["SCOPE_LABELS", "with_scope", "scope_leaderboard", "scope_markdown",
           "scope_report_tables"]

SCOPE_LABELS = {
    "scope_precision": "scope precision (acted-on entries in scope / acted on)",
    "scope_recall": "scope recall (in-scope entries acted on / in scope)",
    "scope_f1": "scope-aware F1 (harmonic mean of scope precision and recall)",
    "app_progress": "app-level progress (share of per-app sub-goals reached)",
}
"""What each metric of `harness.stats.scope.METRICS` is, as tables caption it."""
_KEY = ["run_id", "policy", "suite", "task_id", "eval_seed", "sample"]


def _counts(scope: dict, subgoals: dict) -> tuple[float, ...]:
    entries, acted = scope["entries"], set(scope["acted"])
    return (float(sum(1 for e in acted if entries.get(e))), float(len(acted)),
            float(sum(bool(v) for v in entries.values())),
            float(sum(bool(v) for v in subgoals.values())), float(len(subgoals)))


def with_scope(store: Store, episodes: pd.DataFrame) -> pd.DataFrame:
    """`episodes` (the frame of `Store.load_episodes`) with the columns of
    `harness.stats.scope.COLUMNS` (NaN where the task declares no scope; module doc)."""
    frame = episodes.copy()
    for column in COLUMNS:
        frame[column] = np.nan
    if frame.empty:
        return frame
    runs = sorted(frame["run_id"].astype(str).unique())
    scope = store.step_info("scope", run_id=runs)
    if scope.empty:
        return frame
    goals = store.step_info("subgoals", run_id=runs)
    info = scope.merge(goals, on=[*_KEY, "t"], suffixes=("_scope", "_goals"))
    counts = pd.DataFrame([_counts(s, g) for s, g in zip(info["value_scope"],
                                                         info["value_goals"])],
                          columns=list(COLUMNS), index=info.index)
    found = pd.concat([info[_KEY], counts], axis=1).drop_duplicates(_KEY, keep="last")
    frame = frame.drop(columns=list(COLUMNS)).merge(found, on=_KEY, how="left")
    declared = found.groupby(["suite", "task_id"])[["in_scope", "subgoals"]].first()
    unfinished = frame["in_scope"].isna() & (frame["status"] != "ok")
    for i in frame.index[unfinished]:
        key = (frame.at[i, "suite"], frame.at[i, "task_id"])
        if key in declared.index:
            frame.loc[i, list(COLUMNS)] = [0.0, 0.0, declared.at[key, "in_scope"], 0.0,
                                           declared.at[key, "subgoals"]]
    return frame


def scope_leaderboard(frame: pd.DataFrame, metric: str, *,
                      n_resamples: int = 10_000) -> pd.DataFrame:
    """One row per (suite, policy) with scope counts (`with_scope`): `metric` with its
    cluster-bootstrap 95% interval, best first in each suite (columns of
    `harness.report.abstention.LEADERBOARD_COLUMNS`)."""
    if metric not in METRICS:
        raise HarnessError(f"unknown scope metric {metric!r}; one of {', '.join(METRICS)}")
    table = scope_table(frame, make_rng("leaderboard/scope"), n_resamples=n_resamples)
    if table.empty:
        raise HarnessError(f"no episode reports its scope, so there is no {metric}: play a "
                           "suite whose tasks declare it (appworld-lite@3's scope templates)")
    table = table[table["metric"] == metric].copy()
    table["best"] = table["estimate"] == table.groupby("suite")["estimate"].transform("max")
    table = table.sort_values(["suite", "estimate", "policy"], ascending=[True, False, True],
                              na_position="last")
    return table[LEADERBOARD_COLUMNS].reset_index(drop=True)


def scope_markdown(table: pd.DataFrame, metric: str) -> str:
    return metric_markdown(table, metric, SCOPE_LABELS[metric], "that declare their scope")


def scope_report_tables(frame: pd.DataFrame, *, n_resamples: int = 10_000) -> list[Table]:
    """The report's scope table over `frame` (`with_scope`; none when no episode reports
    its scope)."""
    table = scope_table(frame, make_rng("report/scope"), n_resamples=n_resamples)
    if table.empty:
        return []
    lookup = {(r.suite, r.policy, r.metric): r for r in table.itertuples()}
    best = table.groupby(["suite", "metric"])["estimate"].max()
    body = []
    for suite, policy in dict.fromkeys(zip(table["suite"], table["policy"])):
        cells = [interval_cell(r.estimate, r.low, r.high,
                               bold=bool(r.estimate == best[suite, metric]))
                 for metric in METRICS for r in [lookup[suite, policy, metric]]]
        body.append((Cell(suite), Cell(policy), *cells))
    return [Table("scope", "Scope-aware F1 and app-level progress (tasks that declare scope)",
                  ("Suite", "Policy", "Scope precision", "Scope recall", "Scope F1",
                   "App progress"), tuple(body), "ll" + "c" * len(METRICS),
                  ("Percent [95% cluster-bootstrap interval over tasks]; bold: best of the "
                   "suite. Scope precision: acted-on entries in scope / entries acted on; "
                   "recall: in-scope entries acted on / entries in scope (pooled over "
                   "episodes); F1: their harmonic mean; app progress: mean share of a task's "
                   "per-app sub-goals reached. –: undefined (an empty denominator).",))]
