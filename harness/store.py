"""The results store: one SQLite database (WAL mode) holding runs, episodes and trajectories.

Tables: ``runs`` (config, code version, package versions, host, time), ``episodes`` (one row
per `EpisodeKey` within a run), ``trajectories`` (every step of every episode: one row per
episode whose ``steps`` column is a JSON array of ``[t, observation, action, raw_output,
reward, terminated, truncated, info]``; one row per episode keeps the write path cheap) and
``turns`` (every model turn of an episode played by a model policy: one row per episode whose
``data`` column is the zlib-compressed JSON array of ``[t, messages, raw_output,
prompt_tokens, completion_tokens, latency_s, parsed]``, see `TurnRecord`; compressed as one
text, so what consecutive prompts repeat (instructions, history) is mostly stored once; no
row for scripted policies or runs with ``store_turns = false``). An episode, its steps and its turns are written in one
transaction, so an interruption at any point loses no committed episode and never stores half
of one; a resumed run skips the keys already stored.

`load_episodes` is the tidy view that stats, audit and report consume; `load_steps` and
`load_turns` read one episode back.

Other subsystems keep their tables with their own code, behind the same connection: each
declares a `TableSet` (its DDL as numbered migrations) and reaches it with `Store.tables`,
which creates or upgrades the set on first use (`harness.audit.tables`,
`harness.train.metrics_table`, `harness.signal_eval.tables`). ``meta`` records the core's
``schema_version`` and each set's ``tables:NAME`` version; a writable store upgrades an older
database in one transaction when it opens it (version 2, where every table was the core's,
becomes 3 by recording its sets at version 1; 4 adds indices on the episode columns the
viewer filters by; 5 adds the ``turns`` table). ``Store(path, readonly=True)`` never writes:
`load_episodes`, the leaderboard, export and report read through it, also on read-only
mounts. SQLite's errors about the file itself (a corrupt page, a full disk) surface as one-line
`HarnessError`s naming the database.
"""

from __future__ import annotations

import functools
import json
import os
import sqlite3
import time
import zlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import orjson
import pandas as pd

from harness.core import ConfigError, HarnessError
from harness.records import EpisodeKey, EpisodeRecord, StepRecord, TurnRecord
from harness.sqlite_batch import BUSY_TIMEOUT_S, in_transaction, write_episode_rows

SCHEMA_VERSION = 6
"""Version of the core tables (``meta``, ``runs``, ``episodes``, ``trajectories``,
``turns``), stored as ``meta.schema_version``. Each `TableSet` of a subsystem has its own
version (``meta.tables:NAME``)."""
READABLE_VERSIONS = (2, 3, 4, 5, 6)
"""Core versions a read-only store can read without upgrading (same episode tables; version 4
only adds indices, version 5 the ``turns`` table, which an older database reads as empty,
version 6 the outcome columns, which an older database reads as undeclared)."""
TURNS_COMPRESSION_LEVEL = 6
"""zlib level of the ``turns`` table's ``data`` column (zlib's default)."""
DEFAULT_DB = Path("results") / "harness.db"

_EPISODE_INDICES = """
CREATE INDEX IF NOT EXISTS episodes_by_policy ON episodes (policy_id, suite, task_type);
CREATE INDEX IF NOT EXISTS episodes_by_suite ON episodes (suite, task_type);
CREATE INDEX IF NOT EXISTS episodes_by_status ON episodes (status, success);
"""
"""Indices on the columns `harness view` filters episodes by (schema version 4); the primary
key already serves filters by run."""

_TURNS_TABLE = """
CREATE TABLE IF NOT EXISTS turns (
    run_id TEXT NOT NULL, policy_id TEXT NOT NULL, suite TEXT NOT NULL, task_id TEXT NOT NULL,
    eval_seed INTEGER NOT NULL, sample INTEGER NOT NULL, n_turns INTEGER NOT NULL,
    data BLOB NOT NULL,
    PRIMARY KEY (run_id, policy_id, suite, task_id, eval_seed, sample));
"""
"""The model turns of each episode (schema version 5): ``data`` is `encode_turns`'s bytes."""

