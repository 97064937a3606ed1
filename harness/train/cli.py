"""`harness train`: train a recipe (TOML) for one or more training seeds.

    harness train --config examples/frozenlake_grpo.toml --seeds 0 1 2

Progress lines go to stderr; the closing summary (before/after success per seed, the paired
comparison over all seeds, the starting policy's sampling headroom) to stdout.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

__all__ = ["add_commands", "cmd_train"]


def add_commands(subparsers: Any) -> None:
    """Add ``train`` to the `harness` command line."""
    p = subparsers.add_parser("train", help="train a policy with the bundled RL backend "
                              "(GRPO, Dr. GRPO, RLOO, REINFORCE++, PPO, GiGPO, tree)")
    p.add_argument("--config", required=True, help="TOML training recipe (see examples/)")
    p.add_argument("--seeds", type=int, nargs="+", help="training seeds (overrides the "
                   "config's seeds)")
    p.add_argument("--updates", type=int, help="RL updates (overrides the config)")
    p.add_argument("--out-dir", help="checkpoint directory (overrides the config)")
    p.add_argument("--db", help="results database (overrides the config)")
    p.add_argument("--resume", action="store_true", help="continue each seed from its latest "
                   "checkpoint")
    p.add_argument("--no-eval", action="store_true", help="skip the held-out evaluations")
    p.set_defaults(func=cmd_train)


def _say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def cmd_train(args: argparse.Namespace) -> int:
    from harness.train.config import load_train_config
    from harness.core import require
    from harness.train.run import (compare_before_after, headroom_of, run_training,
                                   start_is_final)

    require("transformers", "train", "training").utils.logging.disable_progress_bar()

    overrides = {key: value for key, value in (("updates", args.updates),
                                               ("out_dir", args.out_dir), ("db", args.db))
                 if value is not None}
    config = load_train_config(args.config, overrides)
    seeds = tuple(args.seeds) if args.seeds else config.seeds
    summaries = run_training(config, seeds, resume=args.resume,
                             evaluate_policies=not args.no_eval, on_event=_say)
    for s in summaries:
        print(f"seed {s.train_seed}: {s.updates} updates in {s.wall_s:.0f}s -> {s.checkpoint}")
        for label, before, after in (("greedy", s.start_greedy, s.final_greedy),
                                     ("sampled", s.start_sampled, s.final_sampled)):
            if after is not None:
                start = f"{before:.3f} -> " if before is not None else ""
                print(f"  {label:8s} success {start}{after:.3f}")
    if args.no_eval or not config.eval.n_tasks:
        return 0
    from harness.stats.compare import format_comparison

    have_start = all(s.start_greedy is not None for s in summaries)
    for sampled in (False, True):
        if sampled and not config.eval.samples:
            continue
        if have_start:
            comparison = compare_before_after(config.db, config, seeds, sampled=sampled)
            print(format_comparison(comparison))
    if config.eval.headroom_k and (have_start or start_is_final(config)):
        for s in summaries:
            table = headroom_of(config.db, config, k=config.eval.headroom_k,
                                seed=s.train_seed)
            row = table[table["task_type"] == "all"].iloc[0]
            print(f"seed {s.train_seed}: start pass@{config.eval.headroom_k} "
                  f"{row['pass_at_k']:.3f} - greedy {row['greedy']:.3f} = headroom "
                  f"{row['headroom']:+.3f} over {int(row['n_tasks'])} tasks")
    return 0
