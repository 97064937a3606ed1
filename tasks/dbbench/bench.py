"""``harness bench dbbench``: the MariaDB server's costs next to same-run baselines.

Server start: `MariaDBServer.start_seconds` (a fresh data directory by ``mariadb-install-db``,
``mariadbd`` up and answering on its private socket, both contained as
`tasks.dbbench.containment` says), next to starting the same binary for ``mariadbd --version``
bare (the process start) and contained (bubblewrap, ``setpriv`` as root, the seccomp filter:
what containment adds to each of the two processes a start runs). Query round trip: the median
wall time of ``SELECT 1`` through the env's path (`tasks.dbbench.env.run_sql` on a connection
held for the episode, as an episode's account: execute, fetch, commit, format), next to the
same query on the same connection with the bare driver, a fresh connection of that account per
query (connect, query, close), and an in-memory ``sqlite3`` database; the samples of the four
are interleaved.
"""

from __future__ import annotations

import os
import sqlite3
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tasks.dbbench.containment import contained_argv, server_ids
from tasks.dbbench.env import run_sql
from tasks.dbbench.server import Account, MariaDBServer, find_binaries, seccomp_descriptor

__all__ = ["DBBenchBench", "bench_dbbench", "dbbench_report", "QUERIES"]

QUERIES = 200
"""Round trips timed per path (the bench's default)."""
QUERY = "SELECT 1"
DATABASE = "bench"


@dataclass(frozen=True)
class DBBenchBench:
    """Start times in seconds; round trips are medians in milliseconds over `n` queries."""

    n: int
    start_s: float
    """`MariaDBServer.start_seconds`: initialise, start, first answer."""
    spawn_s: float
    """``mariadbd --version``: the bare process start of the same binary."""
    env_ms: float
    """``SELECT 1`` through `run_sql` on a held connection (what an ``execute_sql`` step runs)."""
    driver_ms: float
    """``SELECT 1`` with the bare driver on the same connection (execute, fetch)."""
    connect_ms: float
    """A fresh connection per query: connect, ``SELECT 1``, close."""
    sqlite_ms: float
    """``SELECT 1`` on an in-memory sqlite3 database (no server, no socket)."""
    contained_spawn_s: float
    """``mariadbd --version`` contained as the server is (`tasks.dbbench.containment`)."""


def _time(function: Callable[[], Any]) -> float:
    started = time.perf_counter()
    function()
    return time.perf_counter() - started


def _driver_query(connection: Any) -> None:
    cursor = connection.cursor()
    cursor.execute(QUERY)
    cursor.fetchall()
    cursor.close()


def _connect_query(server: MariaDBServer, account: Account) -> None:
    connection = server.connect(DATABASE, account)
    _driver_query(connection)
    connection.close()


def _round_trips(server: MariaDBServer, n: int) -> dict[str, float]:
    """Median milliseconds of each path, samples interleaved (module docstring)."""
    admin = server.connect()
    admin.cursor().execute(f"CREATE DATABASE {DATABASE}")
    admin.close()
    account = server.create_account(DATABASE)
    connection = server.connect(DATABASE, account)
    memory = sqlite3.connect(":memory:")
    paths: dict[str, Callable[[], Any]] = {
        "env": lambda: run_sql(connection, QUERY),
        "driver": lambda: _driver_query(connection),
        "connect": lambda: _connect_query(server, account),
        "sqlite": lambda: memory.execute(QUERY).fetchall(),
    }
    samples: dict[str, list[float]] = {name: [] for name in paths}
    try:
        for path in paths.values():  # warm every path once
            path()
        for _ in range(n):
            for name, path in paths.items():
                samples[name].append(_time(path))
    finally:
        connection.close()
        memory.close()
    return {name: 1000 * statistics.median(values) for name, values in samples.items()}


def _contained_spawn(binary: str) -> float:
    """Seconds of ``mariadbd --version`` run contained (its folder: an empty temporary one)."""
    with tempfile.TemporaryDirectory(prefix="dbbench-bench-") as folder:
        seccomp_fd = seccomp_descriptor()
        try:
            argv = contained_argv(Path(folder), [binary, "--version"], seccomp_fd=seccomp_fd,
                                  ids=server_ids())
            return _time(lambda: subprocess.run(argv, capture_output=True, check=True,
                                                pass_fds=(seccomp_fd,)))
        finally:
            os.close(seccomp_fd)


def bench_dbbench(n: int = QUERIES) -> DBBenchBench:
    """Start a private server, time `n` round trips per path, stop it (module docstring)."""
    binary, _ = find_binaries()
    spawn_s = _time(lambda: subprocess.run([binary, "--version"], capture_output=True,
                                           check=True))
    contained_s = _contained_spawn(binary)
    server = MariaDBServer().start()
    try:
        trips = _round_trips(server, n)
    finally:
        server.stop()
    return DBBenchBench(n, server.start_seconds, spawn_s, trips["env"], trips["driver"],
                        trips["connect"], trips["sqlite"], contained_s)


def dbbench_report(args: Any) -> list[str]:
    """Lines of ``harness bench dbbench`` (``args.dbbench_queries`` overrides `QUERIES`)."""
    result = bench_dbbench(getattr(args, "dbbench_queries", None) or QUERIES)
    load = os.getloadavg()[0]
    return [
        f"dbbench (MariaDB on a private Unix socket), round trips: medians of {result.n} "
        f"'{QUERY}' each, interleaved; load average {load:.1f} on {os.cpu_count()} cores",
        f"  server start (install-db + mariadbd): {result.start_s:8.2f} s   "
        f"'mariadbd --version' {result.spawn_s:6.3f} s   ratio "
        f"{result.start_s / result.spawn_s:6.1f}",
        f"  round trip, env path (run_sql)      : {result.env_ms:8.3f} ms",
        f"  bare driver, same connection        : {result.driver_ms:8.3f} ms   ratio env/bare "
        f"{result.env_ms / result.driver_ms:6.2f}",
        f"  fresh connection per query          : {result.connect_ms:8.3f} ms   ratio env/"
        f"connect {result.env_ms / result.connect_ms:6.2f}",
        f"  sqlite3 in memory                   : {result.sqlite_ms:8.3f} ms   ratio env/"
        f"sqlite {result.env_ms / result.sqlite_ms:8.1f}",
        f"  'mariadbd --version' contained      : {result.contained_spawn_s:8.3f} s    ratio "
        f"contained/bare {result.contained_spawn_s / result.spawn_s:6.1f}",
    ]
