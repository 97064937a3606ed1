"""`harness merge`: merge checkpoints or LoRA adapters with a named method into a checkpoint
that `harness run --policy checkpoint:OUT` evaluates.

    harness merge --method ties --base START --models A B --density 0.5 --out merged/
    harness merge --method ramplus_tl --base START --models A B --out merged-ramplus-tl/
"""

from __future__ import annotations

import argparse
from typing import Any

__all__ = ["add_commands", "cmd_merge", "cmd_geometry"]


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
    g = subparsers.add_parser("geometry", help="task-vector geometry of checkpoints with a "
                              "common base: cosines, support overlap and Jaccard, read "
                              "against a floor and a ceiling")
    g.add_argument("--base", required=True, help="the common base")
    g.add_argument("--models", nargs="+", required=True, help="two or more checkpoints")
    g.add_argument("--floor", nargs="+", default=(), help="calibration: checkpoints that share "
                   "nothing but the base (other seeds on unrelated data)")
    g.add_argument("--ceiling", nargs="+", default=(), help="calibration: two checkpoints "
                   "of one run (or seed halves)")
    g.add_argument("--epsilon", nargs="+", type=float, default=None,
                   help="support thresholds (default 0 1e-6 1e-5)")
    g.add_argument("--out", help="folder for cosine.csv, jaccard.csv, overlap.csv")
    g.set_defaults(func=cmd_geometry)


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


def cmd_geometry(args: argparse.Namespace) -> int:
    from pathlib import Path

    from harness.merge.geometry import EPSILONS, geometry_arms

    for arm, paths in (("--floor", args.floor), ("--ceiling", args.ceiling)):
        if len(paths) == 1:
            from harness.core import ConfigError

            raise ConfigError(f"{arm} needs two or more checkpoints, got one")
    result = geometry_arms(args.base, args.models, floor=args.floor, ceiling=args.ceiling,
                           epsilons=tuple(args.epsilon) if args.epsilon else EPSILONS)
    overall = result.cosine[~result.cosine["group"].str.startswith("layer:")]
    print("cosine of task vectors (all parameters and per group):")
    print(overall.pivot_table(index=["arm", "a", "b"], columns="group", values="cosine",
                              sort=False).round(4).to_string())
    print("\nsupport Jaccard (|delta| > epsilon) beside independent supports' E[J]:")
    print(result.jaccard.assign(epsilon=result.jaccard["epsilon"].map("{:g}".format))
          .round(4).to_string(index=False))
    print("\noverlap: share of a model's changed coordinates also changed by k others:")
    overlap = result.overlap.assign(epsilon=result.overlap["epsilon"].map("{:g}".format))
    print(overlap.pivot_table(index=["arm", "model", "epsilon"], columns="k", values="share",
                              sort=False).round(4).to_string())
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        for name in ("cosine", "jaccard", "overlap"):
            getattr(result, name).to_csv(out / f"{name}.csv", index=False)
        print(f"\ntables: {out}/cosine.csv, jaccard.csv, overlap.csv")
    return 0
