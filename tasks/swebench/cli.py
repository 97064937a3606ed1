"""``harness swebench validate``: which SWE-bench instances this machine reproduces.

The family's front-end, registered with `tasks.plugins.register_commands` in
``tasks/__init__.py`` (`add_commands`); heavy imports happen inside the handler.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from harness.core import ConfigError

__all__ = ["add_commands", "cmd_validate", "cmd_crosscheck"]

TABLE_CHOICES = ("verified-test", "lite-test", "lite-dev", "full-dev", "swe-lite")


def add_commands(subparsers) -> None:
    """Add ``swebench validate``."""
    parser = subparsers.add_parser("swebench", help="SWE-bench utilities (validate instances)")
    parser.set_defaults(holds_sandboxes=True)  # the CLI closes them in order on SIGTERM
    sub = parser.add_subparsers(dest="swebench_command", required=True)
    p = sub.add_parser(
        "validate", help="build environments and check gold-resolves / empty-fails",
        description="For each instance: build its environment (cached per repository and "
                    "version), grade the gold patch and the empty patch with the local "
                    "backend (sandbox, no network), print a table and a summary.")
    p.add_argument("--table", choices=TABLE_CHOICES, action="append",
                   help="instance table(s) to draw from (default: every table)")
    p.add_argument("--instances", action="append",
                   help="instance ids (repeat or comma-separate; default: the whole table)")
    p.add_argument("--repo", action="append", help="only instances of this owner/name")
    p.add_argument("--limit", type=int, help="at most this many instances")
    p.add_argument("--repos", help="mirror directory of the repositories (else $SWEBENCH_REPOS)")
    p.add_argument("--data", help="SWE-bench tables (else $SWEBENCH_DATA or ../shared/data)")
    p.add_argument("--all", action="store_true",
                   help="every instance of the chosen tables (the default when no --instances)")
    p.add_argument("--logs", help="keep every test log and instance row in this folder")
    p.add_argument("--results", help="store each instance's result here as it finishes and "
                                     "resume from what is there (default: the --logs folder)")
    p.add_argument("--manifest", help="write the manifest (JSON: provenance, per-instance "
                                      "outcome, reason class, environment digest) here")
    p.add_argument("--jobs", type=int, default=1, help="instances validated at a time")
    p.add_argument("--timeout", type=float, default=1800, help="test run limit, seconds")
    p.set_defaults(func=cmd_validate)
    c = sub.add_parser(
        "crosscheck", help="our verdicts vs the swebench package's on recorded logs",
        description="For every log `harness swebench validate --logs DIR` recorded: the "
                    "project's verdict and swebench.harness.grading.get_eval_report's.")
    c.add_argument("--logs", required=True, help="folder of recorded logs")
    c.set_defaults(func=cmd_crosscheck)


def _select(args: argparse.Namespace) -> list:
    from tasks.swebench.data import TABLES, load_table
    from tasks.swebench.lite import lite_instances

    tables = args.table or list(TABLES)
    pool: dict = {}
    for table in tables:
        found = lite_instances() if table == "swe-lite" else load_table(table, args.data)
        for instance in found:
            pool.setdefault(instance.instance_id, instance)
    wanted = [v.strip() for item in args.instances or [] for v in item.split(",") if v.strip()]
    if args.instances is not None and not wanted:
        raise ConfigError(f"--instances {','.join(args.instances)!r} names no instance")
    unknown = [w for w in wanted if w not in pool]
    if unknown:
        from harness.core import UnknownNameError

        raise UnknownNameError("SWE-bench instance", unknown[0], pool)
    chosen = [pool[w] for w in wanted] if wanted else list(pool.values())
    if args.repo:
        chosen = [i for i in chosen if i.repo in args.repo]
    if args.limit is not None:
        if args.limit <= 0:
            raise ConfigError("--limit must be positive")
        chosen = chosen[:args.limit]
    return chosen


def _folder(flag: str, value: str | None) -> Path | None:
    """`value` as a folder to write into (made when absent); a file there is a user error."""
    if value is None:
        return None
    path = Path(value)
    if path.exists() and not path.is_dir():
        raise ConfigError(f"{flag} {value}: is a file, not a folder")
    return path


def _check_validate_flags(args: argparse.Namespace) -> None:
    import math

    if not math.isfinite(args.timeout) or args.timeout <= 0:
        raise ConfigError(f"--timeout {args.timeout}: must be a positive number of seconds")
    if args.jobs < 1:
        raise ConfigError(f"--jobs {args.jobs}: must be at least 1")
    if args.all and args.instances:
        raise ConfigError("--all and --instances conflict: give one")
    if args.manifest and Path(args.manifest).is_dir():
        raise ConfigError(f"--manifest {args.manifest}: is a folder, not a file")


def _command_line(args: argparse.Namespace) -> str:
    """The validate command that `args` stands for (paths as given)."""
    words = ["harness", "swebench", "validate"]
    for flag in ("table", "instances", "repo"):
        for value in getattr(args, flag) or []:
            words += [f"--{flag}", value]
    for flag in ("limit", "repos", "data", "logs", "results", "manifest"):
        if getattr(args, flag) is not None:
            words += [f"--{flag}", str(getattr(args, flag))]
    words += ["--all"] if args.all else []
    words += ["--jobs", str(args.jobs), "--timeout", f"{args.timeout:g}"]
    return " ".join(words)


def cmd_validate(args: argparse.Namespace) -> int:
    import json
    import time

    from tasks.swebench.lite import LITE_REPO_PREFIX, lite_backend
    from tasks.swebench.local import real_backend
    from tasks.swebench.validate import harness_version, manifest, repository_table, \
        validate, validation_lines

    _check_validate_flags(args)
    logs = _folder("--logs", args.logs)
    results = _folder("--results", args.results) or logs
    instances = _select(args)
    say = (lambda line: print(line, file=sys.stderr, flush=True))
    lite = [i for i in instances if i.repo.startswith(LITE_REPO_PREFIX)]
    real = [i for i in instances if not i.repo.startswith(LITE_REPO_PREFIX)]
    rows = []
    if lite:
        rows += validate(lite, lite_backend(), logs_dir=logs, results_dir=results,
                         jobs=args.jobs, progress=say)
    if real:
        backend = real_backend(mirrors=args.repos, progress=say, test_timeout_s=args.timeout)
        rows += validate(real, backend, logs_dir=logs, results_dir=results, jobs=args.jobs,
                         progress=say)
    for line in validation_lines(rows) + [""] + repository_table(rows):
        print(line)
    if args.manifest:
        provenance = {"date": time.strftime("%Y-%m-%d", time.gmtime()),
                      "command": _command_line(args),
                      "harness_version": harness_version(),
                      "tables": args.table or "all"}
        Path(args.manifest).write_text(json.dumps(manifest(rows, provenance), indent=1) + "\n")
    return 0 if all(r.reproduced for r in rows) else 1


def cmd_crosscheck(args: argparse.Namespace) -> int:
    from tasks.swebench.validate import crosscheck

    if not Path(args.logs).is_dir():
        raise ConfigError(f"--logs {args.logs}: not a folder")
    rows = crosscheck(Path(args.logs))
    print("| instance | log | ours | swebench get_eval_report |\n|---|---|---|---|")
    for instance_id, kind, ours, theirs in rows:
        print(f"| {instance_id} | {kind} | {ours} | {theirs} |")
    agree = sum(ours == theirs for _, _, ours, theirs in rows)
    print(f"\n{agree} of {len(rows)} verdicts agree")
    return 0 if agree == len(rows) else 1
