"""Transactions and multi-row inserts on a plain SQLite connection: the store's write path.

Shared by `harness.store` and the episode writer's process (`harness.writer_process`), which
must start fast, so this module imports nothing but the standard library.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from typing import TypeVar

BUSY_TIMEOUT_S = 30.0
"""How long a statement (and the switch to WAL) waits for another connection's lock."""
MAX_BOUND_PARAMETERS = 32766
"""Most parameters bound in one statement (SQLite's default limit since 3.32; a build with a
lower limit is asked for its own)."""

_T = TypeVar("_T")


def in_transaction(db: sqlite3.Connection, body: Callable[[], _T]) -> _T:
    """Run `body` in one ``BEGIN IMMEDIATE`` transaction (the write lock taken up front, so
    two writers never both read then write). SQLite rolls a transaction back by itself after
    some errors (a full disk): the original error propagates, never "cannot rollback"."""
    db.execute("BEGIN IMMEDIATE")
    try:
        result = body()
        db.execute("COMMIT")
    except BaseException:
        if db.in_transaction:
            db.execute("ROLLBACK")
        raise
    return result


def insert_rows(db: sqlite3.Connection, insert: str, rows: Sequence[tuple]) -> None:
    """`insert` (``INSERT ... INTO table``) of equal-width `rows` as multi-row ``VALUES``
    statements: one SQLite call per chunk rather than one per row."""
    if not rows:
        return
    width = len(rows[0])
    limit = min(db.getlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER), MAX_BOUND_PARAMETERS)
    per_call = max(1, min(len(rows), limit // width))
    for start in range(0, len(rows), per_call):
        chunk = rows[start:start + per_call]
        values = ",".join([f"({','.join('?' * width)})"] * len(chunk))
        db.execute(f"{insert} VALUES {values}", [v for row in chunk for v in row])


KEY_WIDTH = 6
"""Columns of an episode's key at the start of each row: run_id and the `EpisodeKey`."""


def delete_turns(db: sqlite3.Connection, keys: Sequence[tuple]) -> None:
    """Delete the ``turns`` rows of the episode `keys` (each ``(run_id, *EpisodeKey)``): one
    primary-key lookup per key, and none for the runs that store no turns at all."""
    runs = {key[0] for key in keys}
    with_turns = {run for run in runs if db.execute(
        "SELECT 1 FROM turns WHERE run_id=? LIMIT 1", (run,)).fetchone() is not None}
    if with_turns:
        db.executemany("DELETE FROM turns WHERE run_id=? AND policy_id=? AND suite=? AND "
                       "task_id=? AND eval_seed=? AND sample=?",
                       [key for key in keys if key[0] in with_turns])


def write_episode_rows(db: sqlite3.Connection, episodes: Sequence[tuple],
                       trajectories: Sequence[tuple], *, replace: bool,
                       turns: Sequence[tuple] = ()) -> None:
    """Insert ``episodes``, ``trajectories`` and ``turns`` rows (`harness.store.episode_rows`
    makes them; `turns` only for the episodes that have some) in one transaction. `replace`:
    a row under an existing key replaces it, and an earlier attempt's turns go with it even
    when this attempt stores none."""
    verb = "INSERT OR REPLACE" if replace else "INSERT"

    def write() -> None:
        insert_rows(db, f"{verb} INTO episodes", episodes)
        insert_rows(db, f"{verb} INTO trajectories", trajectories)
        if replace and len(turns) < len(episodes):  # an earlier attempt's turns go
            with_turns = {row[:KEY_WIDTH] for row in turns}
            delete_turns(db, [row[:KEY_WIDTH] for row in episodes
                              if row[:KEY_WIDTH] not in with_turns])
        insert_rows(db, f"{verb} INTO turns", turns)

    in_transaction(db, write)
