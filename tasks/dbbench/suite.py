"""The suite ``dbbench@2``: AgentBench's DB-Bench on a MariaDB server the suite runs.

Task ids are ``test-<i>`` (``standard.jsonl``, 300) and ``dev-<i>`` (``dev.jsonl``, 60); the
task type is upstream's (INSERT, UPDATE, counting, comparison, ranking, aggregation-*,
other). Making the suite checks the prerequisites (the server binary, bubblewrap, the MySQL
client), so a machine without them gets one `DBBenchServerError` (or `MissingDependencyError`)
line before any episode plays and `harness list` marks the suite unavailable. The server
starts on the first episode (`server`; contained and unprivileged,
`tasks.dbbench.containment`), is restarted if it died, and is stopped by `close` or at
interpreter exit. Each episode's SQL runs as its own MariaDB account, with rights on its own
database only (`tasks.dbbench.env`).
"""

from __future__ import annotations

import os
import threading

from tasks.base import Comparability, SuiteBase, TaskSpec
from tasks.dbbench.data import DBTask, data_dir, load_tasks
from tasks.dbbench.env import MAX_ROUNDS, DBBenchEnv, commit_action
from tasks.dbbench.server import MariaDBServer, connector, find_binaries

__all__ = ["DBBenchSuite", "COMPARABILITY", "INSTRUCTIONS"]

COMPARABILITY = Comparability(
    engine="rebuilt", tasks="upstream", grader="rebuilt", protocol="rebuilt", data="upstream",
    comparable="close to published DB-Bench: MariaDB 10.11 set up like MySQL 8 instead of "
               "mysql:8 in Docker; checker rebuilt from upstream's semantics",
    evidence="tests/tasks/dbbench (gold 299/300 against upstream's stored answers and hashes; "
             "test-225's stored hash matches no state of its table)")

INSTRUCTIONS = """I will ask you a question, then you should help me operate a MySQL database \
with SQL to answer the question. Explain the problem and your solution and write down your \
thoughts. Each round, operate or answer with one of the two tools, sending exactly one JSON \
object:
- {"name": "execute_sql", "arguments": {"query": "<one SQL statement, one line>"}}: I run it \
and show you the raw MySQL result;
- {"name": "commit_final_answer", "arguments": {"answers": ["<value>", ...]}}: your final \
answer; commit only when you are sure. It must be exactly the correct answer. If the question \
modifies the database, the answers can be anything once you are done.
Anything else is judged a failure for that round."""
"""Upstream's system prompt, restated for the one-JSON-object action format."""


class DBBenchSuite(SuiteBase):
    """``dbbench@2`` (module docstring)."""

    name, version = "dbbench", 2
    description = ("AgentBench DB-Bench: 300 SQL tasks (100 INSERT, 100 UPDATE, 100 SELECT) on "
                   "a private MariaDB server; answers and table hashes graded as upstream")
    trivial_actions = {"commit-empty": commit_action([])}
    blocking = True
    multiline_actions = True
    instructions = INSTRUCTIONS
    comparability = COMPARABILITY
    published_splits = ("dev", "test")  # standard.jsonl is the test set; no train set

    def __init__(self, *, data: str | os.PathLike | None = None):
        find_binaries()  # the prerequisites, before any episode (module docstring)
        connector()
        self._tasks = {t.id: t for t in load_tasks(str(data_dir(data)))}
        self._server: MariaDBServer | None = None
        self._lock = threading.Lock()
        super().__init__([TaskSpec(t.id, t.split, t.task_type, {
            "tables": len(t.tables), "max_rounds": MAX_ROUNDS}) for t in self._tasks.values()])

    def server(self) -> MariaDBServer:
        """The running server, started (or restarted after a crash) on demand."""
        with self._lock:
            if self._server is None or not self._server.running():
                if self._server is not None:
                    self._server.stop()
                self._server = MariaDBServer().start()
            return self._server

    def close(self) -> None:
        """Stop the server."""
        with self._lock:
            if self._server is not None:
                self._server.stop()
                self._server = None

    def record(self, task_id: str) -> DBTask:
        self.task(task_id)
        return self._tasks[task_id]

    def make_env(self, task_id: str) -> DBBenchEnv:
        return DBBenchEnv(self.record(task_id), self.server)
