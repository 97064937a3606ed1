"""``harness tasks ...``: task-data utilities.

- ``harness tasks generate FAMILY``: each family's generator lives with the family under
  `tasks/` and is registered with `tasks.plugins.register_generator` (a module holding
  ``DESCRIPTION``, ``add_generate_arguments(parser)`` and ``generate(args) -> lines``);
- ``harness tasks unsupported SUITE``: the tasks a suite leaves out, each with its reason
  (the suite's ``unsupported`` capability, `tasks.base.SUITE_CAPABILITIES`);
- ``harness tasks build SUITE``: every supported task's environment built ahead of its
  episodes, several at once (the suite's ``build_task`` capability). A failed build is
  remembered by the suite: later episodes, audits and builds report it at once, and
  ``--retry-failed`` builds it again.

Heavy imports happen inside the handlers.
"""

from __future__ import annotations

import argparse
import importlib
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from typing import Any

from harness.core import ConfigError, HarnessError

__all__ = ["BuildOutcome", "add_commands", "build_tasks", "cmd_build", "cmd_generate",
           "cmd_unsupported"]


def add_commands(subparsers) -> None:
    """Add ``tasks generate FAMILY``, ``tasks unsupported SUITE`` and ``tasks build SUITE``
    to the ``harness`` subcommands."""
    parser = subparsers.add_parser("tasks", help="task utilities: generate game sets, list "
                                   "unsupported tasks, build task environments")
    sub = parser.add_subparsers(dest="tasks_command", required=True)
    _add_generate(sub)
    unsupported = sub.add_parser("unsupported", help="every task a suite leaves out, with why")
    unsupported.add_argument("suite", help="suite id, e.g. terminal-bench or terminal-bench@1")
    unsupported.set_defaults(func=cmd_unsupported)
    build = sub.add_parser("build", help="build every supported task's environment now; a "
                           "failed build is remembered and reported at once afterwards")
    build.add_argument("suite", help="suite id, e.g. terminal-bench or terminal-bench@1")
    build.add_argument("--jobs", type=int, default=4, help="builds at once (default: 4)")
    build.add_argument("--only", action="append", metavar="ID[,ID...]",
                       help="only these tasks (repeat or comma-separate)")
    build.add_argument("--retry-failed", action="store_true",
                       help="build again the tasks whose earlier build failed (by default "
                       "their recorded failure is reported without building)")
    build.set_defaults(func=cmd_build, holds_sandboxes=True)


def _add_generate(sub: Any) -> None:
    from tasks.plugins import generators

    generate = sub.add_parser("generate",
                              help="write generated games in a benchmark's official layout")
    families = generate.add_subparsers(dest="family", required=True, metavar="FAMILY")
    for family, module_name in generators().items():
        module = importlib.import_module(module_name)
        tool = families.add_parser(family, help=f"{family} games",
                                   description=module.DESCRIPTION)
        tool.add_argument("--out", required=True, help="output folder (created if missing)")
        module.add_generate_arguments(tool)
        tool.set_defaults(func=cmd_generate, generator=module_name)


def cmd_generate(args: argparse.Namespace) -> int:
    for line in importlib.import_module(args.generator).generate(args):
        print(line)
    return 0


def _one_line(text: str) -> str:
    """`text` on one line, without tabs (the column separator)."""
    return " ".join(str(text).split())


def _unsupported(suite: Any) -> dict[str, str]:
    from tasks.base import suite_capability

    reasons = suite_capability(suite, "unsupported")
    if not isinstance(reasons, Mapping):
        raise HarnessError(f"suite {suite.id}: unsupported must map task ids to reasons, got "
                           f"{type(reasons).__name__}")
    return {str(task_id): _one_line(reason) for task_id, reason in reasons.items()}


def cmd_unsupported(args: argparse.Namespace) -> int:
    """One line per unsupported task (``id<TAB>reason``, sorted by id), then the count."""
    from tasks import get_suite

    suite = get_suite(args.suite)
    reasons = _unsupported(suite)
    for task_id in sorted(reasons):
        print(f"{task_id}\t{reasons[task_id]}")
    total = len(suite.tasks()) + len(reasons)
    print(f"{len(reasons)} of {total} tasks of {suite.id} unsupported")
    return 0


