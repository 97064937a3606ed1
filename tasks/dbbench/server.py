"""A private MariaDB server on a Unix socket, started and stopped by the DB-Bench suite.

`MariaDBServer.start()` initialises a fresh data directory in a private temporary folder
(``mariadb-install-db``), starts ``mariadbd`` on ``<folder>/sock`` with networking off, and
waits until it answers; `stop()` shuts it down and removes the folder (also at interpreter
exit). The server is configured as upstream's MySQL 8 behaves where the grade depends on it:
``group_concat_max_len=1024`` (the table hash), MySQL 8's comparison behaviour (`SQL_MODE`),
utf8mb4.
A missing binary or a failed start is one `DBBenchServerError` line naming the Debian package
and the server's log.
"""

from __future__ import annotations

import atexit
import logging
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from harness.core import HarnessError, MissingDependencyError

__all__ = ["DBBenchServerError", "MariaDBServer", "PACKAGE", "find_binaries", "connector"]

log = logging.getLogger(__name__)
PACKAGE = "mariadb-server"
SQL_MODE = ("ONLY_FULL_GROUP_BY,NO_ZERO_IN_DATE,NO_ZERO_DATE,"
            "ERROR_FOR_DIVISION_BY_ZERO,NO_ENGINE_SUBSTITUTION")
"""MySQL 8's default sql_mode without STRICT_TRANS_TABLES: MySQL 8 (upstream runs ``mysql:8``)
only warns when an UPDATE's WHERE compares a TEXT value with a number, MariaDB's strict mode
refuses the statement (two gold statements of ``standard.jsonl`` do this); every column is
TEXT, so strictness changes nothing else an INSERT or UPDATE stores."""
START_TIMEOUT_S = 60.0
BINARY_ENV = "DBBENCH_MARIADBD"
"""Overrides the server binary (tests point it at a missing path)."""


class DBBenchServerError(HarnessError):
    """The MariaDB server is missing, failed to start, or died."""


def find_binaries() -> tuple[str, str]:
    """(server, installer) paths; `DBBenchServerError` naming the package when absent."""
    server = os.environ.get(BINARY_ENV) or shutil.which("mariadbd") or shutil.which(
        "mysqld") or next((p for p in ("/usr/sbin/mariadbd", "/usr/sbin/mysqld")
                           if os.path.exists(p)), None)
    installer = shutil.which("mariadb-install-db") or shutil.which("mysql_install_db")
    if not server or not os.path.exists(server) or not installer:
        raise DBBenchServerError(
            f"MariaDB server not found ({server or 'mariadbd'}): install the Debian package "
            f"{PACKAGE} (apt-get install {PACKAGE}); DB-Bench starts its own server")
    return server, installer


def connector() -> Any:
    try:
        import mysql.connector
    except ImportError:
        raise MissingDependencyError("mysql-connector-python", "dbbench",
                                     "DB-Bench's MySQL client") from None
    return mysql.connector


class MariaDBServer:
    """One server process (module docstring)."""

    def __init__(self) -> None:
        self.folder: Path | None = None
        self.process: subprocess.Popen | None = None
        self.start_seconds = 0.0

    @property
    def socket(self) -> str:
        assert self.folder is not None
        return str(self.folder / "sock")

    @property
    def log_path(self) -> Path:
        assert self.folder is not None
        return self.folder / "server.log"

    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def start(self) -> MariaDBServer:
        server, installer = find_binaries()
        started = time.perf_counter()
        self.folder = Path(tempfile.mkdtemp(prefix="dbbench-mariadb-"))
        self.folder.chmod(0o700)
        user = ["--user=root"] if os.geteuid() == 0 else []
        data = self.folder / "data"
        (self.folder / "files").mkdir()  # the only folder LOAD_FILE / INTO OUTFILE may touch
        install = subprocess.run(
            [installer, "--no-defaults", f"--datadir={data}", "--skip-test-db",
             "--auth-root-authentication-method=normal", *user],
            capture_output=True, text=True, timeout=START_TIMEOUT_S)
        if install.returncode != 0:
            self.log_path.write_text(install.stdout + install.stderr)
            self._fail(f"mariadb-install-db failed (exit {install.returncode})")
        command = [server, "--no-defaults", f"--datadir={data}", f"--socket={self.socket}",
                   "--skip-networking", f"--pid-file={self.folder / 'pid'}",
                   f"--log-error={self.log_path}", "--group-concat-max-len=1024",
                   f"--sql-mode={SQL_MODE}", "--character-set-server=utf8mb4",
                   "--collation-server=utf8mb4_general_ci", "--innodb-buffer-pool-size=64M",
                   "--skip-log-bin", f"--secure-file-priv={self.folder / 'files'}",
                   "--local-infile=0", *user]  # the agent's SQL reads and writes no host file
        self.process = subprocess.Popen(command, stdout=subprocess.DEVNULL,
                                        stderr=subprocess.DEVNULL, start_new_session=True)
        atexit.register(self.stop)
        self._wait_ready()
        self.start_seconds = time.perf_counter() - started
        log.info("MariaDB started in %.1fs on %s", self.start_seconds, self.socket)
        return self

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + START_TIMEOUT_S
        mysql = connector()
        while time.monotonic() < deadline:
            if not self.running():
                self._fail("mariadbd exited during start")
            if os.path.exists(self.socket):
                try:
                    self.connect().close()
                    return
                except mysql.Error:
                    pass
            time.sleep(0.1)
        self._fail(f"mariadbd did not answer within {START_TIMEOUT_S:.0f}s")

    def _fail(self, what: str) -> None:
        log_path = self.log_path
        keep = Path(tempfile.gettempdir()) / f"dbbench-mariadb-failed-{os.getpid()}.log"
        try:
            shutil.copyfile(log_path, keep)
        except OSError:
            keep = log_path
        self.stop()
        raise DBBenchServerError(f"{what}; the server ({PACKAGE}) log is {keep}")

    def connect(self, database: str | None = None) -> Any:
        """A new autocommit-off connection as root over the socket."""
        mysql = connector()
        return mysql.connect(unix_socket=self.socket, user="root", password="",
                             database=database, charset="utf8mb4",
                             collation="utf8mb4_general_ci", connection_timeout=10)

    def stop(self) -> None:
        """Shut the server down (SIGTERM, then SIGKILL) and remove its folder."""
        if self.process is not None:
            if self.process.poll() is None:
                self.process.terminate()
                try:
                    self.process.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    self.process.kill()
                    self.process.wait()
            self.process = None
        if self.folder is not None:
            shutil.rmtree(self.folder, ignore_errors=True)
            self.folder = None
