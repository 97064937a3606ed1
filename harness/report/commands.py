"""``harness report``: tables, figures and the leaderboard page of a results store."""

from __future__ import annotations

import argparse
import shlex

__all__ = ["add_commands", "cmd_report", "report_command"]


def add_commands(subparsers) -> None:
    p = subparsers.add_parser("report", help="write tables (Markdown, LaTeX), figures (PDF, "
                              "PNG) and a static leaderboard page into a report folder")
    p.add_argument("--db", default="results/harness.db", help="results database path")
    p.add_argument("--out", default="reports/report", help="report folder (default: "
                   "reports/report)")
    p.add_argument("--run-id", dest="run_ids", action="append",
                   help="only these runs (repeat; default: every run except audit runs)")
    p.add_argument("--split", help="split of the paper tables and figures (default: test "
                   "when present); the page shows every split")
    p.add_argument("--margin", type=float, default=0.05,
                   help="equivalence margin of the comparison table (default: 0.05)")
    p.add_argument("--max-compare", type=int, default=3,
                   help="compare the best of each suite with the next N-1 (default: 3)")
    p.add_argument("--no-figures", dest="figures", action="store_false",
                   help="skip the figures")
    p.set_defaults(func=cmd_report)


def report_command(args: argparse.Namespace) -> str:
    """The canonical command that regenerates the report of ``args``."""
    words = ["harness", "report", "--db", args.db, "--out", args.out]
    for run_id in args.run_ids or ():
        words += ["--run-id", run_id]
    if args.split:
        words += ["--split", args.split]
    if args.margin != 0.05:
        words += ["--margin", f"{args.margin:g}"]
    if args.max_compare != 3:
        words += ["--max-compare", str(args.max_compare)]
    if not args.figures:
        words.append("--no-figures")
    return shlex.join(words)


def cmd_report(args: argparse.Namespace) -> int:
    from harness.core import ConfigError
    from harness.report.build import ReportOptions, build_report
    from harness.store import check_output_dir

    if args.max_compare < 2:
        raise ConfigError(f"--max-compare must be >= 2, got {args.max_compare}")
    if not args.margin > 0:
        raise ConfigError(f"--margin must be > 0, got {args.margin}")
    check_output_dir(args.out)
    options = ReportOptions(run_ids=tuple(args.run_ids) if args.run_ids else None,
                            split=args.split, margin=args.margin, max_compare=args.max_compare,
                            figures=args.figures)
    summary = build_report(args.db, args.out, command=report_command(args), options=options)
    print(f"report of {summary.n_episodes} episodes ({summary.n_policies} policies x "
          f"{summary.n_suites} suites, tables on split {summary.split}) and "
          f"{summary.n_audits} audits: {len(summary.files)} files in {summary.out}")
    print(f"  page   {summary.page}")
    print(f"  tables {summary.out / 'tables'} (tables.tex compiles with pdflatex)")
    for compute in summary.computes:
        print(f"  compute {compute}")
    return 0
