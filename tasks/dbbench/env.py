"""One DB-Bench task on the suite's MariaDB server, behind the text Env contract.

`reset(seed)` creates a private database holding the task's table(s) (every column ``TEXT``,
as upstream) and shows the question as upstream's user prompt states it. Each action is one
JSON object, upstream's two tools:

- ``{"name": "execute_sql", "arguments": {"query": "..."}}``: the statement runs and
  commits; the observation is the rows as Python's ``str`` of a list of tuples (``[]`` with
  no rows), or the server's error text, cut at 800 characters with ``[TRUNCATED]``;
- ``{"name": "commit_final_answer", "arguments": {"answers": [...]}}``: the episode ends and
  is graded (`grading`).

Anything else is ``invalid`` (upstream answers it and the round still counts); 15 rounds
truncate with reward 0.

The agent's SQL runs on a connection of the episode's own MariaDB account
(`MariaDBServer.create_account`: every right on the episode's database, none elsewhere), never
on the harness's. The harness creates the database and its tables, and computes the table hash
of INSERT/UPDATE tasks, on its own connection, after closing the agent's (so no lock, temporary
table or session variable of the agent's session is in the way). The database and the account
are dropped on the next reset, on `close`, or when the env is collected. If the server died,
the episode fails with a clear error and the suite restarts the server for the next episode.

Capabilities: `oracle_action()` (the gold SQL first, then the gold answer: the label for
SELECT tasks, which upstream's checker compares with, nothing for INSERT/UPDATE tasks; the
files' SELECT queries do not all run, so they are shown, not trusted).
"""

from __future__ import annotations

import itertools
import json
import os
import weakref
from collections.abc import Callable
from typing import Any

from harness.core import HarnessError
from tasks.base import StepResult
from tasks.dbbench.data import DBTask
from tasks.dbbench.grading import (MODIFYING, compare_results, hash_value, init_sql,
                                   table_hash_sql)
from tasks.dbbench.server import Account, DBBenchServerError, MariaDBServer, connector

__all__ = ["DBBenchEnv", "MAX_ROUNDS", "execute_action", "commit_action", "user_prompt"]

MAX_ROUNDS = 15
"""``max_round`` of AgentBench's dbbench config."""
TRUNCATE_AT = 800
_COUNTER = itertools.count()


def execute_action(query: str) -> str:
    return json.dumps({"name": "execute_sql", "arguments": {"query": query}})


def commit_action(answers: list[str]) -> str:
    return json.dumps({"name": "commit_final_answer", "arguments": {"answers": answers}})


def user_prompt(task: DBTask) -> str:
    """The question as upstream's first user message states it."""
    text = ""
    if task.evidence:
        text += "Evidence about the question: " + task.evidence + "\n"
    if task.add_description:
        text += "Additional table information about the question: " + task.add_description + "\n"
    return text + "Question: " + task.description + "\n"


def run_sql(connection: Any, sql: str, data: tuple = ()) -> str:
    """Run one statement and commit; the result text as upstream's ``execute`` gives it."""
    mysql = connector()
    try:
        cursor = connection.cursor()
        try:
            cursor.execute(sql, data)
            rows = list(cursor.fetchall()) if cursor.with_rows else []
            text = str(rows)
        finally:
            cursor.close()
        connection.commit()
    except mysql.errors.OperationalError as exc:
        if not connection.is_connected():
            raise DBBenchServerError(f"the MariaDB server connection was lost ({exc})") from None
        text = str(exc)
        connection.rollback()
    except mysql.Error as exc:
        text = str(exc)
        try:
            connection.rollback()
        except mysql.Error:
            pass
    return text[:TRUNCATE_AT] + "[TRUNCATED]" if len(text) > TRUNCATE_AT else text


def _drop(server: MariaDBServer, database: str, account: Account | None = None) -> None:
    if not server.running():
        return
    try:
        if account is not None:
            server.drop_account(account)
        server.rollback_detached_xa()  # their locks would block the DROP (LOCK_WAIT_S)
        connection = server.connect()
        cursor = connection.cursor()
        cursor.execute(f"DROP DATABASE IF EXISTS `{database}`")
        connection.close()
    except Exception:  # noqa: BLE001 - cleanup must never raise (finalizer)
        pass


