"""Store failures of issue 18: the writer thread failing (2), two runs starting at once (4),
a full disk (7), read-only databases (10), corrupted pages (5)."""

import multiprocessing
import resource
import shutil
import sqlite3
import subprocess

import pytest

from harness.store import Store

BWRAP = shutil.which("bwrap")
needs_bwrap = pytest.mark.skipif(BWRAP is None, reason="bubblewrap (.ci/system-packages)")


def _rows(db):
    with sqlite3.connect(db) as con:
        return con.execute("SELECT COUNT(*) FROM episodes").fetchone()[0]


def _few_descriptors():
    resource.setrlimit(resource.RLIMIT_NOFILE, (10, 10))


def test_writer_that_cannot_open_the_database_fails_the_run(harness, tmp_path):
    """(2) `ulimit -n 10`: the run used to print "played 20 (0 errors)" with 0 rows stored."""
    done = harness("run", "--policy", "oracle", "--suite", "frozenlake", "--tasks", "20",
                   "--db", "fd.db", preexec_fn=_few_descriptors)
    assert done.returncode != 0, done.stdout
    assert "played" not in done.stdout
    assert "Traceback" not in done.stderr, done.stderr
    assert len([line for line in done.stderr.splitlines() if "error" in line]) == 1
    if (tmp_path / "fd.db").exists():  # nothing reported as played that is not stored
        assert _rows(tmp_path / "fd.db") == 0


def _begin(db, barrier, results):
    barrier.wait()
    try:
        with Store(db) as store:
            results.put(store.begin_run("same-run", {"a": 1}, {"code_version": "x"}))
    except Exception as exc:  # noqa: BLE001 - reported to the parent
        results.put(f"{type(exc).__name__}: {exc}")


def test_runs_starting_at_the_same_instant_share_one_row(tmp_path):
    """(4) `begin_run` was SELECT then INSERT outside a transaction: an IntegrityError. Also
    "database is locked" at open: switching a new database to WAL fails at once, without the
    busy handler, while another process switches it (about one try in 20 on a loaded machine;
    40 tries)."""
    context = multiprocessing.get_context("fork")
    for attempt in range(40):
        db = tmp_path / f"race{attempt}.db"
        if attempt % 2:
            Store(db).close()  # an existing database, then a fresh one
        n = 6
        barrier, results = context.Barrier(n), context.Queue()
        procs = [context.Process(target=_begin, args=(db, barrier, results)) for _ in range(n)]
        for proc in procs:
            proc.start()
        outcomes = [results.get(timeout=60) for _ in procs]
        for proc in procs:
            proc.join(60)
        assert sorted(outcomes, key=str) == [False] * (n - 1) + [True], outcomes
        with Store(db) as store:
            assert store.runs()["run_id"].tolist() == ["same-run"]


@needs_bwrap
def test_full_disk_reports_the_real_error(harness, tmp_path):
    """(7) A full disk said "cannot rollback - no transaction is active"."""
    wrap = [BWRAP, "--dev-bind", "/", "/", "--size", "400000", "--tmpfs", "/mnt"]
    done = harness("run", "--policy", "random", "--suite", "sokoban", "--tasks", "40",
                   "--eval-seeds", "3", "--db", "/mnt/full.db", wrap=wrap)
    line = done.one_line_error()
    assert "database or disk is full" in line
    assert "cannot rollback" not in done.stderr


@needs_bwrap
def test_database_on_a_read_only_mount_is_readable(harness, tmp_path):
    """(10) The store opened read-write and wrote its schema: leaderboard/export failed."""
    folder = tmp_path / "ro"
    folder.mkdir()
    assert harness("run", "--policy", "oracle,random", "--suite", "frozenlake", "--tasks", "6",
                   "--db", "ro/r.db").returncode == 0
    before = sorted((p.name, p.read_bytes()) for p in folder.iterdir())
    wrap = [BWRAP, "--dev-bind", "/", "/", "--ro-bind", str(folder), str(folder)]
    board = harness("leaderboard", "--db", "ro/r.db", "--format", "markdown", wrap=wrap)
    assert board.returncode == 0, board.stderr
    assert "| frozenlake@1 | oracle | 100.0 |" in board.stdout
    export = harness("export", "out.csv", "--db", "ro/r.db", wrap=wrap)
    assert export.returncode == 0, export.stderr
    assert len((tmp_path / "out.csv").read_text().splitlines()) == 1 + 12
    report = harness("report", "--db", "ro/r.db", "--out", "rep", "--no-figures", wrap=wrap)
    assert report.returncode == 0, report.stderr
    assert sorted((p.name, p.read_bytes()) for p in folder.iterdir()) == before


def test_corrupted_database_is_one_line_for_every_command(harness, tmp_path):
    """(5) A corrupted page gave a `DatabaseError` traceback (leaderboard, export, run).
    The run that returned left every page in ``c.db`` (no ``-wal`` beside it, no writer still
    checkpointing into it), so the corruption reaches what every later command reads (issue
    40: under load it once did not, and the leaderboard read intact pages)."""
    assert harness("run", "--policy", "oracle,random", "--suite", "frozenlake", "--tasks", "20",
                   "--db", "c.db").returncode == 0
    assert sorted(path.name for path in tmp_path.glob("c.db*")) == ["c.db"]
    data = bytearray((tmp_path / "c.db").read_bytes())
    for page in range(1, len(data) // 4096):
        data[page * 4096 + 100: page * 4096 + 300] = b"\x55" * 200
    (tmp_path / "c.db").write_bytes(bytes(data))
    for args in (["leaderboard"], ["export", "e.csv"], ["compare", "--a", "oracle", "--b",
                 "random"], ["run", "--policy", "oracle", "--suite", "frozenlake"]):
        line = harness(*args, "--db", "c.db").one_line_error()
        assert "malformed" in line or "not a database" in line, line
