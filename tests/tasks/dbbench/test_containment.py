"""DB-Bench's server contained: what an agent's SQL (``execute_sql`` actions through the env,
on the real server) cannot do, and the server process as the host sees it.

Each reproduction of issue 39 item 1 worked when the server ran as host root and the agent was
MariaDB ``root``: a host file holding the agent's text, a host folder, a TCP connection, a
concurrent episode's database read and written, the server shut down or reconfigured.
"""

from __future__ import annotations

import os
import socket
import time
from pathlib import Path

import pytest

from tasks.dbbench.containment import INSIDE, PLUGIN_DIR
from tasks.dbbench.env import execute_action
from tasks.dbbench.server import _grant_pattern
from tasks.dbbench.suite import DBBenchSuite
from tests.tasks.dbbench.server_support import needs_server

pytestmark = needs_server
TABLE = "Jiu-Jitsu Championships Results"
"""test-0's table."""
MARKER = "agent-text-5f3c"


@pytest.fixture(scope="module")
def suite():
    suite = DBBenchSuite()
    yield suite
    suite.close()


@pytest.fixture
def env(suite):
    env = suite.make_env("test-0")
    env.reset(seed=0)
    yield env
    env.close()


def sql(env, query: str) -> str:
    return env.step(execute_action(query)).observation


def refused(observation: str) -> bool:
    """The server's error text (``<code> (<state>): ...``), not a result."""
    return observation.split()[0].isdigit() and not observation.startswith("[")


def files_holding(folder: Path, text: str) -> list[Path]:
    return [path for path in folder.rglob("*") if path.is_file()
            and text.encode() in path.read_bytes()]


@pytest.mark.parametrize("log", ["general_log", "slow_query_log"])
def test_query_logs_write_no_host_file(env, tmp_path, log):
    """``SET GLOBAL <log>_file='<host path>'``, ``SET GLOBAL <log>=ON``, ``SELECT '<text>'``:
    refused, and no host file is created (the server runs as root before: it created or
    appended a root-owned file holding the text)."""
    target = tmp_path / f"{log}.txt"
    tmp_path.chmod(0o777)  # writable by anyone: only the server's reach can stop the write
    observations = [sql(env, f"SET GLOBAL {log}_file = '{target}'")]
    if log == "slow_query_log":
        observations.append(sql(env, "SET GLOBAL long_query_time = 0"))
    observations += [sql(env, f"SET GLOBAL {log} = ON"), sql(env, f"SELECT '{MARKER}'")]
    assert all(refused(text) and "Access denied" in text for text in observations[:-1]), \
        observations
    assert observations[-1] == f"[('{MARKER}',)]"
    assert not target.exists() and not files_holding(tmp_path, MARKER)
    assert sql(env, f"SELECT @@global.{log}") == "[(0,)]"


@pytest.mark.parametrize("library", ["server_audit", "ha_federatedx", "disks"])
def test_plugins_cannot_be_installed(env, tmp_path, library):
    """``INSTALL SONAME`` is refused (no INSERT on ``mysql.plugin``) and nothing is loaded;
    for ``server_audit`` its log file then makes no host file either."""
    observation = sql(env, f"INSTALL SONAME '{library}'")
    assert refused(observation) and "mysql`.`plugin" in observation, observation
    assert sql(env, "SELECT PLUGIN_NAME FROM information_schema.PLUGINS WHERE PLUGIN_NAME IN "
                    "('SERVER_AUDIT', 'FEDERATED', 'DISKS')") == "[]"
    if library == "server_audit":
        target = tmp_path / "audit.txt"
        tmp_path.chmod(0o777)
        assert refused(sql(env, f"SET GLOBAL server_audit_file_path = '{target}'"))
        assert refused(sql(env, "SET GLOBAL server_audit_logging = ON"))
        sql(env, f"SELECT '{MARKER}'")
        assert not target.exists() and not files_holding(tmp_path, MARKER)


def test_data_directory_makes_no_host_folder(env, tmp_path):
    target = tmp_path / "made-by-sql"
    tmp_path.chmod(0o777)
    observation = sql(env, f"CREATE TABLE t (a INT) ENGINE=InnoDB DATA DIRECTORY='{target}'")
    assert refused(observation), observation
    assert not target.exists() and list(tmp_path.iterdir()) == []
    assert "'t'" not in sql(env, "SHOW TABLES")


