"""ALFWorld's task-data tool: ``harness tasks generate alfworld`` (games in the official
layout). `harness.tasks_cli` reaches it through `tasks.plugins.register_generator`
(``tasks/__init__.py``), so the engine holds no ALFWorld specifics."""

from __future__ import annotations

import argparse
import os

from harness.core import ConfigError, make_rng

__all__ = ["DESCRIPTION", "add_generate_arguments", "generate"]

SPLITS = ("train", "valid_seen", "valid_unseen")
TASK_TYPES = ("pick_and_place_simple", "look_at_obj_in_light",
              "pick_clean_then_place_in_recep", "pick_heat_then_place_in_recep",
              "pick_cool_then_place_in_recep", "pick_two_obj_and_place")
DESCRIPTION = ("ALFWorld: json_2.1.1/{train,valid_seen,valid_unseen}/.../game.tw-pddl + "
               "traj_data.json, only games the bundled planner solves and whose plan, "
               "replayed through the real engine, wins.")


def add_generate_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``harness tasks generate alfworld``."""
    parser.add_argument("--n", type=int, required=True, help="games per task type in each split")
    parser.add_argument("--split", dest="splits", action="append", choices=SPLITS,
                        help="ALFWorld split (repeat; default: all three)")
    parser.add_argument("--task-type", dest="task_types", action="append",
                        choices=TASK_TYPES, help="task type (repeat; default: all six)")
    parser.add_argument("--seed", type=int, default=0, help="generator seed (default 0)")
    parser.add_argument("--workers", type=int, default=None,
                        help="worker processes (default: the number of CPUs)")


def generate(args: argparse.Namespace) -> list[str]:
    """Write the games; returns the lines to print."""
    if args.n < 1:
        raise ConfigError(f"--n must be at least 1 (got {args.n})")
    workers = args.workers if args.workers is not None else (os.cpu_count() or 1)
    if workers < 1:
        raise ConfigError(f"--workers must be at least 1 (got {workers})")
    from tasks.alfworld.engine import import_engine
    from tasks.alfworld.generator import generate_games

    import_engine()  # a missing extra is reported before any work starts
    splits = tuple(args.splits or SPLITS)
    task_types = tuple(args.task_types or TASK_TYPES)
    report = generate_games(args.out, args.n, make_rng("harness tasks generate alfworld",
                                                       args.seed),
                            splits=splits, task_types=task_types, workers=workers)
    counts = report.counts()
    lines = [f"wrote {len(report.games)} ALFWorld games to {args.out} in "
             f"{report.seconds:.1f}s ({workers} workers)"]
    for split in splits:
        row = ", ".join(f"{t} {counts.get((split, t), 0)}" for t in task_types)
        lines.append(f"  {split}: {row}")
    attempts = sum(g.attempts for g in report.games)
    lines.append(f"  {attempts} draws for {len(report.games)} solvable games; mean plan length "
                 f"{sum(g.plan_length for g in report.games) / max(1, len(report.games)):.1f}")
    return lines
