"""Per task: did a forgery probe change the verdict?

Forgery probes are the exploit policies a suite declares under a name starting with
``forge:`` (`tasks.sandbox_forgery.FORGERY_PREFIX`): they plant code where the verifier runs
it and submit without solving anything (`tasks.sandbox_forgery`). A task is *forgeable* when
one of them won an episode on it while no trivial probe (doing nothing, finishing at once,
...) won one: the planted code, not the task's trivial ceiling, changed the verdict. Errored
episodes count as failures, as everywhere in the harness.
"""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd

from tasks.sandbox_forgery import FORGERY_PREFIX

__all__ = ["FORGERY_COLUMNS", "forgery_by_task", "forgery_policies", "is_forgery_probe"]

FORGERY_COLUMNS = ["task_id", "task_type", "episodes", "forged", "forgeable", "probes"]
"""Columns of `forgery_by_task`, one row per task the forgery probes played: their episodes
on it, how many of them won, whether the task is forgeable, and the probes that won
(comma-separated names, empty when none did)."""


def is_forgery_probe(name: str, kind: str) -> bool:
    """Whether the probe called `name` of kind `kind` is a forgery probe."""
    return kind == "exploit" and name.startswith(FORGERY_PREFIX)


def forgery_policies(probes: Mapping[str, tuple[str, str]]) -> dict[str, str]:
    """Policy id -> probe name of the forgery probes among `probes` (policy id -> (probe name,
    kind), as `harness.audit.ceilings.success_by_type` takes them)."""
    return {policy: name for policy, (name, kind) in probes.items()
            if is_forgery_probe(name, kind)}


def forgery_by_task(frame: pd.DataFrame, probes: Mapping[str, tuple[str, str]]
                    ) -> pd.DataFrame:
    """Per task of `frame` (the probe run's episodes: columns ``policy``, ``task_id``,
    ``task_type``, ``success``) that a forgery probe played: did one change the verdict (see
    the module docstring); sorted by task id, columns `FORGERY_COLUMNS`; no rows when the
    suite declares no forgery probe."""
    forgers = forgery_policies(probes)
    trivial = [policy for policy, (_, kind) in probes.items() if kind == "trivial"]
    if not forgers or frame.empty:
        return pd.DataFrame(columns=FORGERY_COLUMNS)
    won = frame["success"].astype(bool)
    trivially_won = set(frame.loc[frame["policy"].isin(trivial) & won, "task_id"])
    rows = []
    for task_id, episodes in frame[frame["policy"].isin(list(forgers))].groupby(
            "task_id", sort=True):
        wins = episodes[episodes["success"].astype(bool)]
        rows.append({"task_id": str(task_id), "task_type": str(episodes["task_type"].iloc[0]),
                     "episodes": len(episodes), "forged": len(wins),
                     "forgeable": bool(len(wins)) and task_id not in trivially_won,
                     "probes": ", ".join(sorted({forgers[p] for p in wins["policy"]}))})
    return pd.DataFrame(rows, columns=FORGERY_COLUMNS)
