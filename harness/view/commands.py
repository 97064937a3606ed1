"""``harness view``: serve the viewer of a results database on a loopback address."""

from __future__ import annotations

import argparse
import ipaddress
import sys

from harness.core import ConfigError

__all__ = ["add_commands", "cmd_view"]

LOOPBACK_NAMES = ("localhost",)


def _check_host(host: str) -> None:
    """The viewer serves stored episodes without authentication: loopback addresses only."""
    if host in LOOPBACK_NAMES:
        return
    try:
        loopback = ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = False
    if not loopback:
        raise ConfigError(f"--host {host}: the viewer listens on loopback addresses only "
                          "(127.0.0.1, ::1); reach it from elsewhere through an SSH tunnel")


def cmd_export(args: argparse.Namespace) -> int:
    """``harness view --export DIR``: the static copy, then one line saying what it holds."""
    from harness.view.export import export_pages
    from harness.view.queries import EpisodeFilter

    if args.success not in (None, "0", "1"):
        raise ConfigError(f"--success must be 0 or 1, got {args.success!r}")
    selected = EpisodeFilter(run=args.run, policy=args.policy, suite=args.suite,
                             success=args.success or "")
    summary = export_pages(args.db, args.export, run=args.run, suite=args.suite,
                           episodes=selected, limit=args.limit)
    cut = (f" (the first {summary.n_episodes} of {summary.n_matching}; raise --limit for more)"
           if summary.n_matching > summary.n_episodes else "")
    print(f"harness view: wrote {len(summary.files)} pages to {summary.folder}: the leaderboard "
          f"(index.html) and {summary.n_episodes} episodes{cut}; open "
          f"{summary.folder / 'index.html'}")
    return 0


def cmd_view(args: argparse.Namespace) -> int:
    from harness.view.app import serve

    if args.export:
        return cmd_export(args)
    _check_host(args.host)
    if not 0 <= args.port <= 65535:
        raise ConfigError(f"--port must be in 0..65535, got {args.port}")
    host = "127.0.0.1" if args.host == "localhost" else args.host
    serve(args.db, host, args.port, on_ready=lambda address: print(
        f"harness view: {args.db} (read-only) on {address}", file=sys.stderr, flush=True))
    return 0


def add_commands(subparsers: argparse._SubParsersAction) -> None:
    """Add `harness view` to the CLI."""
    p = subparsers.add_parser("view", help="a local web app over the results store: runs, "
                              "leaderboard, episodes, comparisons (read-only)")
    p.add_argument("--db", default="results/harness.db", help="results database path")
    p.add_argument("--host", default="127.0.0.1", help="loopback address to listen on "
                   "(default: 127.0.0.1)")
    p.add_argument("--port", type=int, default=8765, help="port (default: 8765; 0: a free one)")
    p.add_argument("--export", metavar="DIR", help="write a static copy instead of serving: "
                   "the leaderboard, a list of episodes and each listed episode's page, "
                   "linked relatively (for a paper's supplement)")
    p.add_argument("--run", default="", help="with --export: the run (default: all runs)")
    p.add_argument("--suite", default="", help="with --export: one suite (default: all)")
    p.add_argument("--policy", default="", help="with --export: list this policy's episodes")
    p.add_argument("--success", help="with --export: list successes (1) or failures (0) only")
    p.add_argument("--limit", type=int, default=100,
                   help="with --export: episodes listed and exported at most (default: 100)")
    p.set_defaults(func=cmd_view)