def test_federated_table_makes_no_connection(env):
    """A FEDERATED table pointing at a listener on the host's 127.0.0.1: no connection
    arrives (the engine cannot be installed, and the server's loopback is not the host's)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(4)
        port = listener.getsockname()[1]
        install = sql(env, "INSTALL SONAME 'ha_federatedx'")
        create = sql(env, "CREATE TABLE remote (a INT) ENGINE=FEDERATED CONNECTION="
                          f"'mysql://root@127.0.0.1:{port}/db/t'")
        select = sql(env, "SELECT * FROM remote")
        listener.settimeout(2.0)
        with pytest.raises(socket.timeout):
            listener.accept()
    assert refused(install) and refused(create) and refused(select), (install, create, select)


def test_another_episodes_database_is_invisible_and_unwritable(suite):
    """Two episodes at once on one server: neither sees nor writes the other's database."""
    mine, other = suite.make_env("test-0"), suite.make_env("test-0")
    mine.reset(seed=0)
    other.reset(seed=0)
    try:
        theirs = sql(other, "SELECT DATABASE()")[3:-4]  # [('<name>',)]
        assert theirs.startswith("dbbench_") and theirs != sql(mine, "SELECT DATABASE()")[3:-4]
        databases = sql(mine, "SHOW DATABASES")
        assert theirs not in databases and databases.count("dbbench_") == 1, databases
        for statement in (f"CREATE TABLE `{theirs}`.x (a INT)",
                          f"SELECT COUNT(*) FROM `{theirs}`.`{TABLE}`",
                          f"DELETE FROM `{theirs}`.`{TABLE}`",
                          f"DROP DATABASE `{theirs}`"):
            observation = sql(mine, statement)
            assert refused(observation) and "denied" in observation, (statement, observation)
        assert sql(other, "SHOW TABLES") == f"[('{TABLE}',)]"
        assert sql(other, f"SELECT COUNT(*) > 0 FROM `{TABLE}`") == "[(1,)]"
    finally:
        mine.close()
        other.close()


def test_server_administration_is_refused(env):
    before = sql(env, "SELECT @@global.max_connections")
    for statement in ("SHUTDOWN", "SET GLOBAL max_connections = 1",
                      "CREATE TABLESPACE ts ADD DATAFILE 'ts.ibd'", "SELECT * FROM mysql.user",
                      "SHOW PROCESSLIST", "KILL 1", "GRANT ALL ON *.* TO CURRENT_USER()"):
        observation = sql(env, statement)
        if statement == "SHOW PROCESSLIST":  # only its own session
            assert observation.count("(") == 1, observation
        else:
            assert refused(observation), (statement, observation)
    assert sql(env, "SELECT @@global.max_connections") == before
    assert sql(env, "SELECT 1") == "[(1,)]"  # still up
    grants = sql(env, "SHOW GRANTS")
    assert "ON *.*" in grants and "GRANT USAGE ON *.*" in grants
    assert grants.count("GRANT ") == 2 and "WITH GRANT OPTION" not in grants, grants


def test_server_process_is_unprivileged_and_sees_only_its_folder(suite, env):
    """The process answering the env's SQL: not host uid 0, no capability, no new privileges,
    its own network namespace, and a root holding only /usr, its folder and the empty plugin
    folder (paths it reports are those)."""
    assert sql(env, "SELECT 1") == "[(1,)]"
    pid = suite.server().server_pid
    assert pid is not None
    status = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text()
                  .splitlines())
    assert Path(f"/proc/{pid}/comm").read_text().strip() == "mariadbd"
    uids, gids = status["Uid"].split(), status["Gid"].split()
    assert len(uids) == 4 and "0" not in uids and "0" not in gids, (uids, gids)
    if os.geteuid() == 0:
        assert int(status["CapEff"], 16) == 0 and int(status["CapPrm"], 16) == 0
        assert int(status["CapBnd"], 16) == 0 and status["NoNewPrivs"].strip() == "1"
        assert status["Seccomp"].strip() == "2"
        assert os.readlink(f"/proc/{pid}/ns/net") != os.readlink("/proc/self/ns/net")
        assert os.readlink(f"/proc/{pid}/ns/mnt") != os.readlink("/proc/self/ns/mnt")
        root = Path(f"/proc/{pid}/root")
        assert {p.name for p in root.iterdir()} <= {"usr", "bin", "sbin", "lib", "lib32",
                                                    "lib64", "libx32", "dev", "etc", "db",
                                                    "plugins"}
        assert list((root / "plugins").iterdir()) == []
        assert {p.name for p in (root / "etc").iterdir()} <= {"ld.so.cache", "localtime"}
    assert sql(env, "SELECT @@datadir, @@plugin_dir, @@tmpdir") == \
        f"[('{INSIDE}/data/', '{PLUGIN_DIR}/', '{INSIDE}/tmp')]"


