"""Sampling headroom: sampled pass@k versus greedy success, per task and per task type.

RL with group-relative advantages (GRPO, RLOO) learns only where sampling sometimes succeeds:
a task whose k samples all fail (or all succeed) gives every sample the same reward and so no
gradient. Headroom ``pass@k - greedy`` is what sampling finds that greedy decoding misses.

The sampled policy's episodes of one task (all eval seeds and samples pooled: ``n`` episodes,
``c`` successes) give the unbiased pass@k of Chen et al. (2021)
(`harness.stats.estimators.pass_at_k`). Greedy success is the mean success of the greedy
policy's ``sample == 0`` episodes of that task (a greedy decode is the same for every sample).
The greedy policy is another policy id in the same frame, or comes from a second frame.
Errored episodes count as failures.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from harness.core import HarnessError, UnknownNameError
from harness.stats.estimators import pass_at_k

__all__ = ["Headroom", "sampling_headroom"]

_TASK = ["suite", "task_id"]


@dataclass(frozen=True)
class Headroom:
    """Per-task and per-task-type headroom of sampling over greedy decoding.

    per_task columns: suite, task_id, task_type, n, c, pass_at_k, greedy, greedy_n, headroom
    (``pass_at_k - greedy``), zero_signal (share of the task's eval seeds whose samples all
    have the same outcome: no group-relative gradient).
    per_type columns: suite, task_type, n_tasks, pass_at_k, greedy, headroom (task means),
    share_with_headroom (tasks where pass@k > greedy), zero_signal (mean over tasks).
    """

    k: int
    sampled: str
    greedy: str
    per_task: pd.DataFrame
    per_type: pd.DataFrame


def _policy_rows(df: pd.DataFrame, policy: str, suite: str | None, what: str) -> pd.DataFrame:
    if not isinstance(df, pd.DataFrame) or df.empty:
        raise HarnessError(f"the {what} episode frame is empty")
    missing = [c for c in ("policy", "suite", "task_id", "task_type", "eval_seed", "sample",
                           "success", "train_seed") if c not in df.columns]
    if missing:
        raise HarnessError(f"the {what} episode frame lacks columns {missing}")
    if suite is not None:
        df = df[df["suite"] == suite]
    rows = df[df["policy"] == policy].copy()
    if rows.empty:
        where = f" in suite {suite!r}" if suite is not None else ""
        raise UnknownNameError(f"{what} policy{where}", policy, df["policy"].astype(str).unique())
    if rows["train_seed"].nunique(dropna=False) > 1:
        seeds = sorted(str(s) for s in rows["train_seed"].unique())
        raise HarnessError(f"{what} policy {policy!r} has several training seeds {seeds}; "
                           "select one seed's episodes first")
    rows["success"] = rows["success"].fillna(False).astype(bool)
    return rows


def sampling_headroom(df: pd.DataFrame, *, sampled: str, greedy: str, k: int,
                      suite: str | None = None,
                      greedy_df: pd.DataFrame | None = None) -> Headroom:
    """Headroom of policy ``sampled`` (k or more samples per task) over policy ``greedy``.

    ``greedy`` is read from ``greedy_df`` when given (e.g. a greedy run stored separately,
    possibly under the same policy id), else from ``df``. Tasks both sides ran are kept;
    `HarnessError` when there are none or a task has fewer than ``k`` sampled episodes.
    """
    if greedy_df is None and greedy == sampled:
        raise HarnessError("greedy and sampled are the same policy of the same frame; pass "
                           "greedy_df=... or a different greedy policy id")
    rows = _policy_rows(df, sampled, suite, "sampled")
    greedy_rows = _policy_rows(df if greedy_df is None else greedy_df, greedy, suite, "greedy")
    greedy_rows = greedy_rows[greedy_rows["sample"] == 0]
    if greedy_rows.empty:
        raise HarnessError(f"greedy policy {greedy!r} has no sample-0 episodes")

    grouped = rows.groupby(_TASK, sort=True)
    table = pd.DataFrame({"task_type": grouped["task_type"].first(),
                          "n": grouped.size(), "c": grouped["success"].sum().astype(np.int64)})
    groups = rows.groupby(_TASK + ["eval_seed"])["success"]
    flat = (groups.min() == groups.max()).groupby(level=_TASK).mean()
    table["zero_signal"] = flat.reindex(table.index).to_numpy(dtype=float)
    g = greedy_rows.groupby(_TASK)["success"]
    table = table.join(pd.DataFrame({"greedy": g.mean().astype(float), "greedy_n": g.size()}),
                       how="inner")
    if table.empty:
        raise HarnessError(f"policies {sampled!r} and {greedy!r} share no task"
                           + (f" in suite {suite!r}" if suite else ""))
    table["pass_at_k"] = pass_at_k(table["n"].to_numpy(), table["c"].to_numpy(), k)
    table["headroom"] = table["pass_at_k"] - table["greedy"]
    per_task = table.reset_index()[["suite", "task_id", "task_type", "n", "c", "pass_at_k",
                                    "greedy", "greedy_n", "headroom", "zero_signal"]]
    by_type = per_task.assign(beats=per_task["headroom"] > 0).groupby(["suite", "task_type"],
                                                                      sort=True)
    per_type = pd.DataFrame({
        "n_tasks": by_type.size(),
        "pass_at_k": by_type["pass_at_k"].mean(),
        "greedy": by_type["greedy"].mean(),
        "headroom": by_type["headroom"].mean(),
        "share_with_headroom": by_type["beats"].mean().astype(float),
        "zero_signal": by_type["zero_signal"].mean(),
    }).reset_index()
    return Headroom(k, sampled, greedy, per_task, per_type)
