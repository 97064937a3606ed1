"""`harness ablate`: play a base policy's one-layer-off and one-layer-on variants and a
repeated control arm on the same episode keys, then report each layer's paired effect,
activation rate, token cost and the maturity score beside final success.

    harness ablate --policy 'oracle' --layers repair,contract --suite frozenlake --tasks 20
    harness ablate --policy 'hf:models/m?temperature=0.7' --layers repair,regulation,skills \\
        --suite sokoban --eval-seeds 3 --out reports/ablate-sokoban
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import fields
from typing import Any

__all__ = ["add_commands", "cmd_ablate"]

_RUN_KEYS = ("suites", "split", "task_types", "n_tasks", "task_ids", "eval_seeds", "samples",
             "max_steps", "episode_timeout_s", "concurrency", "db", "run_id", "store_turns")
_LISTS = ("suites", "task_types", "task_ids")


def add_commands(subparsers: Any) -> None:
    """Add ``ablate`` to the `harness` command line."""
    from harness.config import RunConfig

    helps = {f.name: f.metadata["help"] for f in fields(RunConfig)}
    p = subparsers.add_parser("ablate", help="paired ablation of harness layers: one-layer-off "
                              "and -on variants plus a repeated control arm, a maturity score "
                              "beside final success")
    p.add_argument("--policy", required=True, dest="base", help="the base policy spec (its "
                   "own ?layers= stay on in every arm unless ablated)")
    p.add_argument("--layers", required=True, action="append", help="layers to ablate, "
                   "comma-separated (repair, contract, regulation, skills)")
    p.add_argument("--variants", choices=("both", "off", "on"), default="both",
                   help="one-layer-off variants, one-layer-on variants, or both (default)")
    p.add_argument("--config", help="TOML run config for the episodes (its policies are "
                   "ignored); flags given here override it")
    p.add_argument("--suite", dest="suites", action="append", help=helps["suites"])
    for flag, key, kind in (("--split", "split", str), ("--tasks", "n_tasks", int),
                            ("--eval-seeds", "eval_seeds", int), ("--samples", "samples", int),
                            ("--max-steps", "max_steps", int),
                            ("--timeout", "episode_timeout_s", float),
                            ("--concurrency", "concurrency", int), ("--db", "db", str)):
        p.add_argument(flag, dest=key, type=kind, help=helps[key])
    p.add_argument("--task-type", dest="task_types", action="append", help=helps["task_types"])
    p.add_argument("--task-ids", dest="task_ids", action="append", help=helps["task_ids"])
    p.add_argument("--run-id", help="id of the arms' run (the control run adds '-repeat'); "
                   "default: derived from the config, so rerunning resumes")
    p.add_argument("--no-turns", dest="store_turns", action="store_const", const=False,
                   help="do not store model turns")
    p.add_argument("--seed", type=int, default=0, help="seed of the bootstrap/permutation RNG")
    p.add_argument("--resamples", type=int, default=10_000, help="bootstrap/permutation draws")
    p.add_argument("--out", help="folder for ablation.md and the LaTeX tables (default: "
                   "reports/ablate-RUN_ID)")
    p.add_argument("--format", choices=("markdown", "latex"), default="markdown",
                   help="what to print on stdout")
    p.set_defaults(func=cmd_ablate)


def _run_config(args: argparse.Namespace) -> Any:
    from harness.config import load_run_config, make_run_config

    values: dict[str, Any] = {}
    for key in _RUN_KEYS:
        value = getattr(args, key, None)
        if value is None:
            continue
        if key in _LISTS:
            value = [v.strip() for item in value for v in item.split(",") if v.strip()]
        values[key] = value
    if args.config:
        config = load_run_config(args.config, values)
    else:
        config = make_run_config(values)
    if not config.suites:
        from harness.core import HarnessError

        raise HarnessError("harness ablate needs --suite (or a --config with suites)")
    return config


def _say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def cmd_ablate(args: argparse.Namespace) -> int:
    from harness.ablation.analysis import analyse_ablation
    from harness.ablation.plan import AblationConfig, plan_ablation, play_ablation
    from harness.ablation.report import ablation_latex, ablation_markdown, write_ablation_report
    from harness.store import Store

    layers = tuple(v.strip() for item in args.layers for v in item.split(",") if v.strip())
    config = AblationConfig(args.base, layers, _run_config(args), variants=args.variants,
                            seed=args.seed, resamples=args.resamples)
    plan = plan_ablation(config)
    specs = dict.fromkeys(arm.spec for arm in plan.arms)
    _say(f"ablate: {len(plan.arms)} arms ({len(specs)} policies) on "
         f"{', '.join(config.run.suites)}; runs {plan.run_ids[0]} and {plan.run_ids[1]}")
    for summary in play_ablation(plan):
        _say(f"run {summary.run_id}: played {summary.played} episodes ({summary.errors} "
             f"errors), skipped {summary.skipped} already stored, in {summary.wall_s:.1f}s")
    with Store(config.run.db, readonly=True) as store:
        result = analyse_ablation(plan, store)
    path = write_ablation_report(result, args.out or f"reports/ablate-{plan.run_ids[0]}")
    print(ablation_latex(result) if args.format == "latex" else ablation_markdown(result))
    _say(f"report: {path}")
    return 0
