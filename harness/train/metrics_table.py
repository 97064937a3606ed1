"""The training metrics' table in the results store: one row per (run, train seed, update
step). `harness.train.run` writes it; the report reads it for learning curves."""

from __future__ import annotations

import time
from collections.abc import Sequence

import orjson
import pandas as pd

from harness.store import Store, TableSet, encode_json, reported

__all__ = ["TRAIN_METRIC_TABLES", "write_train_metrics", "load_train_metrics"]

TRAIN_METRIC_TABLES = TableSet("train_metrics", ("""
CREATE TABLE IF NOT EXISTS train_metrics (
    run_id TEXT NOT NULL, train_seed INTEGER NOT NULL, step INTEGER NOT NULL,
    metrics TEXT NOT NULL, recorded_at REAL NOT NULL,
    PRIMARY KEY (run_id, train_seed, step))""",))
"""Version 1: the table as schema version 2 of the store created it."""

_EMPTY = ["run_id", "train_seed", "step"]


@reported
def write_train_metrics(store: Store, run_id: str, train_seed: int, step: int,
                        metrics: dict[str, float]) -> None:
    """Store the metrics of one training update; a resumed run that repeats a step replaces
    that step's row."""
    store.tables(TRAIN_METRIC_TABLES).execute(
        "INSERT OR REPLACE INTO train_metrics VALUES (?,?,?,?,?)",
        (run_id, int(train_seed), int(step), encode_json(metrics), time.time()))


@reported
def load_train_metrics(store: Store, *, run_id: str | Sequence[str] | None = None,
                       train_seed: int | None = None) -> pd.DataFrame:
    """One row per update: columns ``run_id, train_seed, step`` and one per metric (NaN where
    an update did not record it), sorted by run, seed and step."""
    db = store.tables(TRAIN_METRIC_TABLES)
    if db is None:
        return pd.DataFrame(columns=_EMPTY)
    clauses, params = [], []
    if run_id is not None:
        ids = [run_id] if isinstance(run_id, str) else list(run_id)
        clauses.append(f"run_id IN ({','.join('?' * len(ids))})")
        params += ids
    if train_seed is not None:
        clauses.append("train_seed = ?")
        params.append(int(train_seed))
    where = f" WHERE {' AND '.join(clauses)}" if clauses else ""
    rows = db.execute("SELECT run_id, train_seed, step, metrics FROM train_metrics"
                      f"{where} ORDER BY run_id, train_seed, step", params).fetchall()
    frame = pd.DataFrame.from_records([{"run_id": r, "train_seed": seed, "step": step,
                                        **orjson.loads(m)} for r, seed, step, m in rows])
    return frame if not frame.empty else pd.DataFrame(columns=_EMPTY)
