"""Claims: how concurrent invocations of one run split its episodes, and the attempt log.

Every invocation of a run (a `harness run` process, a Ray driver) is an *owner*: a row of
``run_owners`` with a heartbeat that a background thread renews every ``lease_s / 3``
seconds. Before it plays an episode an owner *claims* its key (``run_claims``), in one
``BEGIN IMMEDIATE`` transaction per batch, so no two owners ever hold one key. A key whose
claim belongs to another owner is:

- **taken over** when that owner is gone: ended, its heartbeat older than ``lease_s`` (a
  SIGKILLed run's claims are played by the survivor once its lease expires), or, on this
  host, its process no longer exists (then at once);
- **left alone for good** when that live owner has marked it done (it played it);
- **waited for** otherwise (the live owner is playing it).

A key stored ``ok`` (by anyone) by the time it would be claimed is dropped instead: the
test is the store itself, not when the episode finished, since another owner's record may
be written well after it finished.
An owner that ends (normally, by an error or a signal) marks itself ended and deletes its
claims and those of owners gone, so a rerun replays what failed, as a rerun always has.

Every attempt that did not end ``ok`` gets a row of ``run_attempts`` (status, error, wall
time, owner, time), so a rerun that replaces an episode's record keeps its history; an
``ok`` attempt is the episode's record itself (never replayed).
"""

from __future__ import annotations

import logging
import os
import socket
import sqlite3
import threading
import time
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from harness.records import EpisodeKey, EpisodeRecord
from harness.sqlite_batch import BUSY_TIMEOUT_S, in_transaction
from harness.store import Store, TableSet

__all__ = ["CLAIM_TABLES", "DEFAULT_LEASE_S", "Claims", "Taken", "load_attempts"]

log = logging.getLogger(__name__)

DEFAULT_LEASE_S = 60.0
"""How long an owner's claims outlive its last heartbeat (``HARNESS_CLAIM_LEASE_S``)."""

_KEY = "policy_id TEXT NOT NULL, suite TEXT NOT NULL, task_id TEXT NOT NULL, " \
       "eval_seed INTEGER NOT NULL, sample INTEGER NOT NULL"
_KEY_NAMES = "policy_id, suite, task_id, eval_seed, sample"

CLAIM_TABLES = TableSet("claims", (f"""
CREATE TABLE IF NOT EXISTS run_owners (
    run_id TEXT NOT NULL, owner TEXT NOT NULL, host TEXT NOT NULL, pid INTEGER NOT NULL,
    started_at REAL NOT NULL, heartbeat_at REAL NOT NULL, ended_at REAL,
    PRIMARY KEY (run_id, owner));
CREATE TABLE IF NOT EXISTS run_claims (
    run_id TEXT NOT NULL, {_KEY}, owner TEXT NOT NULL, done INTEGER NOT NULL,
    PRIMARY KEY (run_id, {_KEY_NAMES}));
CREATE TABLE IF NOT EXISTS run_attempts (
    run_id TEXT NOT NULL, {_KEY}, owner TEXT NOT NULL, status TEXT NOT NULL, error TEXT,
    wall_s REAL NOT NULL, finished_at REAL NOT NULL);
CREATE INDEX IF NOT EXISTS run_attempts_by_run ON run_attempts (run_id, finished_at);
""",))


def lease_from_environment() -> float:
    """``HARNESS_CLAIM_LEASE_S`` when set (a positive number), else `DEFAULT_LEASE_S`."""
    text = os.environ.get("HARNESS_CLAIM_LEASE_S", "")
    try:
        value = float(text) if text else DEFAULT_LEASE_S
    except ValueError:
        value = DEFAULT_LEASE_S
    return value if value > 0 else DEFAULT_LEASE_S


@dataclass(frozen=True)
class Taken:
    """What one `Claims.take` got: the keys now this owner's (in the order asked), the keys
    dropped for good (stored ``ok`` or played by a live owner since this one started), and
    whether some keys are held by a live owner (ask again later)."""

    keys: list[EpisodeKey]
    dropped: list[EpisodeKey]
    waiting: bool


