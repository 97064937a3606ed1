"""Bad τ-bench input through ``harness run``: one line, exit 2, before any episode plays."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from tasks.taubench.data import data_dir

REPO = Path(__file__).resolve().parents[3]


def _run_one_line(tmp_path: Path, **env: str) -> str:
    """``harness run`` of one retail task in a subprocess with `env` added; the single
    stderr line of a user error (exit 2, no traceback), or the test fails."""
    done = subprocess.run(
        [sys.executable, "-m", "harness.cli", "run", "--policy", "random", "--suite",
         "taubench-retail", "--tasks", "1", "--db", str(tmp_path / "runs.db")],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
        env={**os.environ, "PYTHONPATH": str(REPO), "HF_HUB_OFFLINE": "1", **env})
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert "Traceback" not in done.stderr and len(lines) == 1, done.stderr
    assert lines[0].startswith("harness run: error: ") and "episodes failed" not in lines[0]
    return lines[0]


def test_unknown_user_spec_is_one_line_exit_2(tmp_path):
    line = _run_one_line(tmp_path, TAUBENCH_USER="scriptd")
    assert "unknown τ-bench user simulator 'scriptd'" in line
    assert "did you mean 'scripted'" in line


def test_corrupt_data_file_is_one_line_exit_2(tmp_path):
    copy = tmp_path / "taubench"
    shutil.copytree(data_dir(), copy)
    target = copy / "retail" / "orders.json"
    target.chmod(0o644)
    target.write_bytes(target.read_bytes()[:1000])  # cut short, as an interrupted download
    line = _run_one_line(tmp_path, TAUBENCH_DATA=str(copy))
    assert f"malformed JSON in {target}" in line
