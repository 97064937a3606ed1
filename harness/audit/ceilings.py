"""Reward ceilings from the episode frame: what trivial probes, exploits and the oracle score.

Success rates carry Wilson 95% intervals (`harness.stats.estimators.proportion_interval`),
one per (probe, task type) and per probe over all task types (task type ``"all"``). Errored
episodes count as failures, as everywhere in the harness.
"""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd

from harness.core import HarnessError
from harness.stats.estimators import proportion_interval

__all__ = ["ALL", "RATE_COLUMNS", "success_by_type", "trivial_ceiling", "oracle_ceiling"]

ALL = "all"
"""The task-type label of rows pooled over every task type."""
RATE_COLUMNS = ["probe", "kind", "policy", "task_type", "n", "successes", "success", "low",
                "high"]


def _rate_row(group: pd.DataFrame, **labels: str) -> dict:
    n, wins = len(group), int(group["success"].sum())
    interval = proportion_interval(wins, n, method="wilson")
    return {**labels, "n": n, "successes": wins, "success": interval.estimate,
            "low": interval.low, "high": interval.high}


def success_by_type(df: pd.DataFrame, probes: Mapping[str, tuple[str, str]]) -> pd.DataFrame:
    """Success of each probe per task type and over all (``task_type == "all"``).

    ``probes``: policy id -> (probe name, kind). Rows are in ``probes`` order, task types
    sorted, ``"all"`` last. Columns `RATE_COLUMNS`.
    """
    rows = []
    for policy, (name, kind) in probes.items():
        episodes = df[df["policy"] == policy]
        if episodes.empty:
            raise HarnessError(f"no episodes of probe {name!r} (policy {policy!r})")
        labels = {"probe": name, "kind": kind, "policy": policy}
        for task_type, group in episodes.groupby("task_type", sort=True):
            rows.append(_rate_row(group, **labels, task_type=str(task_type)))
        rows.append(_rate_row(episodes, **labels, task_type=ALL))
    return pd.DataFrame(rows, columns=RATE_COLUMNS)


def trivial_ceiling(rates: pd.DataFrame, *, threshold: float = 0.10) -> pd.DataFrame:
    """The silent-finish ceiling: per task type, the best trivial probe's success.

    ``rates``: `success_by_type` rows (only ``kind == "trivial"`` are used). Columns:
    task_type, probe (the best; the first in probe order on ties), n, success, low, high,
    flagged (success > threshold), significant (the interval's low end > threshold).
    """
    if not 0 <= threshold < 1:
        raise HarnessError(f"the ceiling threshold must lie in [0, 1), got {threshold}")
    trivial = rates[rates["kind"] == "trivial"]
    if trivial.empty:
        raise HarnessError("no trivial probe was played")
    rows = []
    types = sorted(t for t in trivial["task_type"].unique() if t != ALL) + [ALL]
    for task_type in types:
        group = trivial[trivial["task_type"] == task_type]
        best = group.loc[group["success"].idxmax()]
        rows.append({"task_type": task_type, "probe": best["probe"], "n": int(best["n"]),
                     "success": float(best["success"]), "low": float(best["low"]),
                     "high": float(best["high"]),
                     "flagged": bool(best["success"] > threshold),
                     "significant": bool(best["low"] > threshold)})
    return pd.DataFrame(rows)


def oracle_ceiling(df: pd.DataFrame, oracle: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The oracle's success per task type and the tasks it fails.

    Returns ``(rates, failures)``: `success_by_type` rows of the oracle, and one row per task
    the oracle failed at least once (task_id, task_type, n, successes, rate, verdict):
    ``"never solved"`` (an unsolvable task or a grader fault) or ``"failed on some eval
    seeds"`` (stochastic dynamics or an oracle that guesses).
    """
    rates = success_by_type(df, {oracle: ("oracle", "oracle")})
    episodes = df[df["policy"] == oracle]
    per_task = episodes.groupby(["task_id", "task_type"], sort=True)["success"].agg(
        n="size", successes="sum").reset_index()
    failing = per_task[per_task["successes"] < per_task["n"]].copy()
    failing["successes"] = failing["successes"].astype(int)
    failing["rate"] = failing["successes"] / failing["n"]
    failing["verdict"] = ["never solved" if s == 0 else "failed on some eval seeds"
                          for s in failing["successes"]]
    return rates, failing.reset_index(drop=True)
