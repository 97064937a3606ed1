"""Ctrl-C and SIGTERM end a run promptly, storing what finished (issue 18, failure 1)."""

import re
import signal
import sqlite3
import subprocess
import sys
import time

import pytest

from cli_support import child_env

RUN = ["run", "--policy", "oracle,random", "--suite", "sokoban", "--tasks", "40",
       "--eval-seeds", "30", "--db", "big.db"]  # 2 x 40 x 30 = 2,400 episodes


STOP_BOUND_S = 5.0


def _keys(db):
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as con:
        rows = con.execute("SELECT policy_id, suite, task_id, eval_seed, sample FROM "
                           "episodes").fetchall()
    con.close()
    return rows


def _stored(db):
    try:
        return len(_keys(db))
    except sqlite3.Error:
        return 0


@pytest.mark.slow
@pytest.mark.timeout(900)
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_signal_stops_a_long_run_within_2s_and_a_rerun_completes_it(signum, tmp_path):
    db = tmp_path / "big.db"
    proc = subprocess.Popen([sys.executable, "-m", "harness.cli", *RUN], cwd=tmp_path,
                            env=child_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    deadline = time.monotonic() + 300
    while _stored(db) < 50:
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.2)
    sent = time.monotonic()
    proc.send_signal(signum)
    try:
        out, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
    elapsed = time.monotonic() - sent
    keys = _keys(db)
    # the target is 2 s (0.3-1.2 s measured on an idle machine); the bound leaves room for
    # a loaded CI machine, and still fails the old runner (16 s on this workload)
    assert elapsed < STOP_BOUND_S, (elapsed, err)
    assert proc.returncode != 0 and "Traceback" not in err, err
    assert 50 <= len(keys) < 2400 and len(set(keys)) == len(keys)
    said = re.search(r"stopped after (\d+) episodes", err)
    if said:  # what the run reports as played is exactly what is stored
        assert int(said.group(1)) == len(keys), err
    again = subprocess.run([sys.executable, "-m", "harness.cli", *RUN], cwd=tmp_path,
                           env=child_env(), capture_output=True, text=True, timeout=600)
    assert again.returncode == 0, again.stderr
    assert f"resuming: {len(keys)} of 2400 episodes already stored" in again.stderr
    final = _keys(db)
    assert len(final) == len(set(final)) == 2400
    assert set(keys) <= set(final)
