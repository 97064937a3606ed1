"""``harness audit SUITE``: the audit of one suite, printed (its tables rendered by the report
layer) and stored. It lives in `harness.report` because it renders report tables; the audit
package itself never imports the report package."""

from __future__ import annotations

import argparse

__all__ = ["add_commands", "cmd_audit"]


def add_commands(subparsers) -> None:
    p = subparsers.add_parser(
        "audit", help="audit a suite: trivial and oracle ceilings, learnability under GRPO, "
        "headroom, grader determinism, exploit probes")
    p.add_argument("suite", help="suite id, e.g. sokoban or sokoban@1")
    p.add_argument("--split", default="test", help="task split (default: test)")
    p.add_argument("--policy", dest="base_policy", default="random",
                   help="base policy for learnability and headroom (default: random)")
    p.add_argument("--k", type=int, default=8,
                   help="samples per task for the base policy (default: 8, a GRPO group)")
    p.add_argument("--tasks", dest="n_tasks", type=int,
                   help="audit N tasks, round-robin across task types (default: all)")
    p.add_argument("--eval-seeds", type=int, default=2,
                   help="eval seeds per task for the probes and the oracle (default: 2)")
    p.add_argument("--threshold", type=float, default=0.10,
                   help="flag task types whose trivial ceiling exceeds this (default: 0.10)")
    p.add_argument("--greedy", dest="greedy_policy",
                   help="greedy policy for headroom (default: one sample of the base policy)")
    p.add_argument("--regrades", type=int, default=3,
                   help="times each checked trajectory is re-graded (default: 3)")
    p.add_argument("--max-regraded", type=int, default=100,
                   help="trajectories re-graded at most (default: 100)")
    p.add_argument("--concurrency", type=int, default=8, help="episodes in flight at once")
    p.add_argument("--executor", default="local", help="local (default), ray (a local Ray "
                   "instance) or ray:ADDRESS (an existing Ray cluster)")
    p.add_argument("--db", default="results/harness.db", help="results database path")
    p.set_defaults(func=cmd_audit)


def cmd_audit(args: argparse.Namespace) -> int:
    from harness.audit import AuditConfig, audit_suite
    from harness.audit.text import summary_lines
    from harness.report import table_builders as tb
    from harness.report.tables import to_markdown

    config = AuditConfig(args.suite, split=args.split, base_policy=args.base_policy, k=args.k,
                         n_tasks=args.n_tasks, eval_seeds=args.eval_seeds,
                         threshold=args.threshold, greedy_policy=args.greedy_policy,
                         regrades=args.regrades, max_regraded=args.max_regraded, db=args.db,
                         concurrency=args.concurrency, executor=args.executor)
    result = audit_suite(config)
    print("\n".join(summary_lines(result)))
    tables = [tb.audit_probe_table(result), tb.audit_learnability_table(result),
              tb.audit_failures_table(result)]
    for table in tables:
        if table is not None:
            print()
            print(to_markdown(table), end="")
    print(f"\nstored in {args.db}; `harness report --db {args.db}` includes it")
    return 0
