"""Learnability under group-relative RL (GRPO, RLOO) and sampling headroom.

GRPO normalises each sample's reward within its group: the k samples of one prompt (here one
task and one eval seed). A group whose k samples all fail, or all succeed, has zero reward
variance and so gives every sample a zero advantage: no gradient. The share of such groups
under the base policy says how much of a benchmark RL can learn from at all; the share of
tasks solved at least once in k samples (pass@k) is the base policy's *capability ceiling*.

Headroom (pass@k versus greedy success) comes from `harness.stats.headroom.sampling_headroom`.
"""

from __future__ import annotations

import pandas as pd

from harness.audit.ceilings import ALL
from harness.core import HarnessError
from harness.stats.estimators import pass_at_k
from harness.stats.headroom import sampling_headroom

__all__ = ["LEARNABILITY_COLUMNS", "learnability", "headroom_by_type"]

LEARNABILITY_COLUMNS = ["task_type", "n_tasks", "n_groups", "success", "all_fail",
                        "all_succeed", "zero_gradient", "pass_at_k"]


def _summarise(groups: pd.DataFrame, k: int, task_type: str) -> dict:
    per_task = groups.groupby("task_id")[["n", "c"]].sum()
    return {
        "task_type": task_type, "n_tasks": len(per_task), "n_groups": len(groups),
        "success": float(groups["c"].sum() / groups["n"].sum()),
        "all_fail": float((groups["c"] == 0).mean()),
        "all_succeed": float((groups["c"] == groups["n"]).mean()),
        "zero_gradient": float(((groups["c"] == 0) | (groups["c"] == groups["n"])).mean()),
        "pass_at_k": float(pass_at_k(per_task["n"].to_numpy(), per_task["c"].to_numpy(),
                                     k).mean()),
    }


def learnability(df: pd.DataFrame, base: str, k: int) -> pd.DataFrame:
    """Zero-variance groups of policy ``base`` per task type and over all (``"all"``).

    ``df``: episodes with ``k`` samples per (task, eval seed) for ``base``. Columns
    `LEARNABILITY_COLUMNS`: shares of groups whose samples all fail / all succeed / either
    (``zero_gradient``), mean success, and the task-mean pass@k (capability ceiling).
    """
    episodes = df[df["policy"] == base]
    if episodes.empty:
        raise HarnessError(f"no episodes of base policy {base!r}")
    groups = episodes.groupby(["task_type", "task_id", "eval_seed"], sort=True)["success"].agg(
        n="size", c="sum").reset_index()
    short = groups[groups["n"] < k]
    if not short.empty:
        raise HarnessError(f"base policy {base!r} has only {int(short['n'].min())} samples on "
                           f"some (task, eval seed); learnability needs k={k}")
    rows = [_summarise(g, k, str(t)) for t, g in groups.groupby("task_type", sort=True)]
    rows.append(_summarise(groups, k, ALL))
    return pd.DataFrame(rows, columns=LEARNABILITY_COLUMNS)


def headroom_by_type(sampled: pd.DataFrame, base: str, k: int, *,
                     greedy: pd.DataFrame | None = None,
                     greedy_policy: str | None = None) -> pd.DataFrame:
    """pass@k of ``base`` versus greedy success per task type, plus an ``"all"`` row (task
    means over every task).

    The greedy side is policy ``greedy_policy`` of ``greedy`` when given; otherwise the
    base policy's own sample-0 episodes (pass@1 of one sample: headroom of sampling k times
    over sampling once). Columns: task_type, n_tasks, pass_at_k, greedy, headroom,
    share_with_headroom.
    """
    if greedy is None:
        greedy, greedy_policy = sampled[sampled["sample"] == 0], base
    result = sampling_headroom(sampled, sampled=base, greedy=greedy_policy or base, k=k,
                               greedy_df=greedy)
    per_task = result.per_task
    table = result.per_type[["task_type", "n_tasks", "pass_at_k", "greedy", "headroom",
                             "share_with_headroom"]]
    overall = {"task_type": ALL, "n_tasks": len(per_task),
               "pass_at_k": float(per_task["pass_at_k"].mean()),
               "greedy": float(per_task["greedy"].mean()),
               "headroom": float(per_task["headroom"].mean()),
               "share_with_headroom": float((per_task["headroom"] > 0).mean())}
    return pd.concat([table, pd.DataFrame([overall])], ignore_index=True)
