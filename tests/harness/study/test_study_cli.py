"""`harness study run|status|report` as a user runs them, in subprocesses: SIGKILL during
training and again during evaluation, then a rerun that finishes with every (cell, seed,
episode) stored once, and the report written. This is also the CI smoke of a whole study
(about 30 s on two idle cores)."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from tests.harness.study.support import write_study

REPO = Path(__file__).resolve().parents[3]
pytestmark = pytest.mark.slow


def _study(tmp_path: Path) -> str:
    path = write_study(tmp_path, factors='"optim.lr" = [1e-4, 1e-3]',
                       eval_section="n_tasks = 3\neval_seeds = [0, 1]\nsamples = 2\n"
                                    "concurrency = 16")
    text = Path(path).read_text().replace("seeds = [0, 1, 2]", "seeds = [0, 1]")
    text = text.replace("updates = 2\n", "updates = 3\ncheckpoint_every = 1\n")
    Path(path).write_text(text)
    return path


def _harness(*args: str) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(REPO), "HF_HUB_OFFLINE": "1"}
    return subprocess.Popen([sys.executable, "-m", "harness.cli", *args], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _kill_when(process: subprocess.Popen, marker: str) -> list[str]:
    """SIGKILL `process` as soon as a line of its stderr contains `marker`."""
    seen = []
    assert process.stderr is not None
    for line in process.stderr:
        seen.append(line.rstrip())
        if marker in line:
            process.send_signal(signal.SIGKILL)
            break
    process.wait(timeout=60)
    assert process.returncode == -signal.SIGKILL, "\n".join(seen[-20:])
    return seen


def _keys(db: Path) -> list[tuple]:
    with sqlite3.connect(db) as con:
        return con.execute("SELECT run_id, policy_id, suite, task_id, eval_seed, sample FROM "
                           "episodes WHERE status = 'ok'").fetchall()


@pytest.mark.timeout(600)
def test_killed_during_training_and_evaluation_the_rerun_stores_everything_once(tmp_path):
    path = _study(tmp_path)
    # during training: the second update of the first trained cell
    seen = _kill_when(_harness("study", "run", path), "lr=0.0001 seed 0: update 2/3")
    assert any("training (3 updates)" in line for line in seen)
    # during evaluation: once the sampled evaluation of a trained model has begun
    seen = _kill_when(_harness("study", "run", path), "lr=0.0001 seed 1: evaluating sampled")
    assert any("resuming training at update" in line for line in seen), seen
    last = _harness("study", "run", path)
    out, err = last.communicate(timeout=500)
    assert last.returncode == 0, err[-3000:]
    keys = _keys(tmp_path / "h.db")
    assert len(keys) == len(set(keys)) == (2 * 2 + 1) * (3 * 2 + 3 * 2 * 2)
    status = _harness("study", "status", path)
    out, err = status.communicate(timeout=120)
    assert status.returncode == 0, err
    *table, left = out.splitlines()
    rows = [line.split() for line in table[1:]]
    assert len(rows) == 5 and all(row[3] == row[4] for row in rows)  # step == updates
    assert left.startswith("complete"), left
    report = _harness("study", "report", path)
    out, err = report.communicate(timeout=300)
    assert report.returncode == 0, err[-3000:]
    assert (tmp_path / "report" / "report.md").is_file() and "rule (greedy)" in out


@pytest.mark.timeout(900)
def test_a_study_runs_on_a_local_ray_instance(tmp_path):
    """`--executor ray`: each arm's jobs a Ray task (two at a time on two cores), the merge
    built after its sources; every (arm, seed, episode) stored once, as locally."""
    path = _study(tmp_path)
    with open(path, "a") as handle:
        handle.write('\n[[merges]]\nname = "m-ram"\nmethod = "ram"\n'
                     'sources = ["lr=0.0001", "lr=0.001"]\n')
    run = _harness("study", "run", path, "--executor", "ray")
    out, err = run.communicate(timeout=800)
    assert run.returncode == 0, err[-3000:]
    done = {line.split(":")[0] for line in err.splitlines() if line.endswith("every job done")}
    assert done == {"start", "lr=0.0001", "lr=0.001", "m-ram"}
    keys = _keys(tmp_path / "h.db")
    assert len(keys) == len(set(keys)) == (2 * 2 + 1 + 2) * (3 * 2 + 3 * 2 * 2)
    rows = [line.split() for line in out.splitlines()[1:]]
    assert len(rows) == 7 and all(row[3] == row[4] for row in rows)