OUTCOME_COLUMNS = ("answerable", "abstained", "correct")
"""The episode's outcome class (schema version 6; `harness.records.EpisodeRecord`): NULL where
the task declares no answerability."""
_OUTCOME_MIGRATION = "".join(f"ALTER TABLE episodes ADD COLUMN {c} INTEGER;\n"
                             for c in OUTCOME_COLUMNS)

_CORE_SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    run_id TEXT PRIMARY KEY, config TEXT NOT NULL, code_version TEXT, packages TEXT,
    host TEXT, created_at REAL NOT NULL);
CREATE TABLE IF NOT EXISTS episodes (
    run_id TEXT NOT NULL REFERENCES runs(run_id), policy_id TEXT NOT NULL, suite TEXT NOT NULL,
    task_id TEXT NOT NULL, eval_seed INTEGER NOT NULL, sample INTEGER NOT NULL,
    task_type TEXT NOT NULL, split TEXT NOT NULL, train_seed INTEGER, status TEXT NOT NULL,
    success INTEGER NOT NULL, score REAL, total_reward REAL NOT NULL, n_steps INTEGER NOT NULL,
    n_invalid INTEGER NOT NULL, terminated INTEGER NOT NULL, truncated INTEGER NOT NULL,
    prompt_tokens INTEGER NOT NULL, completion_tokens INTEGER NOT NULL, retries INTEGER NOT NULL,
    model_latency_s REAL NOT NULL, wall_s REAL NOT NULL,
    error TEXT, final_observation TEXT, policy_provenance TEXT, finished_at REAL NOT NULL,
    answerable INTEGER, abstained INTEGER, correct INTEGER,
    PRIMARY KEY (run_id, policy_id, suite, task_id, eval_seed, sample));
CREATE TABLE IF NOT EXISTS trajectories (
    run_id TEXT NOT NULL, policy_id TEXT NOT NULL, suite TEXT NOT NULL, task_id TEXT NOT NULL,
    eval_seed INTEGER NOT NULL, sample INTEGER NOT NULL, n_steps INTEGER NOT NULL,
    steps TEXT NOT NULL,
    PRIMARY KEY (run_id, policy_id, suite, task_id, eval_seed, sample));
