"""`harness signals`: score dense-supervision signals against reference Q-values.

    harness signals --suite frozenlake --points 500 --reference exact --signals all \\
        --model hf:PATH [--run-id RUN] [--db results/harness.db]

Without ``--run-id`` a behaviour run (``--behaviour``, default random) is played first. The
point set and every signal's scores go to the store; the report table is printed and
written as Markdown under ``--report-dir``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

__all__ = ["add_commands", "cmd_signals"]


REFERENCES = ("exact", "mc")
ROLLOUT_POLICIES = ("oracle", "uniform", "epsilon")
DEFAULTS = {"suite": "frozenlake", "points": 500, "db": "results/harness.db",
            "behaviour": "random", "split": "test", "tasks": 20, "eval_seeds": 1,
            "rollouts": 32, "horizon": 200, "resamples": 2000}
"""The flags' defaults: the same as `harness.signal_eval.pipeline.SignalsConfig`'s (a test
checks), repeated here so that building the parser imports nothing heavy."""


def _flags(parser: argparse.ArgumentParser) -> None:
    defaults = DEFAULTS
    parser.add_argument("--suite", default=defaults["suite"])
    parser.add_argument("--points", type=int, default=defaults["points"],
                        help="evaluation points (states) to draw")
    parser.add_argument("--reference", choices=REFERENCES, default="exact",
                        help="exact solver Q or Monte-Carlo rollouts")
    parser.add_argument("--signals", default="all",
                        help="methods or families, comma-separated, or all")
    parser.add_argument("--model", help="hf:PATH, checkpoint:PATH or openai:MODEL@URL")
    parser.add_argument("--db", default=defaults["db"])
    parser.add_argument("--run-id", help="stored behaviour run (default: play one first)")
    parser.add_argument("--behaviour", default=defaults["behaviour"],
                        help="behaviour policy for a fresh run")
    parser.add_argument("--split", default=defaults["split"])
    parser.add_argument("--tasks", type=int, default=defaults["tasks"],
                        help="tasks of the split for a fresh run")
    parser.add_argument("--eval-seeds", type=int, default=defaults["eval_seeds"])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--rollouts", type=int, default=defaults["rollouts"],
                        help="Monte-Carlo rollouts per candidate")
    parser.add_argument("--horizon", type=int, default=defaults["horizon"])
    parser.add_argument("--rollout-policy", choices=ROLLOUT_POLICIES, default="oracle")
    parser.add_argument("--resamples", type=int, default=defaults["resamples"],
                        help="bootstrap and permutation draws")
    parser.add_argument("--candidates", default="admissible",
                        help="admissible, or sampled:K (distinct actions among K model replies)")
    parser.add_argument("--report-dir", default="reports", help="where the Markdown goes")
    parser.add_argument("--list", action="store_true", help="list the methods and exit")
    parser.add_argument("--executor", default="local", help="where the behaviour run plays: "
                        "local (default), ray or ray:ADDRESS")


def _list() -> int:
    from signals.registry import signal_info, signal_names

    for name in signal_names():
        info = signal_info(name)
        needs = f" (needs {', '.join(info.needs)})" if info.needs else ""
        print(f"{info.family:18s} {name:20s} {info.description}{needs}")
    return 0


def cmd_signals(args: argparse.Namespace) -> int:
    if args.list:
        return _list()
    from harness.signal_eval.pipeline import SignalsConfig, run_signals
    from harness.signal_eval.report import format_lines, format_markdown

    config = SignalsConfig(
        suite=args.suite, points=args.points, reference=args.reference,
        signals=tuple(s for s in args.signals.split(",") if s.strip()), model=args.model,
        db=args.db, run_id=args.run_id, behaviour=args.behaviour, split=args.split,
        tasks=args.tasks, eval_seeds=args.eval_seeds, seed=args.seed, rollouts=args.rollouts,
        horizon=args.horizon, rollout_policy=args.rollout_policy, resamples=args.resamples,
        candidates=args.candidates, executor=args.executor)

    def progress(result) -> None:
        state = "failed" if result.error else f"{result.wall_s:.1f}s"
        print(f"  {result.name}: {state}", file=sys.stderr, flush=True)

    outcome = run_signals(config, on_signal=progress)
    for line in format_lines(outcome.summary, outcome.scored):
        print(line)
    if outcome.reference.method == "monte-carlo":
        ceiling = outcome.ceiling
        print(f"label-noise ceiling (split-half agreement): tau-b {ceiling['kendall_tau']:.3f}, "
              f"top-1 {ceiling['top1']:.3f}; rollouts cut by the horizon: "
              f"{outcome.reference.details['cut_fraction']:.1%}")
    report = Path(args.report_dir) / f"signals-{outcome.set_id}.md"
    report.parent.mkdir(parents=True, exist_ok=True)
    report.write_text(format_markdown(outcome.summary, outcome.scored))
    print(f"point set {outcome.set_id} (behaviour run {outcome.run_id}) stored in {args.db}; "
          f"report: {report}")
    return 0


def add_commands(subparsers: argparse._SubParsersAction) -> None:
    """Add `harness signals` to the CLI."""
    parser = subparsers.add_parser("signals", help="score dense-supervision signals against "
                                   "reference Q-values (QVal-style)")
    _flags(parser)
    parser.set_defaults(func=cmd_signals)
