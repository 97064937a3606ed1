"""The episode writer: everything submitted is committed by its process; a failed write, a
dead writer process or a missing database is one `HarnessError`; an episode submitted alone
inside an event loop is committed without waiting for more; the writer outlives its parent
long enough to commit what it was sent, and a signal meant for the run does not reach it."""

import asyncio
import contextlib
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from harness.core import HarnessError
from harness.episode_writer import GATHER_S, EpisodeWriter
from harness.store import Store, load_episodes
from tests.harness.test_store import STEPS, _episode

REPO_ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def db(tmp_path):
    path = tmp_path / "t.db"
    with Store(path) as store:
        store.begin_run("r", {}, {})
    return path


def _count(path) -> int:
    with contextlib.closing(sqlite3.connect(path)) as con:
        return con.execute("SELECT COUNT(*) FROM episodes").fetchone()[0]


def test_writer_commits_everything(db):
    with EpisodeWriter(db) as writer:
        for i in range(300):
            writer.submit("r", _episode(f"t{i:03d}"), STEPS)
    frame = load_episodes(db)
    assert len(frame) == 300 and frame.task_id.is_unique
    with Store(db, readonly=True) as store:
        assert store.load_steps("r", _episode("t299").key) == STEPS


def test_writer_commits_turns_unless_told_not_to(db):
    import dataclasses

    from tests.harness.test_store import TURNS

    with_turns = [dataclasses.replace(_episode(f"m{i}"), turns=TURNS) for i in range(3)]
    with EpisodeWriter(db) as writer:
        for record in with_turns:
            writer.submit("r", record, STEPS)
        writer.submit("r", _episode("scripted"), STEPS)
    with EpisodeWriter(db, turns=False) as writer:
        writer.submit("r", dataclasses.replace(_episode("skipped"), turns=TURNS), STEPS)
    with Store(db, readonly=True) as store:
        assert all(store.load_turns("r", r.key) == list(TURNS) for r in with_turns)
        assert store.load_turns("r", _episode("scripted").key) == []
        assert store.load_turns("r", _episode("skipped").key) == []
        assert store.load_steps("r", _episode("skipped").key) == STEPS
        assert store.query("SELECT COUNT(*) FROM turns") == [(3,)]


def test_writer_reports_a_failed_write(db):
    writer = EpisodeWriter(db)
    writer.submit("r", _episode("x"), ())
    writer.submit("r", _episode("x"), ())  # duplicate key
    with pytest.raises(HarnessError, match="writing to .* failed: UNIQUE constraint failed"):
        writer.close()


def test_a_missing_database_is_one_error(tmp_path):
    writer = EpisodeWriter(tmp_path / "missing.db")
    writer.submit("r", _episode("x"), STEPS)
    with pytest.raises(HarnessError, match="failed: unable to open database file"):
        writer.close()
    assert not (tmp_path / "missing.db").exists()  # never created by the writer


def test_a_killed_writer_process_fails_the_run(db):
    writer = EpisodeWriter(db)
    writer._process.kill()
    writer._process.wait()
    with pytest.raises(HarnessError, match="writing to .* failed"):
        for i in range(100):  # the first send to the dead process fails
            writer.submit("r", _episode(f"t{i}"), STEPS)
            writer.flush()
        writer.close()
    with pytest.raises(HarnessError, match="writing to .* failed"):
        writer.close()  # and keeps failing


def test_an_episode_alone_is_committed_without_waiting_for_more(db):
    async def submit_one_and_wait() -> int:
        with EpisodeWriter(db) as writer:
            writer.submit("r", _episode("alone"), STEPS)
            deadline = time.monotonic() + 30
            while _count(db) == 0 and time.monotonic() < deadline:
                await asyncio.sleep(GATHER_S)
            return _count(db)

    assert asyncio.run(submit_one_and_wait()) == 1


def test_a_signal_for_the_run_does_not_reach_the_writer(db):
    writer = EpisodeWriter(db)
    assert os.getpgid(writer._process.pid) != os.getpgid(0)  # its own session
    writer.submit("r", _episode("before"), STEPS)
    writer.flush()
    _wait_until_ignored(writer._process.pid, (signal.SIGINT, signal.SIGTERM))
    os.kill(writer._process.pid, signal.SIGINT)  # even sent to it directly: ignored
    os.kill(writer._process.pid, signal.SIGTERM)
    writer.submit("r", _episode("after"), STEPS)
    writer.close()
    assert sorted(load_episodes(db).task_id) == ["after", "before"]


def _wait_until_ignored(pid, signals):
    """Until the process has set `signals` to ignored (it does so as it starts)."""
    mask = sum(1 << (number - 1) for number in signals)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        with open(f"/proc/{pid}/status") as status:
            ignored = next(int(line.split()[1], 16) for line in status
                           if line.startswith("SigIgn:"))
        if ignored & mask == mask:
            return
        time.sleep(0.01)
    raise AssertionError(f"process {pid} never ignored {signals}")


def test_the_writer_commits_what_it_was_sent_when_its_parent_dies(db):
    parent = textwrap.dedent(f"""
        import os, signal
        from harness.episode_writer import EpisodeWriter
        from tests.harness.test_store import STEPS, _episode
        writer = EpisodeWriter({str(db)!r})
        for i in range(50):
            writer.submit("r", _episode(f"t{{i}}"), STEPS)
        writer.flush()
        os.kill(os.getpid(), signal.SIGKILL)
    """)
    done = subprocess.run([sys.executable, "-c", parent], cwd=REPO_ROOT, timeout=120)
    assert done.returncode == -signal.SIGKILL
    deadline = time.monotonic() + 60
    while _count(db) < 50 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _count(db) == 50


def test_close_returns_once_the_process_has_checkpointed_and_exited(db):
    """When `close` returns, the process has copied the log into the database file and
    exited: a run that returns leaves nothing in flight, and once its store closes too (the
    last connection) the ``-wal`` file is gone, so every later command, and anything that
    reads or copies the file, sees every episode in it (issue 40: a process still
    checkpointing after the run returned undid a test's corruption of the file)."""
    with Store(db) as store:  # the run's own connection, open while the writer closes
        with EpisodeWriter(db) as writer:
            for i in range(2000):  # a log of megabytes: its checkpoint takes a while
                writer.submit("r", _episode(f"t{i}"), STEPS)
        assert writer._process.returncode == 0  # reaped by close, not waited for here
        assert _count(db) == 2000
    wal = db.with_name(db.name + "-wal")
    assert not wal.exists() or wal.stat().st_size == 0
    assert _count(db) == 2000


def test_a_forked_process_holding_the_pipe_does_not_stall_close(db):
    """A pool's worker forked from the run inherits the pipe to the writer: closing the pipe
    is then no end of input, the end-of-input frame is."""
    writer = EpisodeWriter(db)
    writer.submit("r", _episode("x"), STEPS)
    child = os.fork()
    if child == 0:  # holds every descriptor of the test process, the pipe included
        time.sleep(120)
        os._exit(0)
    try:
        started = time.monotonic()
        writer.close()
        assert time.monotonic() - started < 60
        assert _count(db) == 1
    finally:
        os.kill(child, signal.SIGKILL)
        os.waitpid(child, 0)
