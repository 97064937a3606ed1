"""`harness quickstart`: the scripted policies on every embedded suite, in about a minute,
then an audit of each suite and a report folder."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harness.config import RunConfig

QUICKSTART_SUITES = ("frozenlake@1", "frozenlake-slippery@1", "sokoban@1", "minesweeper@1")
QUICKSTART_POLICIES = ("oracle", "random", "noop")
QUICKSTART_REPORT = Path("reports") / "quickstart"
QUICKSTART_AUDIT_TASKS = 20
NEXT_STEPS = (
    ("τ-bench retail and airline (a tool-calling agent and a simulated user; TAUBENCH_USER="
     "scripted, the default, or openai:MODEL@URL)",
     "harness run --policy oracle,random --suite taubench-retail --tasks 20 --db {db}"),
    ("AgentBench DB-Bench (SQL on a MariaDB server the suite starts; needs mariadb-server)",
     "harness run --policy oracle,random --suite dbbench --tasks 20 --db {db}"),
)
"""The quickstart's "next steps": (what, example command), ``{db}`` the quickstart's store."""


def quickstart_config(db: str = "results/harness.db", n_tasks: int = 40) -> RunConfig:
    """The quickstart run: 3 scripted policies x 4 suites x `n_tasks` test tasks x 2 eval seeds."""
    return RunConfig(policies=QUICKSTART_POLICIES, suites=QUICKSTART_SUITES, split="test",
                     n_tasks=n_tasks, eval_seeds=(0, 1), db=db, run_id="quickstart")


def finish_quickstart(summary: Any, db: str, *, out: str | Path = QUICKSTART_REPORT,
                      n_tasks: int = QUICKSTART_AUDIT_TASKS) -> list[str]:
    """After the quickstart run: audit each embedded suite (`n_tasks` test tasks, random base
    policy, k=8) and write a report folder to `out`. Returns the lines to print.

    `summary` is the run's `harness.runner.RunSummary` (unused beyond its presence: the
    report reads the store)."""
    from harness.audit import AuditConfig, audit_suite
    from harness.audit.text import one_line
    from harness.report.build import build_report

    lines = []
    for suite in QUICKSTART_SUITES:
        result = audit_suite(AuditConfig(suite, n_tasks=n_tasks, db=str(db)))
        lines.append(one_line(result))
    command = f"harness report --db {db} --out {Path(out).as_posix()}"
    report = build_report(db, out, command=command)
    lines.append(f"report: {report.out}/ ({len(report.files)} files: tables/ in Markdown and "
                 f"LaTeX, figures/ in PDF and PNG, index.html leaderboard page); regenerate "
                 f"with `{command}`")
    lines.append(f"browse runs, episodes and comparisons: harness view --db {db}")
    return lines + next_steps(db)


def next_steps(db: str) -> list[str]:
    """The "next steps" lines: the suites beyond the embedded ones, one command each."""
    return ["next steps:", *(f"  {what}: {command.format(db=db)}"
                             for what, command in NEXT_STEPS)]
