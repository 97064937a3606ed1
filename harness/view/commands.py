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


def cmd_view(args: argparse.Namespace) -> int:
    from harness.view.app import serve

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
    p.set_defaults(func=cmd_view)
