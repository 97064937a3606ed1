"""A private MariaDB server on a Unix socket, contained, started and stopped by the DB-Bench suite.

`MariaDBServer.start()` initialises a fresh data directory in a private temporary folder
(``mariadb-install-db``) and starts ``mariadbd`` on ``<folder>/db/run/sock`` with TCP off,
both contained (`tasks.dbbench.containment`: bubblewrap, an unprivileged uid, only their own
folder writable, loopback-only network, the sandbox's seccomp filter, an empty read-only
plugin folder), and waits until it answers; `stop()` ends it and removes the folder (also at
interpreter exit). The private folder is the host root's (0700); the server's own folder
inside it is the server uid's.

Two kinds of account: the harness's (`connect`, MariaDB ``root`` over the socket, which only
this process's uid can reach) creates and grades the databases; each episode gets its own
(`create_account`: a random name and password, ``ALL PRIVILEGES`` on its one database and
nothing else, so no ``SUPER``, ``FILE``, ``PROCESS``, ``SHUTDOWN``, ``CREATE TABLESPACE`` or
global ``SET``, no access to ``mysql.*`` (so no ``INSTALL PLUGIN``) and no sight of another
episode's database), which is what the agent's SQL runs as.

The server is configured as upstream's MySQL 8 behaves where the grade depends on it:
``group_concat_max_len=1024`` (the table hash), MySQL 8's comparison behaviour (`SQL_MODE`),
utf8mb4. A missing binary or a failed start is one `DBBenchServerError` line naming the
Debian package and the server's log.
"""

from __future__ import annotations

import atexit
import logging
import os
import secrets
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from harness.core import HarnessError, MissingDependencyError
from tasks.dbbench.containment import (INSIDE, PLUGIN_DIR, ContainmentError, contained_argv,
                                       descendant_named, require_containment, server_ids)

__all__ = ["DBBenchServerError", "MariaDBServer", "PACKAGE", "find_binaries", "connector",
           "Account", "seccomp_descriptor"]

log = logging.getLogger(__name__)
PACKAGE = "mariadb-server"
SQL_MODE = ("ONLY_FULL_GROUP_BY,NO_ZERO_IN_DATE,NO_ZERO_DATE,"
            "ERROR_FOR_DIVISION_BY_ZERO,NO_ENGINE_SUBSTITUTION")
"""MySQL 8's default sql_mode without STRICT_TRANS_TABLES: MySQL 8 (upstream runs ``mysql:8``)
only warns when an UPDATE's WHERE compares a TEXT value with a number, MariaDB's strict mode
refuses the statement (two gold statements of ``standard.jsonl`` do this); every column is
TEXT, so strictness changes nothing else an INSERT or UPDATE stores."""
START_TIMEOUT_S = 60.0
LOCK_WAIT_S = 10
"""``lock_wait_timeout`` of the harness's sessions: a lock the agent's session left (an XA
transaction it prepared) delays a grade or a cleanup by at most this, never indefinitely."""
BINARY_ENV = "DBBENCH_MARIADBD"
"""Overrides the server binary (tests point it at a missing path)."""
_FOLDERS = ("data", "run", "tmp", "files")
"""The server's own folder: data directory, socket and pid file, temporary files, and the
``secure_file_priv`` folder (empty; no episode account holds ``FILE``)."""
Account = tuple[str, str]
"""(user, password) of an episode's MariaDB account."""


class DBBenchServerError(HarnessError):
    """The MariaDB server is missing, failed to start, or died."""


def find_binaries() -> tuple[str, str]:
    """(server, installer) paths; `DBBenchServerError` naming the package when absent (or
    naming bubblewrap when the server cannot be contained here)."""
    server = os.environ.get(BINARY_ENV) or shutil.which("mariadbd") or shutil.which(
        "mysqld") or next((p for p in ("/usr/sbin/mariadbd", "/usr/sbin/mysqld")
                           if os.path.exists(p)), None)
    installer = shutil.which("mariadb-install-db") or shutil.which("mysql_install_db")
    if not server or not os.path.exists(server) or not installer:
        raise DBBenchServerError(
            f"MariaDB server not found ({server or 'mariadbd'}): install the Debian package "
            f"{PACKAGE} (apt-get install {PACKAGE}); DB-Bench starts its own server")
    try:
        require_containment()
    except ContainmentError as exc:
        raise DBBenchServerError(str(exc)) from None
    return server, installer