""" + _EPISODE_INDICES + _TURNS_TABLE

EPISODE_COLUMNS = [
    "run_id", "policy", "suite", "task_id", "task_type", "split", "train_seed", "eval_seed",
    "sample", "status", "success", "score", "total_reward", "n_steps", "n_invalid",
    "terminated", "truncated", "prompt_tokens", "completion_tokens", "retries",
    "model_latency_s", "wall_s", "error", "answerable", "answered", "abstained", "correct",
]
"""Columns of `load_episodes`, in order. ``answerable``, ``answered``, ``abstained`` and
``correct`` are nullable booleans (<NA> where the task declares no answerability;
``answered`` is not ``abstained``)."""



@dataclass(frozen=True)
class TableSet:
    """The tables of one subsystem (audits, training metrics, signal results, ...), created
    and upgraded on first use through the store's one connection.

    ``migrations[i]`` is the SQL script that takes the set from version ``i`` to ``i + 1``
    (``migrations[0]`` creates it); the current version is ``len(migrations)``. A script may
    only add: a database upgraded by a newer harness stays readable by its own data.
    """

    name: str
    migrations: tuple[str, ...]

    @property
    def version(self) -> int:
        return len(self.migrations)

    @property
    def meta_key(self) -> str:
        return f"tables:{self.name}"


_LEGACY_SETS = ("audits", "train_metrics", "signals")
"""Table sets that schema version 2 created with the core tables (all at their version 1)."""

_CORE_MIGRATIONS: dict[int, str] = {
    3: "".join(f"INSERT OR IGNORE INTO meta VALUES ('tables:{name}', '1');\n"
               for name in _LEGACY_SETS),
    4: _EPISODE_INDICES,
    5: _TURNS_TABLE,
    6: _OUTCOME_MIGRATION,
}
"""``version -> script`` taking the core from ``version - 1`` to ``version``."""


def reported(method):
    """Decorates a function whose first argument is a `Store` (a method, or a subsystem's
    table function): turn SQLite's errors about the file itself (corrupt page, disk full, I/O error) into
    one-line `HarnessError`s naming the database; constraint violations keep propagating."""

    @functools.wraps(method)
    def wrapper(store: Store, *args: Any, **kwargs: Any) -> Any:
        try:
            return method(store, *args, **kwargs)
        except sqlite3.IntegrityError:
            raise
        except sqlite3.DatabaseError as exc:
            raise HarnessError(f"results database {store.path}: {exc}") from None
        except pd.errors.DatabaseError as exc:  # pandas wraps SQLite's error
            raise HarnessError(f"results database {store.path}: {exc.__cause__ or exc}") \
                from None

    return wrapper


class Store:
    """A connection to the results database. Use as a context manager or call `close()`.

    ``readonly=True`` opens the file without writing anything (``mode=ro``; ``immutable=1``
    when its folder or the file cannot be written, e.g. a read-only mount, where SQLite could
    not even share a lock; episodes left in a ``-wal`` file beside it are then not seen):
    reading commands (leaderboard, export, report) use it. A writable store upgrades an older database in one
    transaction when it opens it.
    """

    def __init__(self, path: str | os.PathLike = DEFAULT_DB, *, readonly: bool = False,
                 check_same_thread: bool = True):
        self.path, self.readonly = Path(path), readonly
        self._ready: set[str] = set()
        self._legacy = False
        try:
            self._db = self._connect(check_same_thread)
        except (OSError, sqlite3.Error) as exc:
            raise HarnessError(f"cannot open results database {self.path}: {exc}") from None

    def _connect(self, check_same_thread: bool) -> sqlite3.Connection:
        if self.readonly:
            if not self.path.is_file():
                raise HarnessError(f"no results database at {self.path}; run `harness run` "
                                   "first")
            writable = os.access(self.path, os.W_OK) and os.access(self.path.parent, os.W_OK)
            mode = "mode=ro" if writable else "immutable=1"
            db = sqlite3.connect(f"{self.path.resolve().as_uri()}?{mode}", uri=True,
                                 isolation_level=None, check_same_thread=check_same_thread)
            db.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_S * 1000:.0f}")
            self._check_readable(db)
            return db
        self.path.parent.mkdir(parents=True, exist_ok=True)
        db = sqlite3.connect(self.path, isolation_level=None,
                             check_same_thread=check_same_thread)
        db.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_S * 1000:.0f}")  # first: others wait
        _enable_wal(db)
        db.execute("PRAGMA synchronous=NORMAL")
        in_transaction(db, lambda: self._upgrade(db))
        return db

    def _version(self, db: sqlite3.Connection) -> int | None:
        """The core schema version, or None for a database without tables."""
        has_meta = db.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND "
                              "name='meta'").fetchone()
        if has_meta is None:
            return None
        row = db.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
        return int(row[0]) if row is not None else None

    def _check_readable(self, db: sqlite3.Connection) -> None:
        version = self._version(db)
        self._legacy = version == 2  # its table sets exist, at version 1, unrecorded
        if version is None or version not in READABLE_VERSIONS:
            raise HarnessError(f"{self.path} has schema version {version}; this harness reads "
                               f"versions {', '.join(map(str, READABLE_VERSIONS))}")

    def _upgrade(self, db: sqlite3.Connection) -> None:
        """Create the core tables or upgrade them to `SCHEMA_VERSION` (inside a transaction)."""
        version = self._version(db)
        db.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        if version is None:
            for statement in _statements(_CORE_SCHEMA):
                db.execute(statement)
        elif version > SCHEMA_VERSION or version < min(_CORE_MIGRATIONS) - 1:
            raise HarnessError(f"{self.path} has schema version {version}; this harness reads "
                               f"version {SCHEMA_VERSION}")
        else:
            for target in range(version + 1, SCHEMA_VERSION + 1):
                for statement in _statements(_CORE_MIGRATIONS[target]):
                    if not _adds_existing_column(db, statement):
                        db.execute(statement)
        db.execute("INSERT OR REPLACE INTO meta VALUES ('schema_version', ?)",
                   (str(SCHEMA_VERSION),))

    def tables(self, tables: TableSet) -> sqlite3.Connection | None:
        """The connection, with `tables` created or upgraded to their version; None when the
        store is read-only and the set was never created (there is nothing to read)."""
        if tables.name in self._ready:
            return self._db
        db = self._db
        row = db.execute("SELECT value FROM meta WHERE key=?", (tables.meta_key,)).fetchone()
        version = int(row[0]) if row is not None else 0
        if row is None and self._legacy and tables.name in _LEGACY_SETS:
            version = 1
        if version > tables.version:
            raise HarnessError(f"{self.path} has version {version} of the {tables.name} tables; "
                               f"this harness reads version {tables.version}")
        if version < tables.version:
            if self.readonly:
                if version == 0:
                    return None
                raise HarnessError(f"{self.path} has version {version} of the {tables.name} "
                                   "tables; open it once writable to upgrade it")

            def upgrade() -> None:
                row = db.execute("SELECT value FROM meta WHERE key=?",
                                 (tables.meta_key,)).fetchone()
                for script in tables.migrations[int(row[0]) if row else 0:]:
                    for statement in _statements(script):
                        db.execute(statement)
                db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)",
                           (tables.meta_key, str(tables.version)))

            in_transaction(db, upgrade)
        self._ready.add(tables.name)
        return db

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # -- runs -----------------------------------------------------------------------------------
    @reported
    def begin_run(self, run_id: str, config: dict[str, Any], provenance: dict[str, Any]) -> bool:
        """Record a run; returns False if `run_id` already exists with the same config (a
        resume). A different config under the same id is a `ConfigError`. One transaction:
        two processes starting the same run at once both see one row."""
        config_json = json.dumps(config, sort_keys=True)
        db = self._db
        # a run adds to the file: refuse one SQLite reports damaged rather than write into
        # it (quick_check reads every page once; reads elsewhere fail on the page they touch)
        size = self.path.stat().st_size if self.path.exists() else 0
        problem = db.execute("PRAGMA quick_check(1)").fetchone()[0] \
            if size <= QUICK_CHECK_MAX_BYTES else "ok"
        if problem != "ok":
            detail = " ".join(problem.replace("*", "").split())
            raise sqlite3.DatabaseError(f"database disk image is malformed ({detail})")

        def begin() -> bool:
            row = db.execute("SELECT config FROM runs WHERE run_id=?", (run_id,)).fetchone()
            if row is not None:
                if row[0] != config_json:
                    raise ConfigError(f"run id {run_id!r} already exists in {self.path} with a "
                                      "different config; choose another --run-id")
                return False
            db.execute("INSERT INTO runs VALUES (?,?,?,?,?,?)",
                       (run_id, config_json, provenance.get("code_version"),
                        json.dumps(provenance.get("packages", {}), sort_keys=True),
                        provenance.get("host"), time.time()))
            return True

        return in_transaction(db, begin)

    @reported
    def runs(self) -> pd.DataFrame:
        return pd.read_sql_query("SELECT * FROM runs ORDER BY created_at", self._db)

    @reported
    def run_config(self, run_id: str) -> dict[str, Any]:
        row = self._db.execute("SELECT config FROM runs WHERE run_id=?", (run_id,)).fetchone()
        if row is None:
            raise HarnessError(f"no run {run_id!r} in {self.path}")
        return json.loads(row[0])

    # -- episodes -------------------------------------------------------------------------------
    @reported
    def stored_keys(self, run_id: str, *, statuses: Sequence[str] | None = None) -> set[EpisodeKey]:
        """Keys already stored for `run_id` (optionally only those with a given status)."""
        sql = "SELECT policy_id, suite, task_id, eval_seed, sample FROM episodes WHERE run_id=?"
        params: list[Any] = [run_id]
        if statuses:
            sql += f" AND status IN ({','.join('?' * len(statuses))})"
            params += list(statuses)
        return {EpisodeKey(*row) for row in self._db.execute(sql, params)}

    def write_episode(self, run_id: str, episode: EpisodeRecord,
                      steps: Iterable[StepRecord] = (), *, replace: bool = False) -> None:
        """Store one episode and its steps atomically. `replace` first removes an earlier
        attempt under the same key (used to retry errored episodes)."""
        self.write_episodes([(run_id, episode, steps)], replace=replace)

    def write_episodes(self, batch: Sequence[tuple[str, EpisodeRecord, Iterable[StepRecord]]],
                       *, replace: bool = False) -> None:
        """Store several ``(run_id, episode, steps)`` in one transaction (a group commit)."""
        self.write_rows([episode_rows(*item) for item in batch], replace=replace)

    @reported
    def write_rows(self, rows: Sequence[EpisodeRows], *, replace: bool = False) -> None:
        """Store episodes already turned into rows (`episode_rows`) in one transaction."""
        write_episode_rows(self._db, [row.episode for row in rows],
                           [row.trajectory for row in rows], replace=replace,
                           turns=[row.turns for row in rows if row.turns is not None])

    @reported
    def load_episodes(self, *, run_id: str | Sequence[str] | None = None,
                      suite: str | Sequence[str] | None = None,
                      policy: str | Sequence[str] | None = None,
                      statuses: Sequence[str] | None = None) -> pd.DataFrame:
        """The tidy episode table: one row per episode, columns `EPISODE_COLUMNS`.

        `success` is a bool (False for episodes that errored or timed out); `train_seed` is a
        nullable integer (<NA> for policies not trained here).
        """
        clauses, params = [], []
        for column, value in (("run_id", run_id), ("suite", suite), ("policy_id", policy),
                              ("status", statuses)):
            if value is None:
                continue
            values = [value] if isinstance(value, str) else list(value)
            clauses.append(f"{column} IN ({','.join('?' * len(values))})")
            params += values
        where = f" WHERE {' AND '.join(clauses)}" if clauses else ""
        select = ", ".join(self._episode_select(c) for c in EPISODE_COLUMNS)
        frame = pd.read_sql_query(
            f"SELECT {select} FROM episodes{where} ORDER BY run_id, policy_id, suite, task_id, "
            "eval_seed, sample", self._db, params=params)
        return _typed(frame)

    def _episode_select(self, column: str) -> str:
        """The SELECT term of one `EPISODE_COLUMNS` column (``answered`` is derived from
        ``abstained`` afterwards; a database read as it is at a version before 6 has no
        outcome columns: NULL)."""
        if column == "policy":
            return "policy_id AS policy"
        if column == "answered" or (column in OUTCOME_COLUMNS and not self._has_outcomes()):
            return f"NULL AS {column}"
        return column

    def _has_outcomes(self) -> bool:
        columns = {row[1] for row in self._db.execute("PRAGMA table_info(episodes)")}
        return set(OUTCOME_COLUMNS) <= columns

    @reported
    def load_steps(self, run_id: str, key: EpisodeKey) -> list[StepRecord]:
        """The trajectory of one episode, in step order."""
        row = self._db.execute(
            "SELECT steps FROM trajectories WHERE run_id=? AND policy_id=? AND suite=? AND "
            "task_id=? AND eval_seed=? AND sample=?", (run_id, *key)).fetchone()
        if row is None:
            raise HarnessError(f"no trajectory for {key} in run {run_id!r}")
        return [StepRecord(*step) for step in orjson.loads(row[0])]

    @reported
    def load_turns(self, run_id: str, key: EpisodeKey) -> list[TurnRecord]:
        """The model turns of one episode, in order: the messages each sent and the raw reply,
        with token counts and latency. Empty for an episode without model turns (a scripted
        policy) or whose run skipped them (``store_turns = false``); a key the run did not
        store is a `HarnessError`."""
        if self._has_turns_table():
            row = self._db.execute(
                "SELECT data FROM turns WHERE run_id=? AND policy_id=? AND suite=? AND "
                "task_id=? AND eval_seed=? AND sample=?", (run_id, *key)).fetchone()
            if row is not None:
                return decode_turns(row[0])
        stored = self._db.execute(
            "SELECT 1 FROM episodes WHERE run_id=? AND policy_id=? AND suite=? AND task_id=? "
            "AND eval_seed=? AND sample=?", (run_id, *key)).fetchone()
        if stored is None:
            raise HarnessError(f"no episode {tuple(key)} in run {run_id!r} of {self.path}")
        return []

    def _has_turns_table(self) -> bool:
        """False for a database read as it is at a version before 5 (read-only)."""
        return self._db.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND "
                                "name='turns'").fetchone() is not None

    @reported
    def episode_notes(self, key: str, *, run_id: str | None = None,
                      suite: str | None = None) -> pd.DataFrame:
        """Distinct values of ``info[key]`` on the last step of each episode, with their
        episode counts: columns ``suite, policy, note, n`` (no rows when no episode has one)."""
        if not key.replace("_", "").isalnum():
            raise ValueError(f"info key {key!r}: letters, digits and underscores only")
        clauses, params = ["note IS NOT NULL"], [f'$[#-1][7]."{key}"']
        for column, value in (("run_id", run_id), ("suite", suite)):
            if value is not None:
                clauses.append(f"{column} = ?")
                params.append(value)
        return pd.read_sql_query(
            "SELECT suite, policy, note, COUNT(*) AS n FROM (SELECT run_id, suite, policy_id AS "
            "policy, json_extract(steps, ?) AS note FROM trajectories) WHERE "
            + " AND ".join(clauses) + " GROUP BY suite, policy, note ORDER BY suite, policy, note",
            self._db, params=params)

    @reported
    def step_info(self, key: str, *, run_id: str | Sequence[str],
                  policy: str | Sequence[str] | None = None) -> pd.DataFrame:
        """``info[key]`` of every stored step of the runs `run_id` (and policies `policy`)
        that has one: columns ``run_id, policy, suite, task_id, eval_seed, sample, t, value``
        (``value`` decoded from JSON), one row per step, in episode and step order (e.g. the
        harness layers' per-step log, ``key="layers"``)."""
        if not key.replace("_", "").isalnum():
            raise ValueError(f"info key {key!r}: letters, digits and underscores only")
        clauses, params = [], [f'$[7]."{key}"']
        for column, value in (("run_id", run_id), ("policy_id", policy)):
            if value is not None:
                values = [value] if isinstance(value, str) else list(value)
                clauses.append(f"t.{column} IN ({','.join('?' * len(values))})")
                params += values
        rows = self._db.execute(
            "SELECT t.run_id, t.policy_id, t.suite, t.task_id, t.eval_seed, t.sample, "
            "CAST(s.key AS INTEGER), s.value -> ? AS v FROM trajectories t, "
            f"json_each(t.steps) s WHERE {' AND '.join(clauses)} AND v IS NOT NULL "
            "AND v != 'null' ORDER BY t.run_id, t.policy_id, t.suite, t.task_id, t.eval_seed, "
            "t.sample, CAST(s.key AS INTEGER)", params).fetchall()
        columns = ["run_id", "policy", "suite", "task_id", "eval_seed", "sample", "t", "value"]
        return pd.DataFrame([(*row[:7], orjson.loads(row[7])) for row in rows],
                            columns=columns)

    @reported
    def query(self, sql: str, params: Sequence[Any] = ()) -> list[tuple]:
        """The rows of one read-only statement (``SELECT`` or ``WITH``) over the store's
        tables: the viewer's filtered, paginated queries (`harness.view.queries`). Prefer a
        method above where one fits."""
        if not sql.lstrip().upper().startswith(("SELECT", "WITH")):
            raise ValueError("Store.query runs SELECT statements only")
        return self._db.execute(sql, params).fetchall()

    @reported
    def table_frame(self, tables: TableSet, table: str, *, run_id: str | None = None,
                    order_by: str) -> pd.DataFrame:
        """Every row of `table` (one of `tables`), of `run_id` when given, ordered by the
        column `order_by`; an empty frame when the set was never created."""
        db = self.tables(tables)
        if db is None:
            return pd.DataFrame()
        sql, params = f"SELECT * FROM {table}", []
        if run_id is not None:
            sql, params = sql + " WHERE run_id=?", [run_id]
        return pd.read_sql_query(f"{sql} ORDER BY {order_by}", db, params=params)

    @reported
    def count_steps(self, run_id: str) -> int:
        """Total steps stored for `run_id`."""
        return self._db.execute("SELECT COALESCE(SUM(n_steps), 0) FROM trajectories WHERE "
                                "run_id=?", (run_id,)).fetchone()[0]


def _enable_wal(db: sqlite3.Connection, *, wait_s: float = BUSY_TIMEOUT_S) -> None:
    """Switch to WAL mode. Switching needs an exclusive lock, and SQLite answers "database
    is locked" at once, without its busy handler, when another connection holds one (several
    processes opening one new database): retried here until `wait_s` has passed."""
    deadline, pause = time.monotonic() + wait_s, 0.001
    while True:
        try:
            db.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if exc.sqlite_errorcode & 0xFF not in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED):
                raise
            if time.monotonic() + pause > deadline:
                raise
        time.sleep(pause)
        pause = min(2 * pause, 0.05)


