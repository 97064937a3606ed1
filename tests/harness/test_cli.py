"""The `harness` command line, run as a user runs it: in a subprocess."""

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time

import pytest

from harness.cli import main
from harness.store import load_episodes


def _harness(*args, cwd=None, timeout=600):
    """The command in a subprocess. The limit only stops a hang: `harness list suites` (about
    10 s of CPU) took 251 s under `nice` beside two busy loops on a loaded 2-core machine
    (issue 40), too close to the 300 s this limit was; 600 s is also the per-test limit."""
    return subprocess.run([sys.executable, "-m", "harness.cli", *args], capture_output=True,
                          text=True, cwd=cwd, timeout=timeout)


def _one_line_error(result, *fragments):
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    for fragment in fragments:
        assert fragment in lines[0], lines[0]


def test_list_suites_and_policies():
    suites = _harness("list", "suites")
    assert suites.returncode == 0
    assert "frozenlake@1" in suites.stdout and "sokoban@1" in suites.stdout
    policies = _harness("list", "policies")
    assert {"random", "noop", "oracle"} <= {line.split()[0] for line in policies.stdout.split(
        "\n") if line}


def test_a_reader_that_leaves_early_is_not_an_error():
    """`harness list policies | head -0`: the pipe's reader is gone before the listing is
    written; the command ends quietly (141, as a shell reports SIGPIPE), no traceback."""
    read, write = os.pipe()
    os.close(read)
    try:
        done = subprocess.run([sys.executable, "-m", "harness.cli", "list", "policies"],
                              stdout=write, stderr=subprocess.PIPE, text=True, timeout=300)
    finally:
        os.close(write)
    assert done.returncode == 141 and done.stderr == "", done.stderr


def test_a_broken_pipe_elsewhere_keeps_its_traceback(monkeypatch):
    """Only a reader of standard output that left is quiet: a broken pipe to anything else (a
    worker, a server) is a failure and keeps its traceback."""
    import harness.cli

    def broken(args):
        raise BrokenPipeError("a worker's pipe")

    monkeypatch.setattr(harness.cli, "cmd_list", broken)
    with pytest.raises(BrokenPipeError, match="a worker's pipe"):
        main(["list", "policies"])


def test_run_then_leaderboard_markdown(tmp_path):
    db = str(tmp_path / "r.db")
    result = _harness("run", "--policy", "oracle,random", "--suite", "frozenlake", "--tasks",
                      "5", "--db", db)
    assert result.returncode == 0, result.stderr
    assert "played 10 episodes" in result.stdout
    board = _harness("leaderboard", "--db", db, "--format", "markdown")
    assert board.returncode == 0
    oracle_row = next(line for line in board.stdout.splitlines() if "| oracle |" in line)
    assert "| 100.0 | [100.0, 100.0] | [56.6, 100.0] |" in oracle_row  # Wilson for 5 of 5
    assert "| best |" in oracle_row


def test_export(tmp_path):
    db = str(tmp_path / "r.db")
    assert main(["run", "--policy", "noop", "--suite", "minesweeper", "--tasks", "2",
                 "--db", db]) == 0
    assert main(["export", str(tmp_path / "e.csv"), "--db", db]) == 0
    assert (tmp_path / "e.csv").read_text().startswith("run_id,policy,suite")


@pytest.mark.parametrize("args,fragments", [
    (["run", "--policy", "random", "--suite", "frozenlak"],
     ["unknown suite 'frozenlak'", "did you mean 'frozenlake'"]),
    (["run", "--policy", "oracel", "--suite", "sokoban"],
     ["unknown policy 'oracel'", "did you mean 'oracle'"]),
    (["run", "--policy", "random", "--suite", "sokoban", "--samples", "-2"],
     ["samples must be >= 1"]),
    (["run", "--policy", "random", "--suite", "sokoban", "--tasks", "-1"],
     ["n_tasks must be >= 0"]),
    (["run", "--policy", "random", "--suite", "sokoban", "--eval-seeds", "0"],
     ["eval_seeds as a count must be >= 1"]),
    (["run", "--suite", "sokoban"], ["needs --policy and --suite"]),
    (["leaderboard", "--db", "/nonexistent/dir/x.db"], ["no results database"]),
])
def test_user_errors_are_one_line_and_exit_2(args, fragments, tmp_path):
    _one_line_error(_harness(*args, "--db", str(tmp_path / "x.db")) if args[0] == "run"
                    else _harness(*args), *fragments)


TASK_IDS = ["8x8-0270", "4x4-0252", "4x4-0250"]
"""frozenlake@1 test tasks, in the order a user lists them."""