def connector() -> Any:
    try:
        import mysql.connector
    except ImportError:
        raise MissingDependencyError("mysql-connector-python", "dbbench",
                                     "DB-Bench's MySQL client") from None
    return mysql.connector


def seccomp_descriptor() -> int:
    """A new descriptor of the sandbox's compiled seccomp program (bwrap reads it to its end,
    so one per launch; the caller closes it)."""
    from tasks.sandbox_seccomp import compiled_filter

    try:
        return os.open(compiled_filter(), os.O_RDONLY | os.O_CLOEXEC)
    except (HarnessError, OSError) as exc:
        raise DBBenchServerError(f"cannot contain the MariaDB server: {exc}") from None


def _quote(name: str) -> str:
    """`name` as a backquoted identifier."""
    return "`" + name.replace("`", "``") + "`"


def _grant_pattern(database: str) -> str:
    """`database` as a database-level grant names it: ``_`` and ``%`` are wildcards there."""
    return _quote(database.replace("\\", "\\\\").replace("_", "\\_").replace("%", "\\%"))


class MariaDBServer:
    """One contained server process (module docstring)."""

    def __init__(self) -> None:
        self.folder: Path | None = None
        self.process: subprocess.Popen | None = None
        self.server_pid: int | None = None
        """The host pid of ``mariadbd`` itself (`process` is bubblewrap's)."""
        self.start_seconds = 0.0

    @property
    def own(self) -> Path:
        """The server's own folder (mounted at `INSIDE` in its namespace)."""
        assert self.folder is not None
        return self.folder / "db"

    @property
    def socket(self) -> str:
        return str(self.own / "run" / "sock")

    @property
    def log_path(self) -> Path:
        return self.own / "server.log"

    def running(self) -> bool:
        """Whether bubblewrap and, once started, ``mariadbd`` inside it are alive."""
        return self.process is not None and self.process.poll() is None and (
            self.server_pid is None or _alive(self.server_pid))

    def _argv(self, command: list[str], seccomp_fd: int) -> list[str]:
        return contained_argv(self.own, command, seccomp_fd=seccomp_fd, ids=server_ids())

    def start(self) -> MariaDBServer:
        server, installer = find_binaries()
        started = time.perf_counter()
        self.folder = Path(tempfile.mkdtemp(prefix="dbbench-mariadb-"))
        self.folder.chmod(0o700)
        atexit.register(self.stop)
        ids = server_ids()
        self.own.mkdir(mode=0o700)
        for name in _FOLDERS:
            (self.own / name).mkdir(mode=0o700)
        if ids is not None:
            for path in (self.own, *(self.own / name for name in _FOLDERS)):
                os.chown(path, *ids)
        self._install(installer)
        seccomp_fd = seccomp_descriptor()
        try:
            command = [server, "--no-defaults", f"--datadir={INSIDE}/data",
                       f"--socket={INSIDE}/run/sock", "--skip-networking",
                       f"--pid-file={INSIDE}/run/pid", f"--log-error={INSIDE}/server.log",
                       f"--tmpdir={INSIDE}/tmp", f"--plugin-dir={PLUGIN_DIR}",
                       "--group-concat-max-len=1024", f"--sql-mode={SQL_MODE}",
                       "--character-set-server=utf8mb4", "--collation-server=utf8mb4_general_ci",
                       "--innodb-buffer-pool-size=64M", "--skip-log-bin",
                       f"--secure-file-priv={INSIDE}/files", "--local-infile=0",
                       "--skip-name-resolve"]
            with open(self.folder / "launch.log", "wb") as output:  # bwrap's own errors
                self.process = subprocess.Popen(self._argv(command, seccomp_fd),
                                                stdin=subprocess.DEVNULL, stdout=output,
                                                stderr=subprocess.STDOUT,
                                                start_new_session=True, pass_fds=(seccomp_fd,))
        finally:
            os.close(seccomp_fd)
        self._wait_ready()
        self.server_pid = descendant_named(self.process.pid, "mariadbd")
        self.start_seconds = time.perf_counter() - started
        log.info("MariaDB started in %.1fs on %s", self.start_seconds, self.socket)
        return self

    def _install(self, installer: str) -> None:
        """A fresh data directory, initialised inside the same containment."""
        command = [installer, "--no-defaults", f"--datadir={INSIDE}/data", "--skip-test-db",
                   "--auth-root-authentication-method=normal", "--force",  # no host names
                   f"--tmpdir={INSIDE}/tmp", f"--plugin-dir={PLUGIN_DIR}"]
        seccomp_fd = seccomp_descriptor()
        try:
            install = subprocess.run(self._argv(command, seccomp_fd), capture_output=True,
                                     text=True, timeout=START_TIMEOUT_S, pass_fds=(seccomp_fd,))
        finally:
            os.close(seccomp_fd)
        if install.returncode != 0:
            assert self.folder is not None
            (self.folder / "launch.log").write_text(install.stdout + install.stderr)
            self._fail(f"mariadb-install-db failed (exit {install.returncode})")

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
        assert self.folder is not None
        keep = Path(tempfile.gettempdir()) / f"dbbench-mariadb-failed-{os.getpid()}.log"
        with open(keep, "wb") as handle:
            for path in (self.folder / "launch.log", self.log_path):
                try:
                    handle.write(path.read_bytes())
                except OSError:
                    pass
        self.stop()
        raise DBBenchServerError(f"{what}; the server ({PACKAGE}) log is {keep}")

    def connect(self, database: str | None = None, account: Account | None = None) -> Any:
        """A new autocommit-off connection over the socket: as the harness (MariaDB ``root``,
        locks waited for at most `LOCK_WAIT_S`) or, given one, as an episode's `account`."""
        mysql = connector()
        user, password = account or ("root", "")
        connection = mysql.connect(unix_socket=self.socket, user=user, password=password,
                                   database=database, charset="utf8mb4",
                                   collation="utf8mb4_general_ci", connection_timeout=10)
        if account is None:
            cursor = connection.cursor()
            cursor.execute(f"SET SESSION lock_wait_timeout = {LOCK_WAIT_S}, "
                           f"innodb_lock_wait_timeout = {LOCK_WAIT_S}")
            cursor.close()
        return connection

    def create_account(self, database: str) -> Account:
        """A new MariaDB account with every right on `database` and none elsewhere (module
        docstring); `drop_account` removes it."""
        user, password = f"agent_{secrets.token_hex(6)}", secrets.token_urlsafe(18)
        connection = self.connect()
        try:
            cursor = connection.cursor()
            cursor.execute("CREATE USER %s@'localhost' IDENTIFIED BY %s", (user, password))
            cursor.execute(f"GRANT ALL PRIVILEGES ON {_grant_pattern(database)}.* TO "
                           f"%s@'localhost'", (user,))
            cursor.close()
        finally:
            connection.close()
        return user, password

    def drop_account(self, account: Account) -> None:
        connection = self.connect()
        try:
            cursor = connection.cursor()
            cursor.execute("DROP USER IF EXISTS %s@'localhost'", (account[0],))
            cursor.close()
        finally:
            connection.close()

    def rollback_detached_xa(self) -> int:
        """Roll back every prepared XA transaction whose session has ended (an agent's ``XA
        PREPARE`` survives its connection and would hold its locks until the server stops); a
        live session's cannot be rolled back from here and is left alone. Returns how many."""
        connection = self.connect()
        connection.autocommit = True  # XA ROLLBACK refuses to run inside a transaction
        done = 0
        try:
            cursor = connection.cursor()
            cursor.execute("XA RECOVER")
            for format_id, gtrid_length, _, data in cursor.fetchall():
                data = bytes(data)
                try:
                    cursor.execute(f"XA ROLLBACK X'{data[:gtrid_length].hex()}', "
                                   f"X'{data[gtrid_length:].hex()}', {int(format_id)}")
                    done += 1
                except connector().Error:
                    pass
            cursor.close()
        finally:
            connection.close()
        return done

    def stop(self) -> None:
        """End the server (its namespace dies with bubblewrap) and remove its folder."""
        if self.process is not None:
            if self.process.poll() is None:
                self.process.terminate()
                try:
                    self.process.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    self.process.kill()
                    self.process.wait()
            self.process = None
        if self.server_pid is not None:
            _await_exit(self.server_pid)
            self.server_pid = None
        if self.folder is not None:
            shutil.rmtree(self.folder, ignore_errors=True)
            self.folder = None


def _alive(pid: int) -> bool:
    """Whether process `pid` exists and is not a zombie."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    state = next((line.split()[1:2] for line in status.splitlines()
                  if line.startswith("State:")), [])
    return state != ["Z"]


def _await_exit(pid: int, timeout_s: float = 10.0) -> None:
    """Wait until process `pid` has exited (gone or a zombie), at most `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.02)