@dataclass(frozen=True)
class BuildOutcome:
    """One task's build: `error` is "" when it built (else the one-line reason); `seconds`
    is the wall time the call took (near zero for a failure recorded earlier)."""

    task_id: str
    error: str
    seconds: float

    @property
    def built(self) -> bool:
        return not self.error


def _build_one(build: Callable[..., None], task_id: str, retry_failed: bool) -> BuildOutcome:
    started = time.perf_counter()
    try:
        build(task_id, retry_failed=retry_failed)
    except HarnessError as exc:  # EnvironmentNotBuilt, or a sandbox that cannot start
        return BuildOutcome(task_id, _one_line(str(exc)) or type(exc).__name__,
                            time.perf_counter() - started)
    return BuildOutcome(task_id, "", time.perf_counter() - started)


def build_tasks(build: Callable[..., None], task_ids: list[str], *, jobs: int,
                retry_failed: bool = False) -> Iterator[BuildOutcome]:
    """Call ``build(task_id, retry_failed=...)`` for every id, `jobs` at a time in threads;
    yield each outcome as it finishes. Leaving early (an interruption) cancels the builds
    not started and does not wait for the ones running (the command closes their
    sandboxes)."""
    pool = ThreadPoolExecutor(max_workers=jobs, thread_name_prefix="harness-build")
    try:
        futures = [pool.submit(_build_one, build, task_id, retry_failed)
                   for task_id in task_ids]
        for future in as_completed(futures):
            yield future.result()
    finally:
        pool.shutdown(wait=False, cancel_futures=True)


def _selected(suite: Any, only: list[str] | None, unsupported: dict[str, str]) -> list[str]:
    """The supported task ids to build: all, or those `only` names (checked)."""
    if not only:
        return [spec.id for spec in suite.tasks()]
    wanted = list(dict.fromkeys(v.strip() for item in only for v in item.split(",")
                                if v.strip()))
    if not wanted:
        raise ConfigError("--only needs at least one task id")
    for task_id in wanted:
        if task_id in unsupported:
            raise HarnessError(f"task {task_id} of {suite.id} is unsupported, not built: "
                               f"{unsupported[task_id]}")
        suite.task(task_id)  # an unknown id: one line with did-you-mean
    return wanted


class _BuildProgress:
    """A rich progress bar on stderr when it is a terminal; nothing otherwise."""

    def __init__(self, total: int) -> None:
        self.bar: Any = None
        if sys.stderr.isatty():
            from rich.console import Console
            from rich.progress import Progress

            self.bar = Progress(console=Console(stderr=True), transient=True,
                                redirect_stdout=sys.stdout.isatty())
            self.bar.start()
            self.task = self.bar.add_task("building environments", total=total)

    def advance(self) -> None:
        if self.bar is not None:
            self.bar.advance(self.task)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.stop()


def cmd_build(args: argparse.Namespace) -> int:
    """One line per task as it finishes (``id<TAB>built<TAB>seconds`` or
    ``id<TAB>failed<TAB>reason``), then the totals; exit status 1 when a build failed."""
    from tasks import get_suite
    from tasks.base import suite_capability

    if args.jobs < 1:
        raise ConfigError(f"--jobs must be at least 1, got {args.jobs}")
    suite = get_suite(args.suite)
    build = suite_capability(suite, "build_task")
    if build is None:
        raise HarnessError(f"{suite.id} has no task environments to build")
    unsupported = _unsupported(suite)
    task_ids = _selected(suite, args.only, unsupported)
    progress = _BuildProgress(len(task_ids))
    failed = 0
    try:
        for outcome in build_tasks(build, task_ids, jobs=args.jobs,
                                   retry_failed=args.retry_failed):
            progress.advance()
            failed += not outcome.built
            print(f"{outcome.task_id}\tbuilt\t{outcome.seconds:.1f}s" if outcome.built
                  else f"{outcome.task_id}\tfailed\t{outcome.error}", flush=True)
    finally:
        progress.close()
    left_out = (f"; {len(unsupported)} unsupported not built (`harness tasks unsupported "
                f"{suite.id}` lists them)" if unsupported and not args.only else "")
    print(f"{suite.id}: {len(task_ids) - failed} built, {failed} failed of {len(task_ids)} "
          f"tasks{left_out}")
    return 1 if failed else 0
