"""The signal testbed's tables in the results store: evaluation point sets with their
reference Q-values, and the scores of each signal on a set."""

from __future__ import annotations

import json
import time
from typing import Any

import orjson

from harness.store import Store, TableSet, encode_json, reported

__all__ = ["SIGNAL_TABLES", "write_signal_points", "load_signal_points",
           "write_signal_result", "load_signal_results"]

SIGNAL_TABLES = TableSet("signals", ("""
CREATE TABLE IF NOT EXISTS signal_point_sets (
    set_id TEXT PRIMARY KEY, suite TEXT NOT NULL, config TEXT NOT NULL, points TEXT NOT NULL,
    reference TEXT NOT NULL, created_at REAL NOT NULL);
CREATE TABLE IF NOT EXISTS signal_results (
    set_id TEXT NOT NULL, signal TEXT NOT NULL, family TEXT NOT NULL, model TEXT NOT NULL,
    scores TEXT NOT NULL, info TEXT NOT NULL, created_at REAL NOT NULL,
    PRIMARY KEY (set_id, signal, model))""",))
"""Version 1: the tables as schema version 2 of the store created them."""


@reported
def write_signal_points(store: Store, set_id: str, suite: str, config: dict[str, Any],
                        points: list[dict[str, Any]], reference: dict[str, Any]) -> None:
    """Store one evaluation point set: `points` as dicts (`signals.base.EvaluationPoint.
    to_dict`), `reference` its Q-values (JSON-ready), replacing a set with the same id."""
    store.tables(SIGNAL_TABLES).execute(
        "INSERT OR REPLACE INTO signal_point_sets VALUES (?,?,?,?,?,?)",
        (set_id, suite, json.dumps(config, sort_keys=True), encode_json(points),
         encode_json(reference), time.time()))


@reported
def load_signal_points(store: Store, set_id: str) -> dict[str, Any] | None:
    """The point set `set_id` as ``{set_id, suite, config, points, reference}``, or None."""
    db = store.tables(SIGNAL_TABLES)
    row = None if db is None else db.execute(
        "SELECT set_id, suite, config, points, reference FROM signal_point_sets WHERE "
        "set_id=?", (set_id,)).fetchone()
    if row is None:
        return None
    return {"set_id": row[0], "suite": row[1], "config": json.loads(row[2]),
            "points": orjson.loads(row[3]), "reference": orjson.loads(row[4])}


@reported
def write_signal_result(store: Store, set_id: str, signal: str, family: str, model: str,
                        scores: list[list[float]], info: dict[str, Any]) -> None:
    """Store one signal's scores on a point set (one list per point), replacing an earlier
    result of the same (set, signal, model)."""
    store.tables(SIGNAL_TABLES).execute(
        "INSERT OR REPLACE INTO signal_results VALUES (?,?,?,?,?,?,?)",
        (set_id, signal, family, model, encode_json(scores), encode_json(info), time.time()))


@reported
def load_signal_results(store: Store, set_id: str) -> list[dict[str, Any]]:
    """Every stored signal result of a point set, oldest first: dicts with ``signal, family,
    model, scores, info``."""
    db = store.tables(SIGNAL_TABLES)
    if db is None:
        return []
    rows = db.execute("SELECT signal, family, model, scores, info FROM signal_results WHERE "
                      "set_id=? ORDER BY created_at, signal", (set_id,)).fetchall()
    return [{"signal": s, "family": f, "model": m, "scores": orjson.loads(sc),
             "info": orjson.loads(i)} for s, f, m, sc, i in rows]
