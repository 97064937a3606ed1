"""Audits in the store: `AuditResult` to and from the JSON kept in the ``audits`` table
(`harness.audit.tables`: `write_audit_row` / `load_audit_rows`).

Each table is stored as ``{"columns": [...], "rows": [[...], ...]}`` so that column order
and dtypes survive the round trip; NaN is stored as null and read back as NaN.
"""

from __future__ import annotations

import math
import os
from typing import Any

import numpy as np
import pandas as pd

from harness.audit.forgery import FORGERY_COLUMNS
from harness.audit.result import UNBUILT_COLUMNS, AuditResult
from harness.audit.tables import load_audit_rows, write_audit_row
from harness.core import HarnessError
from harness.store import Store

__all__ = ["RECORD_VERSION", "result_to_dict", "result_from_dict", "write_audit",
           "load_audits", "latest_audits"]

RECORD_VERSION = 3
"""2 adds the ``unbuilt`` table (tasks whose environment did not build), 3 the ``forgery``
table (per task, whether a forgery probe changed the verdict); an older record reads back
with none."""
_TABLES = ("rates", "ceiling", "oracle_failures", "learnability", "headroom", "flaky",
           "unbuilt", "forgery")
_ADDED = {"unbuilt": UNBUILT_COLUMNS, "forgery": FORGERY_COLUMNS}
"""Tables a version 1 or 2 record may lack, and their columns."""


def _plain(value: Any) -> Any:
    if isinstance(value, (np.bool_, bool)):
        return bool(value)
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return None if math.isnan(value) else float(value)
    return value


def _table_to_dict(frame: pd.DataFrame) -> dict[str, Any]:
    return {"columns": [str(c) for c in frame.columns],
            "rows": [[_plain(v) for v in row] for row in frame.itertuples(index=False)]}


def _table_from_dict(data: dict[str, Any]) -> pd.DataFrame:
    frame = pd.DataFrame(data["rows"], columns=data["columns"])
    return frame.infer_objects()


def result_to_dict(result: AuditResult) -> dict[str, Any]:
    """A JSON-serialisable dict of `result` (with its `summary`)."""
    data = {"version": RECORD_VERSION, "audit_id": result.audit_id, "suite": result.suite,
            "split": result.split, "config": result.config, "run_ids": list(result.run_ids),
            "notes": list(result.notes), "n_regraded": result.n_regraded,
            "summary": {k: _plain(v) if not isinstance(v, list) else v
                        for k, v in result.summary.items()}}
    data.update({name: _table_to_dict(getattr(result, name)) for name in _TABLES})
    return data


def result_from_dict(data: dict[str, Any]) -> AuditResult:
    """The `AuditResult` stored as `data` (as `result_to_dict` wrote it)."""
    if data.get("version") not in (1, 2, RECORD_VERSION):
        raise HarnessError(f"audit record version {data.get('version')!r} is not "
                           f"{RECORD_VERSION}; rerun `harness audit`")
    tables = {name: _table_from_dict(data[name] if name in data or name not in _ADDED
                                     else {"columns": _ADDED[name], "rows": []})
              for name in _TABLES}
    for name in ("flagged", "significant"):
        tables["ceiling"][name] = tables["ceiling"][name].astype(bool)
    tables["forgery"]["forgeable"] = tables["forgery"]["forgeable"].astype(bool)
    return AuditResult(audit_id=data["audit_id"], suite=data["suite"], split=data["split"],
                       config=data["config"], run_ids=tuple(data["run_ids"]),
                       notes=tuple(data["notes"]), n_regraded=int(data["n_regraded"]), **tables)


def write_audit(db: str | os.PathLike, result: AuditResult) -> None:
    """Store `result` in ``db`` (replacing an audit with the same id)."""
    with Store(db) as store:
        write_audit_row(store, result.audit_id, result.suite, result.split, result.config,
                        result_to_dict(result))


def load_audits(db: str | os.PathLike, *, suite: str | None = None) -> list[AuditResult]:
    """Every audit stored in ``db`` (oldest first), optionally of one suite."""
    with Store(db, readonly=True) as store:
        return [result_from_dict(row["result"]) for row in load_audit_rows(store, suite=suite)]


def latest_audits(audits: list[AuditResult]) -> list[AuditResult]:
    """The most recent audit per (suite, split), in (suite, split) order; ``audits`` is
    oldest first, as `load_audits` returns it."""
    latest: dict[tuple[str, str], AuditResult] = {}
    for audit in audits:
        latest[audit.suite, audit.split] = audit
    return [latest[key] for key in sorted(latest)]