def _adds_existing_column(db: sqlite3.Connection, statement: str) -> bool:
    """True for an ``ALTER TABLE t ADD COLUMN c ...`` whose column is already there (SQLite has
    no ``IF NOT EXISTS`` for columns; a database marked older than its tables re-runs it)."""
    words = statement.split()
    if [w.upper() for w in words[:1] + words[3:5]] != ["ALTER", "ADD", "COLUMN"]:
        return False
    return any(row[1] == words[5] for row in db.execute(f"PRAGMA table_info({words[2]})"))


def _statements(script: str) -> list[str]:
    """The statements of an SQL script without triggers or string literals holding ';'."""
    text = "\n".join(line for line in script.splitlines() if not line.lstrip().startswith("--"))
    return [statement.strip() for statement in text.split(";") if statement.strip()]


def encode_json(value: Any) -> str:
    """JSON text of a value (orjson, numpy arrays and scalars included; anything else by its
    repr): the step table is the store's hot path."""
    return orjson.dumps(value, default=repr, option=orjson.OPT_SERIALIZE_NUMPY).decode()


def encode_turns(turns: Sequence[TurnRecord]) -> bytes:
    """The ``turns.data`` bytes of an episode's turns: their JSON array of ``[t, messages,
    raw_output, prompt_tokens, completion_tokens, latency_s, parsed]``, zlib-compressed."""
    rows = [(turn.t, turn.messages, turn.raw_output, turn.prompt_tokens,
             turn.completion_tokens, turn.latency_s, turn.parsed) for turn in turns]
    return zlib.compress(orjson.dumps(rows, default=repr, option=orjson.OPT_SERIALIZE_NUMPY),
                         TURNS_COMPRESSION_LEVEL)


