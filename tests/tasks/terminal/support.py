"""Helpers the terminal tests share: a TB1 task folder written from its parts, and playing a
task's own solution to the end."""

from __future__ import annotations

from pathlib import Path


def write_tb1_task(root: Path, name: str, *, dockerfile: str, solution: str, test: str,
                   instruction: str = "Do it.", limits: str = "max_test_timeout_sec: 60\n"
                   ) -> Path:
    """`root`/`name`: task.yaml, Dockerfile, a pytest run-tests.sh, tests/test_outputs.py
    (`test`) and solution.sh (`solution`)."""
    task = root / name
    (task / "tests").mkdir(parents=True)
    (task / "task.yaml").write_text(f"instruction: |-\n  {instruction}\n{limits}")
    (task / "Dockerfile").write_text(dockerfile)
    (task / "run-tests.sh").write_text("#!/bin/bash\npytest $TEST_DIR/test_outputs.py -rA\n")
    (task / "tests" / "test_outputs.py").write_text(test)
    (task / "solution.sh").write_text(f"#!/bin/bash\n{solution}\n")
    return task


def play_oracle(env):
    """Reset `env` and play its oracle's actions until the episode ends; the last step."""
    env.reset(seed=0)
    result = env.step(env.oracle_action())
    while not (result.terminated or result.truncated):
        result = env.step(env.oracle_action())
    return result
