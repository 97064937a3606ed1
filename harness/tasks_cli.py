"""``harness tasks ...``: task-data utilities (``harness tasks generate alfworld``).

Plugged into the CLI through ``harness.cli.COMMAND_MODULES`` (`add_commands`); heavy imports
happen inside the handlers.
"""

from __future__ import annotations

import argparse
import os

from harness.core import ConfigError, make_rng

__all__ = ["add_commands", "cmd_generate"]

_SPLITS = ("train", "valid_seen", "valid_unseen")
_TASK_TYPES = ("pick_and_place_simple", "look_at_obj_in_light",
               "pick_clean_then_place_in_recep", "pick_heat_then_place_in_recep",
               "pick_cool_then_place_in_recep", "pick_two_obj_and_place")


def add_commands(subparsers) -> None:
    """Add ``tasks generate`` to the ``harness`` subcommands."""
    parser = subparsers.add_parser("tasks", help="task data utilities (generate game sets)")
    sub = parser.add_subparsers(dest="tasks_command", required=True)
    generate = sub.add_parser(
        "generate", help="write generated games in a benchmark's official layout",
        description="ALFWorld: json_2.1.1/{train,valid_seen,valid_unseen}/.../game.tw-pddl + "
                    "traj_data.json, only games the bundled planner solves and whose plan, "
                    "replayed through the real engine, wins.")
    generate.add_argument("family", choices=["alfworld"], help="which benchmark")
    generate.add_argument("--out", required=True, help="output folder (created if missing)")
    generate.add_argument("--n", type=int, required=True,
                          help="games per task type in each split")
    generate.add_argument("--split", dest="splits", action="append", choices=_SPLITS,
                          help="ALFWorld split (repeat; default: all three)")
    generate.add_argument("--task-type", dest="task_types", action="append",
                          choices=_TASK_TYPES, help="task type (repeat; default: all six)")
    generate.add_argument("--seed", type=int, default=0, help="generator seed (default 0)")
    generate.add_argument("--workers", type=int, default=None,
                          help="worker processes (default: the number of CPUs)")
    generate.set_defaults(func=cmd_generate)


def cmd_generate(args: argparse.Namespace) -> int:
    if args.n < 1:
        raise ConfigError(f"--n must be at least 1 (got {args.n})")
    workers = args.workers if args.workers is not None else (os.cpu_count() or 1)
    if workers < 1:
        raise ConfigError(f"--workers must be at least 1 (got {workers})")
    from tasks.alfworld.engine import import_engine
    from tasks.alfworld.generator import generate_games

    import_engine()  # a missing extra is reported before any work starts
    splits = tuple(args.splits or _SPLITS)
    task_types = tuple(args.task_types or _TASK_TYPES)
    report = generate_games(args.out, args.n, make_rng("harness tasks generate alfworld",
                                                       args.seed),
                            splits=splits, task_types=task_types, workers=workers)
    counts = report.counts()
    print(f"wrote {len(report.games)} ALFWorld games to {args.out} in {report.seconds:.1f}s "
          f"({workers} workers)")
    for split in splits:
        row = ", ".join(f"{t} {counts.get((split, t), 0)}" for t in task_types)
        print(f"  {split}: {row}")
    attempts = sum(g.attempts for g in report.games)
    print(f"  {attempts} draws for {len(report.games)} solvable games; mean plan length "
          f"{sum(g.plan_length for g in report.games) / max(1, len(report.games)):.1f}")
    return 0