def decode_turns(data: bytes) -> list[TurnRecord]:
    """The turns `encode_turns` stored in `data`."""
    return [TurnRecord(*row) for row in orjson.loads(zlib.decompress(data))]


class EpisodeRows(NamedTuple):
    """One episode as the store's rows: its ``episodes`` row, its ``trajectories`` row (the
    steps as one JSON text) and its ``turns`` row (None: no model turn, or not stored)."""

    episode: tuple
    trajectory: tuple
    turns: tuple | None = None


def episode_rows(run_id: str, episode: EpisodeRecord, steps: Iterable[StepRecord], *,
                 turns: bool = True) -> EpisodeRows:
    """The rows `Store.write_rows` stores for one episode; ``turns=False`` leaves its model
    turns out (``store_turns = false``)."""
    key = (run_id, *episode.key)
    steps = list(steps)
    turn_row = (*key, len(episode.turns), encode_turns(episode.turns)) \
        if turns and episode.turns else None
    return EpisodeRows(_episode_row(key, episode),
                       (*key, len(steps), encode_json([tuple(s) for s in steps])), turn_row)


def _episode_row(key: tuple, episode: EpisodeRecord) -> tuple:
    return (*key, episode.task_type, episode.split, episode.train_seed, episode.status,
            int(episode.success), episode.score, episode.total_reward, episode.n_steps,
            episode.n_invalid, int(episode.terminated), int(episode.truncated),
            episode.prompt_tokens, episode.completion_tokens, episode.retries,
            episode.model_latency_s, episode.wall_s, episode.error,
            episode.final_observation, encode_json(episode.policy_provenance),
            time.time(), *(None if v is None else int(v) for v in (
                episode.answerable, episode.abstained, episode.correct)))


