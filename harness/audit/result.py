"""An audit's result (`AuditResult`): what `harness.audit.auditor` computes and
`harness.audit.records` stores and reads back."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from harness.audit.ceilings import ALL
from harness.audit.determinism import FLAKY_COLUMNS
from harness.audit.forgery import FORGERY_COLUMNS

__all__ = ["AuditResult", "UNBUILT_COLUMNS"]

UNBUILT_COLUMNS = ["task_id", "task_type", "reason"]
"""Columns of `AuditResult.unbuilt`: a task whose environment did not build, and why."""


@dataclass(frozen=True)
class AuditResult:
    """One audit. Tables are DataFrames; `summary` holds the headline numbers.

    rates: every probe's success per task type (`ceilings.RATE_COLUMNS`; kind ``trivial``,
    ``exploit``, ``oracle`` or ``greedy``). ceiling: `ceilings.trivial_ceiling`.
    oracle_failures: `ceilings.oracle_ceiling` failures, among the tasks whose environment
    built. learnability, headroom: per task type (`learnability`). flaky:
    `determinism.FLAKY_COLUMNS`. unbuilt: the tasks whose environment did not build
    (`UNBUILT_COLUMNS`), left out of every other table: not oracle failures. forgery: per
    task the forgery probes played, whether one changed the verdict
    (`forgery.FORGERY_COLUMNS`; no rows when the suite declares none).
    """

    audit_id: str
    suite: str
    split: str
    config: dict[str, Any]
    run_ids: tuple[str, ...]
    notes: tuple[str, ...]
    rates: pd.DataFrame
    ceiling: pd.DataFrame
    oracle_failures: pd.DataFrame
    learnability: pd.DataFrame
    headroom: pd.DataFrame
    n_regraded: int
    flaky: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=FLAKY_COLUMNS))
    unbuilt: pd.DataFrame = field(
        default_factory=lambda: pd.DataFrame(columns=UNBUILT_COLUMNS))
    forgery: pd.DataFrame = field(
        default_factory=lambda: pd.DataFrame(columns=FORGERY_COLUMNS))

    @property
    def summary(self) -> dict[str, Any]:
        """Headline numbers: oracle success, trivial ceiling, flagged task types, zero-gradient
        share, headroom, flaky trajectories, best exploit (None where not measured), tasks
        whose environment did not build, tasks the forgery probes played and those whose
        verdict they changed (None where the suite declares no forgery probe)."""
        def overall(table: pd.DataFrame, column: str) -> float | None:
            row = table[table["task_type"] == ALL]
            return None if row.empty else float(row[column].iloc[0])

        oracle = self.rates[(self.rates["kind"] == "oracle") & (self.rates["task_type"] == ALL)]
        exploits = self.rates[(self.rates["kind"] == "exploit") & (self.rates["task_type"] == ALL)]
        ceiling = self.ceiling[self.ceiling["task_type"] == ALL].iloc[0]
        return {
            "oracle_success": None if oracle.empty else float(oracle["success"].iloc[0]),
            "oracle_failing_tasks": len(self.oracle_failures),
            "ceiling": float(ceiling["success"]), "ceiling_probe": str(ceiling["probe"]),
            "threshold": float(self.config["threshold"]),
            "flagged_types": [str(t) for t in self.ceiling.loc[
                self.ceiling["flagged"] & (self.ceiling["task_type"] != ALL), "task_type"]],
            "zero_gradient": overall(self.learnability, "zero_gradient"),
            "pass_at_k": overall(self.learnability, "pass_at_k"),
            "headroom": overall(self.headroom, "headroom"),
            "n_regraded": self.n_regraded, "n_flaky": len(self.flaky),
            "exploit_max": None if exploits.empty else float(exploits["success"].max()),
            "unbuilt_tasks": len(self.unbuilt),
            "forgery_tasks": len(self.forgery) if len(self.forgery) else None,
            "forgeable_tasks": (int(self.forgery["forgeable"].astype(bool).sum())
                                if len(self.forgery) else None),
        }
