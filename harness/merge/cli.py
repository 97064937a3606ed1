"""`harness merge`: merge checkpoints or LoRA adapters with a named method into a checkpoint
that `harness run --policy checkpoint:OUT` evaluates.

    harness merge --method ties --base START --models A B --density 0.5 --out merged/
    harness merge --method ramplus_tl --base START --models A B --out merged-ramplus-tl/
"""

from __future__ import annotations

import argparse
from typing import Any

__all__ = ["add_commands", "cmd_merge"]


def add_commands(subparsers: Any) -> None:
    """Add ``merge`` to the `harness` command line."""
    from harness.merge.methods import METHODS

    p = subparsers.add_parser("merge", help="merge checkpoints or LoRA adapters (linear, "
                              "task arithmetic, TIES, RAM, RAM+ in both published variants)")
    p.add_argument("--method", required=True, help=f"one of {', '.join(METHODS)} (ramplus: "
                   "the original repository's, rho per model over the whole model, r = 1.2; "
                   "ramplus_tl: mergekit's tensor-local one, r = 0.1, alpha = 0.2)")
    p.add_argument("--models", nargs="+", required=True, help="model or adapter folders")
    p.add_argument("--base", help="the common base (every method but linear)")
    p.add_argument("--out", required=True, help="output checkpoint folder")
    p.add_argument("--weights", nargs="+", type=float, help="per model (or one for all)")
    p.add_argument("--density", nargs="+", type=float, help="ties: share of each model's "
                   "delta kept, by magnitude (per model or one for all)")
    p.add_argument("--scale", type=float, default=1.0, help="task_arithmetic/ties: lambda")
    p.add_argument("--epsilon", type=float, default=1e-5, help="ram*: a coordinate counts as "
                   "changed when |delta| > epsilon")
    p.add_argument("--r", type=float, help="ramplus/ramplus_tl rate (defaults 1.2 / 0.1)")
    p.add_argument("--alpha", type=float, default=0.2, help="ramplus_tl: clamp of rho")
    p.set_defaults(func=cmd_merge)


def cmd_merge(args: argparse.Namespace) -> int:
    from harness.merge.methods import MergeParams
    from harness.merge.models import merge_models

    params = MergeParams(weights=tuple(args.weights) if args.weights else None,
                         densities=tuple(args.density) if args.density else None,
                         scale=args.scale, epsilon=args.epsilon, r=args.r, alpha=args.alpha)
    out = merge_models(args.method, args.models, args.out, base=args.base, params=params)
    print(f"merged {len(args.models)} models with {args.method} into {out} (recipe in "
          f"{out / 'checkpoint.json'}; evaluate with --policy checkpoint:{out})")
    return 0
