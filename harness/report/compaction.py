"""Score against context budget: the policies of a report that differ only in their context
compaction budget (the ``compaction`` layer's ``compact_budget``), for `harness report`'s
figure (`harness.report.figures.score_against_budget`).

A policy's budget is read from its stored provenance (the layer specs every layered policy
records); its *base* is its id without the compaction options, so ``P?layers=compaction&
compact_budget=256`` and ``P?layers=compaction&compact_budget=1024`` are two budgets of
``P``, and ``P`` itself (no compaction) is its full context. The interval of each point is
the normal interval of the mean over tasks (each task's episodes averaged first).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any
from urllib.parse import unquote_plus

import numpy as np
import pandas as pd

__all__ = ["base_policy", "policy_budgets", "budget_rows"]

COMPACTION_KEYS = ("compact_budget", "compact_tokens", "compact_prompt")


def base_policy(policy: str) -> str:
    """`policy` without its compaction options (and without ``compaction`` in its layers)."""
    head, mark, query = policy.rpartition("?")
    if not mark:
        return policy
    kept = []
    for piece in query.split("&"):
        key, _, value = piece.partition("=")
        if key in COMPACTION_KEYS:
            continue
        if key == "layers":
            names = [n for n in unquote_plus(value).split(",") if n and n != "compaction"]
            if not names:
                continue
            piece = f"layers={','.join(names)}"
        kept.append(piece)
    return head + ("?" + "&".join(kept) if kept else "")


def _budget(provenance: Any) -> int | None:
    layers = (provenance or {}).get("layers") or [] if isinstance(provenance, dict) else []
    for layer in layers:
        if isinstance(layer, dict) and layer.get("name") == "compaction":
            return int(layer.get("options", {}).get("compact_budget"))
    return None


def policy_budgets(store: Any, policies: Iterable[str]) -> dict[str, int | None]:
    """Each of `policies`' compaction budget from its stored provenance (None: none)."""
    wanted, out = set(policies), {}
    for policy, provenance in store.query(
            "SELECT DISTINCT policy_id, policy_provenance FROM episodes"):
        if policy in wanted and policy not in out:
            out[policy] = _budget(json.loads(provenance) if provenance else None)
    return out


def budget_rows(frame: pd.DataFrame, budgets: dict[str, int | None],
                metric: str = "score") -> pd.DataFrame:
    """Rows ``suite, base, budget, score, low, high, n_tasks`` for every base policy with
    at least one compacted variant and two points (budget NaN: the full context), from the
    ``ok`` episodes of `frame` (`load_episodes`)."""
    columns = ["suite", "base", "budget", "score", "low", "high", "n_tasks"]
    ok = frame[frame["status"] == "ok"].copy()
    ok["base"] = ok["policy"].map(base_policy)
    ok["budget"] = ok["policy"].map(lambda p: budgets.get(p)).astype(float)
    rows = []
    for (suite, base), group in ok.groupby(["suite", "base"], sort=True):
        points = group.groupby("budget", dropna=False)
        if group["budget"].notna().sum() == 0 or points.ngroups < 2:
            continue
        for budget, episodes in points:
            tasks = episodes.groupby("task_id")[metric].mean().to_numpy(dtype=float)
            half = 1.96 * tasks.std(ddof=1) / np.sqrt(len(tasks)) if len(tasks) > 1 else 0.0
            rows.append((suite, base, budget, tasks.mean(), tasks.mean() - half,
                         tasks.mean() + half, len(tasks)))
    return pd.DataFrame(rows, columns=columns)
