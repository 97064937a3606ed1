"""Every bad input is one line and exit 2 (issue 18, failures 5 and 6); failed runs do not exit
0 (8); `--timeout` and `--concurrency` mean something for inline suites (1)."""

import sqlite3

import pytest


def _rows(db, status=None):
    with sqlite3.connect(db) as con:
        sql = "SELECT COUNT(*) FROM episodes" + (" WHERE status=?" if status else "")
        return con.execute(sql, (status,) if status else ()).fetchone()[0]


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    """A folder with a small results database and the bad paths of the cases."""
    from harness.cli import main

    folder = tmp_path_factory.mktemp("cli")
    assert main(["run", "--policy", "oracle,random", "--suite", "frozenlake", "--tasks", "4",
                 "--db", str(folder / "ok.db")]) == 0
    (folder / "folder").mkdir()
    (folder / "folder.csv").mkdir()
    (folder / "afile").write_text("")
    (folder / "latin1.toml").write_bytes("policies = ['caf\u00e9']\n".encode("latin-1"))
    return folder


IN_PROCESS = {  # cases that cannot hang or exhaust memory: `harness.cli.main` in this process
    "config is a directory": ["run", "--config", "folder"],
    "config is not UTF-8": ["run", "--config", "latin1.toml"],
    "export into a missing folder": ["export", "missing/out.csv", "--db", "ok.db"],
    "export onto a folder": ["export", "folder.csv", "--db", "ok.db"],
    "report where it cannot write": ["report", "--db", "ok.db", "--out", "afile/report"],
    "compare --seed -1": ["compare", "--a", "oracle", "--b", "random", "--seed", "-1",
                          "--db", "ok.db"],
    "serve port 70000": ["serve", "--model", "echo", "--port", "70000"],
    "serve-fhir port 70000": ["serve-fhir", "--port", "70000"],
    "serve port 0": ["serve", "--model", "echo", "--port", "0"],
}
SUBPROCESS = {  # a MemoryError or an endless plan: in a child with a time limit
    "eval seeds 1e10": ["run", "--policy", "oracle", "--suite", "frozenlake", "--eval-seeds",
                        "10000000000", "--db", "x.db"],
    "samples 1e12": ["run", "--policy", "oracle", "--suite", "frozenlake", "--samples",
                     "1000000000000", "--db", "x.db"],
}


@pytest.mark.parametrize("case", sorted(IN_PROCESS))
def test_bad_input_is_one_line_and_exit_2(case, workdir, capsys, monkeypatch):
    from harness.cli import main

    from cli_support import Finished

    monkeypatch.chdir(workdir)
    capsys.readouterr()
    try:
        code = main(IN_PROCESS[case])
    except SystemExit as exc:  # argparse's own errors
        code = exc.code
    out, err = capsys.readouterr()
    Finished(code, out, err).one_line_error()


@pytest.mark.parametrize("case", sorted(SUBPROCESS))
def test_huge_plan_is_one_line_and_exit_2(case, harness, tmp_path):
    harness(*SUBPROCESS[case], timeout=60).one_line_error()
    assert not (tmp_path / "x.db").exists() or _rows(tmp_path / "x.db") == 0


def test_every_episode_errored_is_not_exit_0(harness, tmp_path):
    """(8) `--policy noop:x` with an unknown trivial action: every episode errors."""
    done = harness("run", "--policy", "noop:x", "--suite", "frozenlake", "--tasks", "1",
                   "--db", "e.db")
    assert done.returncode != 0, (done.stdout, done.stderr)
    assert "Traceback" not in done.stderr


def test_a_run_that_plays_nothing_is_not_exit_0(harness, tmp_path):
    """(8) `--task-type 9x9` selects no task: nothing played is not a success."""
    done = harness("run", "--policy", "oracle", "--suite", "frozenlake", "--task-type", "9x9",
                   "--db", "n.db")
    assert done.returncode != 0, (done.stdout, done.stderr)
    assert "Traceback" not in done.stderr


def test_episode_timeout_applies_to_inline_suites(harness, tmp_path):
    """(1) `--timeout 0.0001` stored 40 `ok` sokoban episodes: the loop never yielded."""
    harness("run", "--policy", "oracle", "--suite", "sokoban", "--tasks", "40", "--timeout",
            "0.0001", "--max-error-rate", "1", "--db", "t.db")
    assert _rows(tmp_path / "t.db") == 40
    assert _rows(tmp_path / "t.db", "ok") < 40
