"""Helpers of the reliability probes (issue 18): the `harness` command in a subprocess, run
from the checkout under test, and what a user sees of it."""

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Finished:
    returncode: int
    stdout: str
    stderr: str

    def one_line_error(self) -> str:
        """The single error line of a user error (exit 2, no traceback); fails otherwise."""
        assert self.returncode == 2, (self.returncode, self.stdout, self.stderr)
        assert "Traceback" not in self.stderr, self.stderr
        lines = [line for line in self.stderr.splitlines() if line.strip()]
        assert len(lines) == 1 and "error:" in lines[0], self.stderr
        return lines[0]


def child_env(**extra: str) -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": str(REPO), "HF_HUB_OFFLINE": "1", **extra}
    env.pop("COLUMNS", None)
    return env


def run_harness(*args: str, cwd: Path, timeout: float = 120, wrap: list[str] | None = None,
                **popen: object) -> Finished:
    command = [*(wrap or []), sys.executable, "-m", "harness.cli", *args]
    done = subprocess.run(command, cwd=cwd, env=child_env(), capture_output=True, text=True,
                          timeout=timeout, **popen)
    return Finished(done.returncode, done.stdout, done.stderr)