def test_containment_holds_even_for_the_harness_account(suite, tmp_path):
    """The second layer, without the privilege checks: the harness's own account (MariaDB
    ``root``, SUPER included) still writes no host file, loads no plugin and reaches no
    listener, because the server process cannot."""
    server = suite.server()
    target = tmp_path / "general.txt"
    tmp_path.chmod(0o777)
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(4)
        connection = server.connect()
        cursor = connection.cursor()
        errors = []
        for statement in (f"SET GLOBAL general_log_file = '{target}'",
                          "SET GLOBAL general_log = ON", f"SELECT '{MARKER}'",
                          "INSTALL SONAME 'ha_federatedx'", "INSTALL SONAME 'disks'",
                          "CREATE DATABASE IF NOT EXISTS probe",
                          f"CREATE TABLE probe.t (a INT) DATA DIRECTORY='{tmp_path / 'dir'}'"):
            try:
                cursor.execute(statement)
                cursor.fetchall() if cursor.with_rows else None
            except Exception as exc:  # noqa: BLE001 - collected and checked below
                errors.append((statement, str(exc)))
        cursor.execute("SET GLOBAL general_log = OFF")
        cursor.execute("DROP DATABASE IF EXISTS probe")
        connection.close()
        listener.settimeout(1.0)
        with pytest.raises(socket.timeout):
            listener.accept()
    assert not target.exists() and list(tmp_path.iterdir()) == []
    # the host path does not exist for the server; no plugin in its plugin folder; no
    # folder it may create outside its own
    assert [statement for statement, _ in errors] == [
        f"SET GLOBAL general_log_file = '{target}'", "INSTALL SONAME 'ha_federatedx'",
        "INSTALL SONAME 'disks'",
        f"CREATE TABLE probe.t (a INT) DATA DIRECTORY='{tmp_path / 'dir'}'"], errors


def test_database_grant_escapes_wildcards():
    """``_`` and ``%`` are wildcards in a database-level grant: escaped, so an episode's grant
    names its one database (``dbbench_1_2`` does not also grant ``dbbenchX1Y2``)."""
    assert _grant_pattern("dbbench_1_2") == r"`dbbench\_1\_2`"
    assert _grant_pattern("a%b`c") == r"`a\%b``c`"


def test_prepared_xa_transactions_do_not_outlive_their_episode(suite):
    """``XA PREPARE`` survives its session and holds its row and table locks; the episode's
    cleanup rolls back such a detached transaction and drops the database at once, and leaves
    a live episode's prepared transaction alone."""
    insert = next(spec.id for spec in suite.tasks("test") if spec.task_type == "INSERT")
    ended, live = suite.make_env(insert), suite.make_env(insert)
    ended.reset(seed=0)
    live.reset(seed=0)
    table = ended.task.tables[0]["table_name"]
    for env, xid in ((ended, "ended"), (live, "live")):
        for statement in (f"XA START '{xid}'", f"DELETE FROM `{table}`", f"XA END '{xid}'",
                          f"XA PREPARE '{xid}'"):  # each answers the env's COMMIT's error
            env.step(execute_action(statement))
    connection = suite.server().connect()
    connection.autocommit = True
    cursor = connection.cursor()
    cursor.execute("XA RECOVER")
    assert sorted(bytes(row[3]) for row in cursor.fetchall()) == [b"ended", b"live"]
    database = ended._database
    started = time.monotonic()
    ended.close()
    assert time.monotonic() - started < 5
    cursor.execute("XA RECOVER")
    assert [bytes(row[3]) for row in cursor.fetchall()] == [b"live"]
    cursor.execute("SHOW DATABASES")
    assert (database,) not in cursor.fetchall()
    connection.close()
    live.step(execute_action("XA COMMIT 'live'"))
    assert live.step(execute_action(f"SELECT COUNT(*) FROM `{table}`")).observation == "[(0,)]"
    live.close()
