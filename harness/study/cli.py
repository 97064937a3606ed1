"""`harness study run|status|report FILE`: a declared grid of recipes x training seeds x
evaluation seeds, trained, evaluated and judged against a baseline arm.

    harness study run examples/study_smoke.toml
    harness study status examples/study_smoke.toml
    harness study report examples/study_smoke.toml --out reports/study-smoke
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

__all__ = ["add_commands", "cmd_study"]


def add_commands(subparsers: Any) -> None:
    """Add ``study`` to the `harness` command line."""
    p = subparsers.add_parser("study", help="declared grids of training recipes x seeds with "
                              "per-cell verdicts (better / worse / equivalent / inconclusive)")
    p.add_argument("action", choices=("run", "status", "report"),
                   help="run: train and evaluate every unfinished job (resumable); status: "
                   "a table of arms and progress; report: verdicts, figures and methods")
    p.add_argument("file", help="study TOML (see examples/study_smoke.toml)")
    p.add_argument("--arms", nargs="+", default=(), help="run: only these arms")
    p.add_argument("--out", help="report: output folder (default: the study's report_dir)")
    p.add_argument("--executor", default="local", help="run: 'local', 'ray' (a local Ray "
                   "instance) or 'ray:ADDRESS': each arm's jobs as a Ray task, the arms built "
                   "from others (grafts, merges) after them")
    p.set_defaults(func=cmd_study)


def _say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def cmd_study(args: argparse.Namespace) -> int:
    from harness.core import ConfigError
    from harness.study.config import load_study_config

    study = load_study_config(args.file)
    if args.action == "run":
        from harness.core import require
        from harness.executors.spec import parse_executor

        spec = parse_executor(args.executor)
        require("transformers", "train", "training").utils.logging.disable_progress_bar()
        if spec.kind == "ray":
            if args.arms:
                raise ConfigError("--arms runs locally; leave it out with --executor ray")
            from harness.study.ray_jobs import run_study_on_ray

            status = run_study_on_ray(args.file, spec, _say)
        else:
            from harness.study.run import run_study

            status = run_study(study, on_event=_say, arms=tuple(args.arms))
        print(status.to_string(index=False))
        return 0
    if args.action == "status":
        from harness.store import Store
        from harness.study.progress import format_remaining, remaining_work
        from harness.study.run import load_study_jobs, study_status

        with Store(study.db) as store:
            status = study_status(study, store)
            print(status.to_string(index=False))
            print(format_remaining(remaining_work(status, load_study_jobs(store, study))))
        return 0
    from harness.store import Store
    from harness.study.analysis import analyse_study
    from harness.study.report import verdict_table, write_report
    from harness.study.run import load_study_jobs

    analysis = analyse_study(study)
    with Store(study.db) as store:
        jobs = load_study_jobs(store, study)
    path = write_report(study, analysis, args.out or study.report_dir, jobs=jobs)
    for mode, rule in analysis.rules.items():
        print(f"rule ({mode}): {rule}")
    print(verdict_table(analysis.cells).to_string(index=False))
    if analysis.association is not None:
        print(analysis.association.round(3).to_string(index=False))
    print(f"report: {path}")
    return 0
