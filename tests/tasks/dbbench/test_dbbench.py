"""DB-Bench: the checker by hand, then the suite on a MariaDB server it starts itself."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import types
from pathlib import Path

import pytest

from tasks import get_suite
from tasks.base import check_env
from tasks.dbbench.bench import dbbench_report
from tasks.dbbench.data import DBBenchDataError, data_dir, load_tasks
from tasks.dbbench.env import commit_action, execute_action
from tasks.dbbench.grading import clean_answer, compare_results, hash_value, init_sql
from tasks.dbbench.server import DBBenchServerError, MariaDBServer
from tasks.dbbench.suite import DBBenchSuite
from tests.tasks.dbbench.server_support import needs_server

REPO = Path(__file__).resolve().parents[3]
KNOWN_GOLD_MISMATCH = {"test-225"}
"""Its stored answer_md5 is neither the unchanged table's hash nor the hash after its gold
UPDATE on MariaDB (the UPDATE matches one row); reported for a check against mysql:8."""


def test_clean_answer_by_hand():
    assert clean_answer("[('a',), ('b',)]") == ["a", "b"]
    assert clean_answer("[(293.0,)]") == ["293.0"]
    assert clean_answer(["1,234", "50%", None, "NULL", " 'x' "]) == ["1234", "50", "0", "0",
                                                                     "x"]
    assert clean_answer("[1, 'b']") == ["1", "b"]
    # not a literal: split outside quotes, then commas dropped as thousands separators
    assert clean_answer("[a, 'b, c']") == ["a", "b c"]
    assert clean_answer(None) == ["0"]
    assert hash_value("[('abc',)]") == "abc"


def test_compare_results_by_hand():
    assert compare_results(["3"], ["3.0"], "counting")
    assert compare_results(["3.004"], ["3"], "aggregation-AVG")
    assert not compare_results(["3.02"], ["3"], "aggregation-AVG")
    assert compare_results(["none"], ["0"], "comparison")  # both special values -> "0"
    assert compare_results(["b", "a"], ["a", "b"], "ranking")  # sets
    assert compare_results(["2", "1.001"], ["1", "2"], "other")  # float multiset
    assert not compare_results(["1", "1"], ["1", "2"], "other")
    assert not compare_results([], ["1"], "counting")
    assert compare_results("abc", "[('abc',)]", "UPDATE")
    assert not compare_results("abd", "[('abc',)]", "INSERT")


def test_init_sql_makes_every_column_text():
    table = {"table_name": "t x", "table_info": {"columns": [{"name": "a", "type": "INT"}],
                                                 "rows": [[1], ["b"]]}}
    assert init_sql([table]) == [("CREATE TABLE IF NOT EXISTS `t x` (`a` TEXT)", ()),
                                 ("INSERT INTO `t x` (`a`) VALUES (%s),(%s)", ("1", "b"))]


def test_corrupt_task_file_is_one_clear_error(tmp_path):
    (tmp_path / "standard.jsonl").write_text('{"description": "x"}\n')
    with pytest.raises(DBBenchDataError, match=r"standard\.jsonl:1: not a DB-Bench task"):
        load_tasks(str(tmp_path))


def test_missing_server_binary_is_one_line(monkeypatch):
    monkeypatch.setenv("DBBENCH_MARIADBD", "/nonexistent/mariadbd")
    with pytest.raises(DBBenchServerError, match="install the Debian package mariadb-server"):
        MariaDBServer().start()
    with pytest.raises(DBBenchServerError, match="mariadb-server"):
        DBBenchSuite()  # checked when the suite is made, before any episode


def test_missing_server_binary_through_the_command_is_one_line_exit_2(tmp_path):
    """``harness run`` without the server binary: one line naming the package, exit 2, no
    traceback and no episode stored as an error."""
    env = {**os.environ, "PYTHONPATH": str(REPO), "HF_HUB_OFFLINE": "1",
           "DBBENCH_MARIADBD": str(tmp_path / "no-such-mariadbd")}
    done = subprocess.run(
        [sys.executable, "-m", "harness.cli", "run", "--policy", "random", "--suite", "dbbench",
         "--tasks", "1", "--db", str(tmp_path / "runs.db")],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert "Traceback" not in done.stderr and len(lines) == 1, done.stderr
    assert lines[0].startswith("harness run: error: MariaDB server not found"), lines
    assert "apt-get install mariadb-server" in lines[0] and "episodes failed" not in lines[0]


@pytest.fixture(scope="module")
def suite():
    suite = DBBenchSuite()
    yield suite
    suite.close()


def _play(suite, task_id, actions=None):
    env = suite.make_env(task_id)
    env.reset(seed=0)
    for step in range(env.max_steps):
        result = env.step(actions[step] if actions else env.oracle_action())
        if result.terminated or result.truncated:
            break
    env.close()
    return result


def test_task_files_hold_300_test_and_60_dev_tasks():
    splits = [task.split for task in load_tasks(str(data_dir()))]
    assert (splits.count("test"), splits.count("dev")) == (300, 60)


@needs_server
def test_registered():
    assert len(get_suite("dbbench@2").tasks("test")) == 300
    assert len(get_suite("dbbench@2").tasks("dev")) == 60


@needs_server
def test_oracle_one_and_commit_empty_zero_on_a_few_tasks(suite):
    by_type: dict[str, list[str]] = {}
    for spec in suite.tasks("test"):
        by_type.setdefault(spec.task_type, []).append(spec.id)
    picked = by_type["INSERT"][:2] + by_type["UPDATE"][:2] + by_type["counting"][:1] + \
        by_type["aggregation-AVG"][:1] + by_type["ranking"][:1]
    for task_id in picked:
        assert _play(suite, task_id).info["won"], task_id
        assert not _play(suite, task_id, [suite.trivial_actions["commit-empty"]]).info["won"]


@needs_server
def test_sql_results_and_errors_as_upstream_shows_them(suite):
    env = suite.make_env("test-0")
    env.reset(seed=0)
    rows = env.step(execute_action("SELECT COUNT(*) FROM `Jiu-Jitsu Championships Results`"))
    assert rows.observation.startswith("[(") and rows.observation.endswith(",)]")
    error = env.step(execute_action("SELEC 1"))
    assert error.observation.startswith("1064 (42000): You have an error in your SQL syntax")
    long = env.step(execute_action("SELECT * FROM `Jiu-Jitsu Championships Results`"))
    assert len(long.observation) <= 800 + len("[TRUNCATED]")
    invalid = env.step("not json")
    assert invalid.info["invalid"] and not invalid.terminated
    env.close()


@needs_server
def test_bench_prints_start_time_and_round_trip_beside_baselines():
    lines = dbbench_report(types.SimpleNamespace(dbbench_queries=20))
    assert lines[0].startswith("dbbench (MariaDB on a private Unix socket)")
    assert "medians of 20 'SELECT 1'" in lines[0]
    start = lines[1].split()
    assert lines[1].startswith("  server start") and "'mariadbd --version'" in lines[1]
    seconds, spawn, ratio = float(start[5]), float(start[9]), float(start[-1])
    assert 0 < spawn < seconds < 60 and ratio == pytest.approx(seconds / spawn, rel=0.1)
    env_ms = float(lines[2].split(":")[1].split()[0])
    assert lines[2].startswith("  round trip, env path (run_sql)") and 0 < env_ms < 100
    for line, label in zip(lines[3:], ("ratio env/bare", "ratio env/connect",
                                       "ratio env/sqlite")):
        assert label in line and float(line.split()[-1]) > 0, line
    assert float(lines[5].split()[-1]) > 1  # a server round trip costs more than sqlite3
    contained = lines[6].split()
    assert lines[6].startswith("  'mariadbd --version' contained") and "contained/bare" in lines[6]
    assert 0 < float(contained[4]) < 60 and float(contained[-1]) == pytest.approx(
        float(contained[4]) / spawn, rel=0.1)


@needs_server
def test_check_env(suite):
    check_env(suite.make_env("test-250"), seed=0, n_steps=4)


@needs_server
def test_server_started_on_a_private_socket_and_stopped_on_close():
    suite = DBBenchSuite()
    _play(suite, "test-100")
    server = suite.server()
    folder = server.folder
    assert Path(server.socket).is_relative_to(folder) and server.running()
    assert oct(folder.stat().st_mode)[-3:] == "700" and folder.stat().st_uid == os.geteuid()
    suite.close()
    assert not folder.exists() and not server.running()


@needs_server
def test_crashed_server_fails_only_its_episode_and_restarts():
    suite = DBBenchSuite()
    env = suite.make_env("test-0")
    env.reset(seed=0)
    server = suite._server
    os.kill(server.server_pid, signal.SIGKILL)  # mariadbd itself, inside its namespace
    server.process.wait(timeout=20)  # bubblewrap ends with it
    assert not server.running()
    with pytest.raises(DBBenchServerError):
        env.step(execute_action("SELECT 1"))
    assert _play(suite, "test-100").info["won"]  # a fresh server for the next episode
    suite.close()


@needs_server
@pytest.mark.slow
def test_gold_300_and_commit_empty_on_every_task(suite):
    won, empty_won = set(), set()
    for spec in suite.tasks("test"):
        if _play(suite, spec.id).info["won"]:
            won.add(spec.id)
        if _play(suite, spec.id, [commit_action([])]).info["won"]:
            empty_won.add(spec.id)
    assert {s.id for s in suite.tasks("test")} - won == KNOWN_GOLD_MISMATCH
    assert not empty_won


@needs_server
def test_agent_sql_reads_and_writes_no_host_file(suite, tmp_path):
    """LOAD_FILE, INTO OUTFILE and LOAD DATA LOCAL reach no host file: the episode's account
    holds no FILE privilege, LOCAL is off, and the server sees no host folder."""
    secret = tmp_path / "secret.txt"
    secret.write_text("host secret")
    secret.chmod(0o644)
    target = tmp_path / "written.txt"
    env = suite.make_env("test-0")
    env.reset(seed=0)
    try:
        read = env.step(execute_action(f"SELECT LOAD_FILE('{secret}')"))
        write = env.step(execute_action(f"SELECT 1 INTO OUTFILE '{target}'"))
        local = env.step(execute_action(
            f"LOAD DATA LOCAL INFILE '{secret}' INTO TABLE `Jiu-Jitsu Championships Results`"))
    finally:
        env.close()
    assert "host secret" not in read.observation and "None" in read.observation
    assert "the FILE privilege" in write.observation and not target.exists()
    assert "host secret" not in local.observation and local.observation.split()[0].isdigit()


@needs_server
def test_grade_reads_the_table_on_the_harness_connection(suite):
    """An INSERT task's hash is computed on the harness's own connection after the agent's is
    closed: a table lock the agent's session holds does not block it, and a temporary table
    the agent made under the task table's name does not stand in for the real one."""
    insert = next(spec.id for spec in suite.tasks("test") if spec.task_type == "INSERT")
    env = suite.make_env(insert)
    env.reset(seed=0)
    table = env.task.tables[0]["table_name"]
    gold = env.oracle_action()
    locked = env.step(execute_action(f"LOCK TABLES `{table}` WRITE"))
    assert locked.observation == "[]"
    assert env.step(gold).reward == 0.0  # the gold SQL, under the agent's own lock
    shadow = env.step(execute_action(f"CREATE TEMPORARY TABLE `{table}` AS SELECT 1 AS a"))
    assert shadow.observation == "[]"
    result = env.step(env.oracle_action())  # commit: graded on the real table
    env.close()
    assert result.terminated and result.info["won"]