QUICK_CHECK_MAX_BYTES = 2 << 30
"""`begin_run` checks every page of a database up to this size (about a second per GiB)."""

def _typed(frame: pd.DataFrame) -> pd.DataFrame:
    for column in ("success", "terminated", "truncated"):
        frame[column] = frame[column].astype(bool)
    for column in ("eval_seed", "sample", "n_steps", "n_invalid", "prompt_tokens",
                   "completion_tokens", "retries"):
        frame[column] = frame[column].astype("int64")
    frame["train_seed"] = frame["train_seed"].astype("Int64")
    for column in ("score", "total_reward", "model_latency_s", "wall_s"):
        frame[column] = frame[column].astype(float)
    frame["error"] = frame["error"].astype(object).where(frame["error"].notna(), None)
    for column in ("answerable", "abstained", "correct"):
        frame[column] = frame[column].astype("Float64").astype("boolean")
    frame["answered"] = ~frame["abstained"]
    return frame


def load_episodes(db: str | os.PathLike = DEFAULT_DB, **filters: Any) -> pd.DataFrame:
    """Open `db` read-only and return `Store.load_episodes(**filters)`."""
    with Store(db, readonly=True) as store:
        return store.load_episodes(**filters)


def load_turns(db: str | os.PathLike, run_id: str, key: EpisodeKey | Sequence[Any]
               ) -> list[TurnRecord]:
    """Open `db` read-only and return `Store.load_turns(run_id, key)`; `key` is an
    `EpisodeKey` or its fields ``(policy_id, suite, task_id, eval_seed, sample)``."""
    with Store(db, readonly=True) as store:
        return store.load_turns(run_id, EpisodeKey(*key))