class DBBenchEnv:
    """One DB-Bench task (module docstring)."""

    max_steps = MAX_ROUNDS
    multiline_actions = True

    def __init__(self, task: DBTask, server: Callable[[], MariaDBServer]):
        self.task = task
        self._server_factory = server
        self._server: MariaDBServer | None = None
        self._connection: Any = None
        self._database: str | None = None
        self._finalizer: Any = None
        self._steps, self._done = 0, False

    # -- lifecycle ---------------------------------------------------------------------------
    def _close_connection(self) -> None:
        if self._connection is not None:
            try:
                self._connection.close()
            except Exception:  # noqa: BLE001
                pass
            self._connection = None

    def close(self) -> None:
        self._close_connection()
        if self._finalizer is not None:
            self._finalizer()
            self._finalizer = None
        self._database = None

    def _create(self, server: MariaDBServer, name: str) -> Any:
        """The task's database `name` with its tables; the harness's connection to it."""
        connection = server.connect()
        cursor = connection.cursor()
        cursor.execute(f"CREATE DATABASE `{name}`")
        cursor.execute(f"USE `{name}`")
        for statement, data in init_sql(self.task.tables):
            cursor.execute(statement, data)
        connection.commit()
        cursor.close()
        return connection

    def reset(self, *, seed: int) -> tuple[str, dict[str, Any]]:
        self.close()
        self._server = server = self._server_factory()
        name = f"dbbench_{os.getpid()}_{next(_COUNTER)}"
        self._create(server, name).close()
        try:
            account = server.create_account(name)
        except BaseException:
            _drop(server, name)
            raise
        self._finalizer = weakref.finalize(self, _drop, server, name, account)
        self._connection = server.connect(name, account)  # what the agent's SQL runs on
        self._database = name
        self._steps, self._done = 0, False
        return user_prompt(self.task), self._info(False)

    def _info(self, invalid: bool) -> dict[str, Any]:
        return {"won": False, "score": 0.0, "invalid": invalid, "steps": self._steps,
                "task_type": self.task.task_type}

    # -- steps -------------------------------------------------------------------------------
    def step(self, action: str) -> StepResult:
        if self._connection is None or self._done:
            raise HarnessError("step() called before reset() or after the episode ended")
        self._steps += 1
        call = _parse(action)
        if call is None:
            return self._finish("Invalid function call. Please call a tool instead.", True,
                                False, {})
        name, arguments = call
        values = list(arguments.values())
        if name == "execute_sql":
            sql = values[0] if values else ""
            text = run_sql(self._connection, str(sql)) or "No response from database."
            return self._finish(text, False, False, {})
        answer = values[0] if values else []
        won = self._grade(answer)
        return self._finish("Answer committed: " + ("correct." if won else "incorrect."),
                            False, True, {"won": won, "score": float(won)})

    def _finish(self, observation: str, invalid: bool, terminated: bool,
                extra: dict[str, Any]) -> StepResult:
        truncated = not terminated and self._steps >= self.max_steps
        self._done = terminated or truncated
        reward = float(extra.get("score", 0.0))
        return StepResult(observation, reward, terminated, truncated,
                          {**self._info(invalid), **extra})

    def table_hash(self, connection: Any | None = None) -> str:
        """The combined hash of the task's tables, as upstream's checker computes it, on
        `connection` (default: a new connection of the harness's to the episode's database)."""
        if connection is not None:
            hashes = [hash_value(run_sql(connection, table_hash_sql(t)))
                      for t in self.task.tables]
            return "_".join(sorted(hashes))
        assert self._server is not None and self._database is not None
        own = self._server.connect(self._database)
        try:
            return self.table_hash(own)
        finally:
            own.close()

    def _gold_hash(self) -> str:
        if self.task.answer_md5:
            return self.task.answer_md5
        assert self._server is not None
        name = f"dbbench_{os.getpid()}_{next(_COUNTER)}_gold"
        connection = self._create(self._server, name)
        try:
            run_sql(connection, self.task.gold_sql)
            return self.table_hash(connection)
        finally:
            connection.close()
            _drop(self._server, name)

    def _grade(self, answer: Any) -> bool:
        if self.task.task_type in MODIFYING:
            self._close_connection()  # its locks and session state end here (module docstring)
            return compare_results(self.table_hash(), self._gold_hash(), self.task.task_type)
        return compare_results(answer, self.task.label, self.task.task_type)

    # -- the oracle --------------------------------------------------------------------------
    def oracle_action(self) -> str:
        """The gold SQL first, then the answer (module docstring)."""
        if self._steps == 0:
            return execute_action(self.task.gold_sql)
        if self.task.modifying:
            return commit_action([])
        return commit_action([str(value) for value in self.task.label])


def _parse(action: str) -> tuple[str, dict[str, Any]] | None:
    try:
        value = json.loads(action.strip())
    except ValueError:
        return None
    if not isinstance(value, dict) or value.get("name") not in ("execute_sql",
                                                                 "commit_final_answer"):
        return None
    arguments = value.get("arguments", {})
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except ValueError:
            return None
    return (value["name"], arguments) if isinstance(arguments, dict) else None
