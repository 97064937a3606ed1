"""The orchestrator across processes: two `harness run` of one config into one database
split its episodes (each played once in total, both exit 0, counts that add up), and when
one is SIGKILLed the next run plays its claims (at once on the same host, where the dead
process is seen to be gone; after the lease elsewhere: `test_claims.py`)."""

from __future__ import annotations

import re
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
RUN = ["run", "--policy", "oracle,random", "--suite", "sokoban", "--tasks", "40",
       "--eval-seeds", "30", "--db", "shared.db"]  # 2 x 40 x 30 = 2,400 episodes
TOTAL = 2400
PLAYED = re.compile(r"played (\d+) episodes \((\d+) errors\), skipped (\d+) already stored"
                    r"(?:, (\d+) played by a concurrent run)?")


def _env(lease_s: float) -> dict[str, str]:
    import os

    env = {**os.environ, "PYTHONPATH": str(REPO), "HF_HUB_OFFLINE": "1",
           "HARNESS_CLAIM_LEASE_S": str(lease_s)}
    env.pop("COLUMNS", None)
    return env


def _start(cwd: Path, lease_s: float) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "harness.cli", *RUN], cwd=cwd,
                            env=_env(lease_s), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)


def _query(db: Path, sql: str) -> list[tuple]:
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30) as con:
            return con.execute(sql).fetchall()
    except sqlite3.Error:
        return []


def _stored_keys(db: Path) -> list[tuple]:
    return _query(db, "SELECT policy_id, suite, task_id, eval_seed, sample FROM episodes")


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_two_concurrent_runs_of_one_config_play_every_episode_once(tmp_path):
    runs = [_start(tmp_path, lease_s=60) for _ in range(2)]
    outputs = [run.communicate(timeout=600) for run in runs]
    for run, (out, err) in zip(runs, outputs):
        assert run.returncode == 0, err
    counts = [tuple(int(g or 0) for g in PLAYED.search(out).groups()) for out, _ in outputs]
    played = [c[0] for c in counts]
    assert sum(played) == TOTAL, (counts, outputs)  # no episode played twice, none skipped
    assert all(c[1] == 0 for c in counts)
    for played_here, _, skipped, by_others in counts:  # each one accounts for the whole plan
        assert played_here + skipped + by_others <= TOTAL
    keys = _stored_keys(tmp_path / "shared.db")
    assert len(keys) == len(set(keys)) == TOTAL
    owners = _query(tmp_path / "shared.db", "SELECT ended_at FROM run_owners")
    assert len(owners) == 2 and all(ended is not None for (ended,) in owners)
    assert _query(tmp_path / "shared.db", "SELECT COUNT(*) FROM run_claims") == [(0,)]


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_a_sigkilled_runs_claims_are_played_by_the_next_run_at_once(tmp_path):
    db = tmp_path / "shared.db"
    lease_s = 300.0
    first = _start(tmp_path, lease_s)
    deadline = time.monotonic() + 300
    while len(_stored_keys(db)) < 100:
        assert first.poll() is None and time.monotonic() < deadline, first.communicate()
        time.sleep(0.05)
    first.send_signal(signal.SIGKILL)
    first.communicate(timeout=60)
    (dead_owner, ended), = _query(db, "SELECT owner, ended_at FROM run_owners")
    assert ended is None  # killed: it never released anything
    held = _query(db, f"SELECT COUNT(*) FROM run_claims WHERE owner='{dead_owner}' AND done=0")
    stored_before = len(_stored_keys(db))
    assert held[0][0] > 0 and stored_before < TOTAL
    started = time.monotonic()
    second = _start(tmp_path, lease_s)
    out, err = second.communicate(timeout=600)
    assert second.returncode == 0, err
    played, errors, skipped, _ = (int(g or 0) for g in PLAYED.search(out).groups())
    keys = _stored_keys(db)
    assert len(keys) == len(set(keys)) == TOTAL  # the dead run's claims were played, once
    assert errors == 0 and skipped + played == TOTAL
    assert time.monotonic() - started < lease_s  # the dead process seen gone, no lease wait
    remaining = _query(db, "SELECT COUNT(*) FROM run_claims")
    assert remaining == [(0,)]