def export_episodes(frame: pd.DataFrame, path: str | os.PathLike) -> Path:
    """Write the tidy table to ``.csv`` or ``.parquet`` (chosen by the suffix)."""
    path = check_output_file(path, (".csv", ".parquet"))
    try:
        if path.suffix == ".csv":
            frame.to_csv(path, index=False)
        else:
            frame.to_parquet(path, index=False)
    except OSError as exc:
        raise HarnessError(f"cannot write {path}: {exc.strerror or exc}") from None
    return path


def check_output_dir(path: str | os.PathLike) -> Path:
    """`path` as a `Path`, created if missing, once it is a folder this process can write."""
    path = Path(path)
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(f"cannot write to folder {path}: {exc.strerror or exc}") from None
    if not os.access(path, os.W_OK):
        raise ConfigError(f"cannot write to folder {path}: not writable")
    return path


def check_output_file(path: str | os.PathLike, suffixes: Sequence[str]) -> Path:
    """`path` as a `Path` if a file with one of `suffixes` can be written there: its folder
    exists and it is not itself a folder (checked before any work is done)."""
    path = Path(path)
    if path.suffix not in suffixes:
        raise ConfigError(f"cannot write {path.name}: use a file name ending in "
                          f"{' or '.join(suffixes)}")
    if path.is_dir():
        raise ConfigError(f"cannot write {path}: it is a directory")
    if not path.parent.is_dir():
        raise ConfigError(f"cannot write {path}: folder {path.parent} does not exist")
    if not os.access(path.parent, os.W_OK):
        raise ConfigError(f"cannot write {path}: folder {path.parent} is not writable")
    return path
