"""The audits' table in the results store: one row per stored audit (`harness.audit.records`
reads and writes `AuditResult`s through these functions)."""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from typing import Any

import orjson

from harness.store import Store, TableSet, encode_json, reported

__all__ = ["AUDIT_TABLES", "write_audit_row", "load_audit_rows"]

AUDIT_TABLES = TableSet("audits", ("""
CREATE TABLE IF NOT EXISTS audits (
    audit_id TEXT PRIMARY KEY, suite TEXT NOT NULL, split TEXT NOT NULL, config TEXT NOT NULL,
    result TEXT NOT NULL, created_at REAL NOT NULL)""",))
"""Version 1: the table as schema version 2 of the store created it."""


@reported
def write_audit_row(store: Store, audit_id: str, suite: str, split: str,
                    config: dict[str, Any], result: dict[str, Any]) -> None:
    """Store one benchmark audit, replacing an earlier one with the same id. `config` and
    `result` are JSON-serialisable dicts."""
    store.tables(AUDIT_TABLES).execute(
        "INSERT OR REPLACE INTO audits VALUES (?,?,?,?,?,?)",
        (audit_id, suite, split, json.dumps(config, sort_keys=True), encode_json(result),
         time.time()))


@reported
def load_audit_rows(store: Store, *, suite: str | Sequence[str] | None = None
                    ) -> list[dict[str, Any]]:
    """Stored audits, oldest first: dicts with ``audit_id, suite, split, config, result,
    created_at`` (`config` and `result` decoded)."""
    db = store.tables(AUDIT_TABLES)
    if db is None:
        return []
    sql, params = "SELECT * FROM audits", []
    if suite is not None:
        params = [suite] if isinstance(suite, str) else list(suite)
        sql += f" WHERE suite IN ({','.join('?' * len(params))})"
    rows = db.execute(sql + " ORDER BY created_at, audit_id", params).fetchall()
    return [{"audit_id": a, "suite": s, "split": sp, "config": json.loads(c),
             "result": orjson.loads(r), "created_at": t} for a, s, sp, c, r, t in rows]
