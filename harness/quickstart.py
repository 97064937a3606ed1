"""`harness quickstart`: the scripted policies on every embedded suite, in about a minute."""

from __future__ import annotations

from harness.config import RunConfig

QUICKSTART_SUITES = ("frozenlake@1", "frozenlake-slippery@1", "sokoban@1", "minesweeper@1")
QUICKSTART_POLICIES = ("oracle", "random", "noop")


def quickstart_config(db: str = "results/harness.db", n_tasks: int = 40) -> RunConfig:
    """The quickstart run: 3 scripted policies x 4 suites x `n_tasks` test tasks x 2 eval seeds."""
    return RunConfig(policies=QUICKSTART_POLICIES, suites=QUICKSTART_SUITES, split="test",
                     n_tasks=n_tasks, eval_seeds=(0, 1), db=db, run_id="quickstart")