def test_run_plays_exactly_the_listed_task_ids(tmp_path):
    db = str(tmp_path / "r.db")
    result = _harness("run", "--policy", "random,oracle", "--suite", "frozenlake@1",
                      "--task-ids", ",".join(TASK_IDS[:2]), "--task-ids", TASK_IDS[2],
                      "--eval-seeds", "2", "--no-turns", "--db", db)
    assert result.returncode == 0, result.stderr
    assert "played 12 episodes" in result.stdout
    frame = load_episodes(db)
    assert sorted(frame.task_id.unique()) == sorted(TASK_IDS)
    assert frame.groupby("policy").size().to_dict() == {"oracle": 6, "random": 6}
    assert frame[frame.policy == "oracle"].success.all()
    run_id = frame.run_id.iloc[0]
    with sqlite3.connect(db) as con:
        stored = con.execute("SELECT config FROM runs WHERE run_id=?", (run_id,)).fetchone()[0]
    con.close()
    assert json.loads(stored)["task_ids"] == TASK_IDS  # in the order given
    config = tmp_path / "run.toml"  # the same run from a config file: nothing left to play
    config.write_text('[run]\npolicies = ["random", "oracle"]\nsuites = ["frozenlake@1"]\n'
                      f'eval_seeds = 2\ntask_ids = {json.dumps(TASK_IDS)}\n'
                      'store_turns = false\n')
    again = _harness("run", "--config", str(config), "--db", db)
    assert again.returncode == 0, again.stderr
    assert "played 0 episodes" in again.stdout and run_id in again.stdout


@pytest.mark.parametrize("extra,fragments", [
    (["--task-ids", "4x4-0252,4x4-252"],
     ["unknown test task of frozenlake@1 '4x4-252'", "did you mean '4x4-0252'"]),
    (["--task-ids", "4x4-0001"],
     ["'4x4-0001' is in the train split of frozenlake@1", "--split train"]),
    (["--task-ids", "4x4-0252", "--tasks", "3"], ["task_ids and n_tasks both choose"]),
    (["--task-ids", "4x4-0252", "--task-type", "4x4"], ["task_ids and task_types both"]),
    (["--task-ids", "4x4-0252,4x4-0252"], ["task_ids lists '4x4-0252' more than once"]),
    (["--task-ids", ","], ["--task-ids needs at least one task id"]),
])
def test_task_id_mistakes_are_one_line_and_store_nothing(extra, fragments, tmp_path):
    db = tmp_path / "x.db"
    _one_line_error(_harness("run", "--policy", "random", "--suite", "frozenlake@1", *extra,
                             "--db", str(db)), *fragments)
    assert not db.exists() or load_episodes(db).empty


def test_malformed_toml_and_unknown_key(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text('policies = ["random"\nsuites = 3\n')
    _one_line_error(_harness("run", "--config", str(bad)), "malformed TOML")
    typo = tmp_path / "typo.toml"
    typo.write_text('policies = ["random"]\nsuites = ["sokoban"]\nsample = 2\n')
    _one_line_error(_harness("run", "--config", str(typo)), "unknown run config key 'sample'",
                    "did you mean 'samples'")


def test_unwritable_database_path(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    _one_line_error(_harness("run", "--policy", "random", "--suite", "sokoban", "--db",
                             str(blocker / "r.db")), "cannot open results database")


@pytest.mark.slow
def test_sigkill_mid_run_then_rerun_stores_every_episode_once(tmp_path):
    db = tmp_path / "kill.db"
    args = ["run", "--policy", "random,oracle", "--suite", "frozenlake", "--eval-seeds", "60",
            "--db", str(db), "--concurrency", "4"]
    process = subprocess.Popen([sys.executable, "-m", "harness.cli", *args],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    stored = 0
    deadline = time.time() + 120
    while time.time() < deadline and process.poll() is None:
        try:
            with sqlite3.connect(db, timeout=5) as conn:
                stored = conn.execute("SELECT COUNT(*) FROM episodes").fetchone()[0]
        except sqlite3.OperationalError:
            stored = 0
        if stored >= 300:
            break
        time.sleep(0.02)
    assert process.poll() is None, "the run finished before it could be interrupted"
    os.kill(process.pid, signal.SIGKILL)
    process.wait()
    with sqlite3.connect(db) as conn:
        interrupted = conn.execute("SELECT COUNT(*) FROM episodes").fetchone()[0]
    planned = 2 * 100 * 60  # policies x frozenlake test tasks x eval seeds
    assert 300 <= interrupted < planned

    result = _harness(*args)
    assert result.returncode == 0, result.stderr
    assert f"skipped {interrupted} already stored" in result.stdout
    frame = load_episodes(db)
    assert len(frame) == planned
    assert not frame.duplicated(["policy", "suite", "task_id", "eval_seed", "sample"]).any()
    with sqlite3.connect(db) as conn:
        trajectories = conn.execute("SELECT COUNT(*), COUNT(DISTINCT policy_id || suite || "
                                    "task_id || eval_seed || sample) FROM trajectories").fetchone()
        mismatched = conn.execute(
            "SELECT COUNT(*) FROM episodes e JOIN trajectories t USING (run_id, policy_id, "
            "suite, task_id, eval_seed, sample) WHERE e.n_steps != t.n_steps").fetchone()[0]
    assert trajectories == (planned, planned) and mismatched == 0
    assert frame[frame.policy == "oracle"].success.all()

    fresh = tmp_path / "fresh.db"
    fresh_args = [a if a != str(db) else str(fresh) for a in args]
    assert _harness(*fresh_args).returncode == 0
    reference = load_episodes(fresh)
    columns = ["policy", "task_id", "eval_seed", "success", "n_steps", "total_reward"]
    assert frame[columns].reset_index(drop=True).equals(reference[columns].reset_index(drop=True))