def _row(key: EpisodeKey) -> tuple:
    return (key.policy_id, key.suite, key.task_id, key.eval_seed, key.sample)


class Claims:
    """This process's claims on the episodes of `run_id` in the store at `store.path`.

    Use as a context manager: entering registers the owner and starts its heartbeat; leaving
    marks it ended and releases its claims. `take` and `finish` run on the caller's thread
    through the store's connection."""

    def __init__(self, store: Store, run_id: str, *, lease_s: float | None = None):
        self.store, self.run_id = store, run_id
        self.lease_s = lease_from_environment() if lease_s is None else lease_s
        self.owner = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self.started_at = time.time()
        self._finished: list[tuple] = []
        self._attempts: list[tuple] = []
        self._overlap = False
        self._stop = threading.Event()
        self._heart: threading.Thread | None = None
        self._db = store.tables(CLAIM_TABLES)

    # -- lifecycle ---------------------------------------------------------------------------
    def __enter__(self) -> Claims:
        now = self.started_at
        in_transaction(self._db, lambda: self._db.execute(
            "INSERT INTO run_owners VALUES (?,?,?,?,?,?,NULL)",
            (self.run_id, self.owner, socket.gethostname(), os.getpid(), now, now)))
        self._heart = threading.Thread(target=self._beat, args=(self.store.path,),
                                       name="claims-heartbeat", daemon=True)
        self._heart.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._heart is not None:
            self._heart.join()

        def end() -> None:
            self._flush_attempts()
            self._db.execute("UPDATE run_owners SET ended_at=? WHERE run_id=? AND owner=?",
                             (time.time(), self.run_id, self.owner))
            # its own claims go, and those of owners gone (a SIGKILLed run's)
            live = sorted(self._live_owners(time.time()))
            keep = f" AND owner NOT IN ({','.join('?' * len(live))})" if live else ""
            self._db.execute(f"DELETE FROM run_claims WHERE run_id=?{keep}",
                             (self.run_id, *live))
        try:
            in_transaction(self._db, end)
        except sqlite3.Error as error:  # the run's result stands; its lease lapses on its own
            log.warning("could not release the claims of %s: %s", self.owner, error)

    def _beat(self, path: Path) -> None:
        """Renew this owner's heartbeat every third of the lease (its own connection)."""
        db = sqlite3.connect(path, timeout=BUSY_TIMEOUT_S, isolation_level=None)
        try:
            while not self._stop.wait(self.lease_s / 3):
                try:
                    db.execute("UPDATE run_owners SET heartbeat_at=? WHERE run_id=? AND owner=?",
                               (time.time(), self.run_id, self.owner))
                except sqlite3.Error as exc:  # busy past the timeout: the next beat tries
                    log.warning("heartbeat of %s failed: %s", self.owner, exc)
        finally:
            db.close()

    # -- claiming ----------------------------------------------------------------------------
    def take(self, keys: Sequence[EpisodeKey], limit: int) -> Taken:
        """Claim up to `limit` of `keys` (looked at in order) in one transaction."""
        return in_transaction(self._db, lambda: self._take(keys, limit))

    def _take(self, keys: Sequence[EpisodeKey], limit: int) -> Taken:
        db, now = self._db, time.time()
        others = db.execute(
            "SELECT 1 FROM run_owners WHERE run_id=? AND owner!=? AND (ended_at IS NULL OR "
            "ended_at>=?) LIMIT 1", (self.run_id, self.owner, self.started_at)).fetchall()
        self._overlap = self._overlap or bool(others)
        live = self._live_owners(now) if self._overlap else set()
        if self._finished and self._overlap:
            db.executemany(f"UPDATE run_claims SET done=1 WHERE run_id=? AND owner=? AND "
                           f"({_KEY_NAMES})=(?,?,?,?,?)",
                           [(self.run_id, self.owner, *row) for row in self._finished])
        self._finished = []
        self._flush_attempts()
        held = self._held(live) if self._overlap else {}
        stored = self._stored_ok if self._overlap else (lambda row: False)
        taken, dropped, waiting = [], [], False
        for key in keys:
            if len(taken) >= limit:
                break
            row = _row(key)
            if held.get(row) == 1 or stored(row):  # a claim's done flag may lag its record
                dropped.append(key)
            elif row in held:
                waiting = True
            else:
                taken.append(key)
        db.executemany("INSERT OR REPLACE INTO run_claims VALUES (?,?,?,?,?,?,?,0)",
                       [(self.run_id, *_row(key), self.owner) for key in taken])
        db.execute("UPDATE run_owners SET heartbeat_at=? WHERE run_id=? AND owner=?",
                   (now, self.run_id, self.owner))
        return Taken(taken, dropped, waiting)

    def _live_owners(self, now: float) -> set[str]:
        """The other owners of the run still playing: not ended, a heartbeat within the
        lease, and (on this host) a process that still exists."""
        rows = self._db.execute("SELECT owner, host, pid, heartbeat_at FROM run_owners WHERE "
                                "run_id=? AND owner!=? AND ended_at IS NULL",
                                (self.run_id, self.owner)).fetchall()
        return {owner for owner, host, pid, beat in rows
                if beat >= now - self.lease_s and _may_run(host, pid)}

    def _held(self, live: set[str]) -> dict[tuple, int]:
        """The keys live owners hold (``done`` flag by key)."""
        held: dict[tuple, int] = {}
        for *row, owner, done in self._db.execute(
                f"SELECT {_KEY_NAMES}, owner, done FROM run_claims WHERE run_id=? AND owner!=?",
                (self.run_id, self.owner)):
            if owner in live:
                held[tuple(row)] = done
        return held

    def _stored_ok(self, row: tuple) -> bool:
        """Whether the key is stored ``ok`` now. Asked of each key before it is claimed: a
        key handed to this owner was not ``ok`` when it read what is done, so ``ok`` now means
        another owner stored it since (whenever that owner finished playing it)."""
        return self._db.execute(
            f"SELECT 1 FROM episodes WHERE run_id=? AND ({_KEY_NAMES})=(?,?,?,?,?) AND "
            "status='ok'", (self.run_id, *row)).fetchone() is not None

    def finish(self, record: EpisodeRecord) -> None:
        """Note a played episode: its claim is marked done at the next `take`, and an attempt
        that did not end ``ok`` is logged."""
        row = _row(record.key)
        self._finished.append(row)
        if record.status != "ok":
            self._attempts.append((self.run_id, *row, self.owner, record.status, record.error,
                                   record.wall_s, time.time()))

    def _flush_attempts(self) -> None:
        if self._attempts:
            self._db.executemany("INSERT INTO run_attempts VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                                 self._attempts)
            self._attempts = []


def _may_run(host: str, pid: int) -> bool:
    """Whether an owner's process may still run: False only when it was on this host and
    its pid is gone (a SIGKILLed run here is taken over at once, not after its lease)."""
    if host != socket.gethostname():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process holds the pid
        return True
    return True


def load_attempts(store: Store, run_id: str | None = None) -> pd.DataFrame:
    """Every logged attempt that did not end ``ok`` (columns of ``run_attempts``), oldest
    first: the history a rerun's replacement leaves behind."""
    return store.table_frame(CLAIM_TABLES, "run_attempts", run_id=run_id,
                             order_by="finished_at")


def owners(store: Store, run_id: str) -> Iterable[tuple]:
    """``(owner, started_at, heartbeat_at, ended_at)`` of every invocation of `run_id`."""
    db = store.tables(CLAIM_TABLES)
    if db is None:
        return []
    return db.execute("SELECT owner, started_at, heartbeat_at, ended_at FROM run_owners "
                      "WHERE run_id=? ORDER BY started_at", (run_id,)).fetchall()
