"""The `harness` command line. User errors print one line on stderr and exit 2."""

from __future__ import annotations

import argparse
import contextlib
import importlib
import logging
import os
import signal
import sys
import tempfile
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from harness.core import HarnessError

log = logging.getLogger("harness")


def _run_flags(parser: argparse.ArgumentParser) -> None:
    from harness.config import RunConfig  # noqa: F401 - help texts come from its fields
    from dataclasses import fields

    helps = {f.name: f.metadata["help"] for f in fields(RunConfig)}
    parser.add_argument("--config", help="TOML run config; flags given here override it")
    parser.add_argument("--policy", dest="policies", action="append", help=helps["policies"]
                        + " (repeat or comma-separate)")
    parser.add_argument("--suite", dest="suites", action="append", help=helps["suites"]
                        + " (repeat or comma-separate)")
    parser.add_argument("--split", help=helps["split"])
    parser.add_argument("--task-type", dest="task_types", action="append",
                        help=helps["task_types"])
    parser.add_argument("--tasks", dest="n_tasks", type=int, help=helps["n_tasks"])
    parser.add_argument("--task-ids", dest="task_ids", action="append", metavar="ID[,ID...]",
                        help=helps["task_ids"] + " (repeat or comma-separate)")
    parser.add_argument("--eval-seeds", type=int, help="number of evaluation seeds (0..N-1)")
    parser.add_argument("--samples", type=int, help=helps["samples"])
    parser.add_argument("--max-steps", type=int, help=helps["max_steps"])
    parser.add_argument("--timeout", dest="episode_timeout_s", type=float,
                        help=helps["episode_timeout_s"])
    parser.add_argument("--concurrency", type=int, help=helps["concurrency"])
    parser.add_argument("--max-error-rate", type=float, help=helps["max_error_rate"])
    parser.add_argument("--db", help=helps["db"])
    parser.add_argument("--run-id", help=helps["run_id"])
    parser.add_argument("--no-turns", dest="store_turns", action="store_const", const=False,
                        help="do not store each model turn's messages and raw reply (huge "
                             "runs; the run config's store_turns = false)")


def _config_from_args(args: argparse.Namespace):
    from harness.config import load_run_config, make_run_config

    keys = ("policies", "suites", "split", "task_types", "n_tasks", "eval_seeds", "samples",
            "max_steps", "episode_timeout_s", "concurrency", "max_error_rate", "db", "run_id",
            "task_ids", "store_turns")
    values: dict[str, Any] = {}
    for key in keys:
        value = getattr(args, key)
        if value is None:
            continue
        if key in ("policies", "suites", "task_types", "task_ids"):
            value = [v.strip() for item in value for v in item.split(",") if v.strip()]
            if key == "task_ids" and not value:
                raise HarnessError("--task-ids needs at least one task id")
        values[key] = value
    if args.config:
        return load_run_config(args.config, values)
    if not values.get("policies") or not values.get("suites"):
        raise HarnessError("harness run needs --policy and --suite (or --config FILE)")
    return make_run_config(values)


class _Progress:
    """A rich progress bar on a terminal; a log line per 10% otherwise."""

    def __init__(self) -> None:
        self.bar: Any = None
        self.task: Any = None
        self.total = self.seen = 0

    def plan(self, total: int, skipped: int) -> None:
        self.total = total - skipped
        if skipped:
            print(f"resuming: {skipped} of {total} episodes already stored", file=sys.stderr)
        if sys.stderr.isatty():
            from rich.progress import Progress

            self.bar = Progress(transient=True)
            self.bar.start()
            self.task = self.bar.add_task("episodes", total=self.total)

    def episode(self, record: Any) -> None:
        self.seen += 1
        if self.bar is not None:
            self.bar.advance(self.task)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.stop()


def _execute(config, executor: str = "local", env_workers: int = 0) -> Any:
    from harness.executors import parse_executor
    from harness.runner import run

    spec = parse_executor(executor, env_workers=env_workers)
    progress = _Progress()
    try:
        if spec.kind == "ray":
            from harness.executors.ray_executor import run_on_ray
            from harness.store import Store

            with Store(config.db) as store:
                return run_on_ray(config, spec, store=store, on_plan=progress.plan,
                                  on_episode=progress.episode)
        return run(config, on_plan=progress.plan, on_episode=progress.episode)
    finally:
        progress.close()


def cmd_run(args: argparse.Namespace) -> int:
    from harness.runner import RunInterrupted

    config = _config_from_args(args)
    try:
        summary = _execute(config, getattr(args, "executor", "local"),
                           getattr(args, "env_workers", 0))
    except RunInterrupted as exc:
        print(f"harness run: {exc}", file=sys.stderr)
        _close_sandboxes()  # env threads may still hold some: os._exit skips finalizers
        sys.stdout.flush()
        sys.stderr.flush()
        # every finished episode is committed and the store closed: end now, skipping the
        # interpreter's teardown (seconds on a loaded machine), as a signalled process does
        os._exit(128 + exc.signal_number)
    others = f", {summary.by_others} played by a concurrent run" if summary.by_others else ""
    print(f"run {summary.run_id}: played {summary.played} episodes ({summary.errors} errors), "
          f"skipped {summary.skipped} already stored{others}, in {summary.wall_s:.1f}s -> "
          f"{summary.db}")
    return 0


def cmd_list(args: argparse.Namespace) -> int:
    if args.what == "suites":
        from tasks import get_suite, suite_ids

        for suite_id in suite_ids():
            try:
                suite = get_suite(suite_id)
            except HarnessError as exc:
                print(f"{suite_id:24s} unavailable: {exc}")
                continue
            counts = {split: len(suite.tasks(split)) for split in ("train", "dev", "test")}
            print(f"{suite_id:24s} {counts['train']:5d} train {counts['dev']:4d} dev "
                  f"{counts['test']:4d} test  {suite.description}")
            print(f"{'':24s} comparability: {suite.comparability.summary()}")
    elif args.what == "layers":
        from harness.policies.layers import layer_names

        for name, description in layer_names().items():
            print(f"{name:12s} {description}")
    else:
        from harness.policies import policy_names

        for name, description in policy_names().items():
            print(f"{name:12s} {description}")
    return 0


def _print_table(header: Sequence[str], rows: Sequence[Sequence[str]], title: str) -> None:
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    table = Table(title=title)
    for column in header:
        table.add_column(column)
    for row in rows:  # cells are text, not markup: a policy id's "[...]" is printed as it is
        table.add_row(*(Text(str(cell)) for cell in row))
    Console(width=max(150, len(title))).print(table)


def show_leaderboard(db: str, *, run_id: str | None = None, suite: str | None = None,
                     markdown: bool = False, metric: str = "success",
                     include_audits: bool = False) -> None:
    from harness.report.leaderboard import (comparability_notes, error_notes,
                                            flagged_resolve_notes, leaderboard_table,
                                            scoped_episodes)

    episodes = scoped_episodes(db, run_id=run_id, suite=suite, include_audits=include_audits)
    if metric != "success":
        _show_metric_leaderboard(episodes, metric, markdown, db)
    else:
        _show_success_leaderboard(leaderboard_table(episodes), markdown)
    for line in [*error_notes(episodes), *comparability_notes(db, run_id=run_id, suite=suite),
                 *flagged_resolve_notes(db, run_id=run_id, suite=suite)]:
        print(line)


def _show_metric_leaderboard(episodes: Any, metric: str, markdown: bool,
                             db: str = "") -> None:
    from harness.report.abstention import (METRIC_LABELS, format_metric_row, metric_header,
                                           metric_leaderboard, metric_markdown)

    if metric in SCOPE_METRICS:
        _show_scope_leaderboard(episodes, metric, markdown, db)
        return
    table = metric_leaderboard(episodes, metric)
    if markdown:
        print(metric_markdown(table, metric))
    else:
        _print_table(metric_header(metric), [format_metric_row(r) for _, r in table.iterrows()],
                     f"Leaderboard: {METRIC_LABELS[metric]}, 95% cluster-bootstrap intervals "
                     "over tasks (tasks that declare answerability)")


def _show_scope_leaderboard(episodes: Any, metric: str, markdown: bool, db: str) -> None:
    from harness.report.abstention import format_metric_row, metric_header
    from harness.report.scope import (SCOPE_LABELS, scope_leaderboard, scope_markdown,
                                      with_scope)
    from harness.store import Store

    with Store(db, readonly=True) as store:
        table = scope_leaderboard(with_scope(store, episodes), metric)
    if markdown:
        print(scope_markdown(table, metric))
    else:
        _print_table(metric_header(metric), [format_metric_row(r) for _, r in table.iterrows()],
                     f"Leaderboard: {SCOPE_LABELS[metric]}, 95% cluster-bootstrap intervals "
                     "over tasks (tasks that declare their scope)")


def _show_success_leaderboard(table: Any, markdown: bool) -> None:
    from harness.report.leaderboard import HEADER, format_row, leaderboard_markdown

    if markdown:
        print(leaderboard_markdown(table))
    else:
        rows = [format_row(row) for _, row in table.iterrows()]
        _print_table(HEADER, rows, "Leaderboard: success rate; '≈ best' = not separable "
                     "from the best after Holm")


def cmd_leaderboard(args: argparse.Namespace) -> int:
    show_leaderboard(args.db, run_id=args.run_id, suite=args.suite,
                     markdown=args.format == "markdown", metric=args.metric,
                     include_audits=args.include_audits)
    return 0


def _compare_scope(episodes: Any, args: argparse.Namespace) -> str:
    import numpy as np

    from harness.report.scope import with_scope
    from harness.stats.scope import compare_scope, format_scope_comparison
    from harness.store import Store

    with Store(args.db, readonly=True) as store:
        frame = with_scope(store, episodes)
    result = compare_scope(frame, args.a, args.b, np.random.default_rng(args.seed),
                           suite=args.suite, n_resamples=args.resamples)
    return format_scope_comparison(result, args.metric)


def cmd_quickstart(args: argparse.Namespace) -> int:
    from harness.quickstart import quickstart_config

    config = quickstart_config(args.db)
    print(f"quickstart: {', '.join(config.policies)} on {', '.join(config.suites)} "
          f"({config.n_tasks} test tasks each)", file=sys.stderr)
    summary = _execute(config)
    show_leaderboard(config.db, run_id=summary.run_id)
    from harness.quickstart import finish_quickstart

    for line in finish_quickstart(summary, config.db):
        print(line)
    print(f"stored {summary.planned} episodes of run {summary.run_id} in {summary.db} "
          f"({summary.wall_s:.1f}s); see `harness leaderboard --db {summary.db} --format "
          "markdown` and harness.store.load_episodes()")
    return 0


def cmd_compare(args: argparse.Namespace) -> int:
    import numpy as np

    from harness.stats.compare import compare_policies, format_comparison
    from harness.store import load_episodes

    from harness.core import ConfigError

    if args.seed < 0 or args.resamples < 1:
        raise ConfigError(f"--seed must be >= 0 and --resamples >= 1, got {args.seed} and "
                          f"{args.resamples}")
    if args.margin is not None and not args.margin > 0:
        raise ConfigError(f"--margin must be > 0, got {args.margin}")
    episodes = load_episodes(args.db, run_id=args.run_id)
    if args.metric in ABSTENTION_METRICS:
        from harness.stats.abstention_runs import compare_abstention, \
            format_abstention_comparison

        result = compare_abstention(episodes, args.a, args.b, np.random.default_rng(args.seed),
                                    suite=args.suite, n_resamples=args.resamples)
        print(format_abstention_comparison(result, args.metric))
        return 0
    if args.metric in SCOPE_METRICS:
        print(_compare_scope(episodes, args))
        return 0
    comparison = compare_policies(episodes, args.a, args.b, rng=np.random.default_rng(args.seed),
                                  suite=args.suite, metric=args.metric, margin=args.margin,
                                  n_resamples=args.resamples)
    print(format_comparison(comparison))
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    from harness.store import check_output_file, export_episodes, load_episodes

    check_output_file(args.out, (".csv", ".parquet"))  # before the (long) read
    path = export_episodes(load_episodes(args.db, run_id=args.run_id), args.out)
    print(f"wrote {path}")
    return 0


BENCHES = {
    "runner": "harness.bench:runner_report",
    "stats": "harness.bench:stats_report",
    "report": "harness.report.bench:report_report",
    "signals": "harness.signal_eval.bench:signals_report",
    "llm": "harness.serve.bench_models:llm_report",
    "env": "harness.env_bench:env_report",
    "train": "harness.train.bench:train_report",
    "ray": "harness.executors.bench:ray_report",
    "view": "harness.view.bench:view_report",
    "merge": "harness.merge.bench:merge_report",
}
"""The engine's `harness bench NAME` -> ``"module:function"``; the function takes the parsed
arguments and returns the lines to print (each figure next to its same-run baseline). Families
add theirs with `tasks.plugins.register_bench` (`bench_targets` joins both)."""

COMMAND_MODULES: tuple[str, ...] = (
    "harness.report.audit_command",
    "harness.report.commands",
    "harness.signal_eval.cli",
    "harness.serve",
    "harness.tasks_cli",
    "harness.train.cli",
    "harness.study.cli",
    "harness.merge.cli",
    "harness.ablation.cli",
    "harness.data",
    "harness.view.commands",
)
"""The engine's modules that add subcommands: each has ``add_commands(subparsers)``; handlers
set ``func`` and import heavy dependencies lazily. Families register theirs with
`tasks.plugins.register_commands` (`command_modules` joins both)."""


def command_modules() -> list[str]:
    """The engine's command modules, then every family's (`tasks.plugins`), each once."""
    from tasks.plugins import command_modules as family_modules

    return list(dict.fromkeys((*COMMAND_MODULES, *family_modules())))


def bench_targets() -> dict[str, str]:
    """Every `harness bench` name -> ``"module:function"``: the engine's, then the families'."""
    from tasks.plugins import bench_names, get_bench

    return {**{name: get_bench(name) for name in bench_names()}, **BENCHES}


def cmd_sandbox_gc(args: argparse.Namespace) -> int:
    from tasks.sandbox_gc import collect_garbage

    for line in collect_garbage() or ["nothing to remove"]:
        print(line)
    return 0


STOPPED_IN_ORDER = ("run", "audit", "signals")
"""Commands that may hold sandboxes: SIGTERM stops them like SIGINT, and on either their
sandboxes are closed (processes killed, mounts and layers removed) before they exit. A
family's command joins them with ``parser.set_defaults(holds_sandboxes=True)``."""


class Stopped(BaseException):
    """SIGTERM reached a command of `STOPPED_IN_ORDER` (raised by its handler, as SIGINT
    raises KeyboardInterrupt)."""

    def __init__(self, signal_number: int):
        super().__init__(signal_number)
        self.signal_number = signal_number


def _on_stop_signal(number: int, frame: Any) -> None:
    """The first SIGINT or SIGTERM stops the command; later ones are ignored, so they cannot
    break into the cleanup the first one started (SIGKILL still ends it)."""
    for other in (signal.SIGINT, signal.SIGTERM):
        signal.signal(other, signal.SIG_IGN)
    if number == signal.SIGINT:
        raise KeyboardInterrupt
    raise Stopped(number)


def _close_sandboxes() -> None:
    """Close this process's open sandboxes, for good (no new one opens), signals held off."""
    from tasks.sandbox_gc import close_own_sandboxes

    held = []
    for number in (signal.SIGINT, signal.SIGTERM):
        try:
            held.append((number, signal.signal(number, signal.SIG_IGN)))
        except ValueError:  # not the main thread
            continue
    try:
        for line in close_own_sandboxes(refuse_new=True):
            log.info("%s", line)
    finally:
        for number, previous in held:
            signal.signal(number, previous)


@contextlib.contextmanager
def _stop_in_order(command: str, holds_sandboxes: bool = False) -> Iterator[None]:
    """For `STOPPED_IN_ORDER` commands: SIGTERM raises `Stopped` (SIGINT KeyboardInterrupt,
    as before); an interruption (either, or a run that a signal stopped) closes the sandboxes
    before it propagates. The previous handlers are back afterwards."""
    if command not in STOPPED_IN_ORDER and not holds_sandboxes:
        yield
        return
    previous = {}
    for number in (signal.SIGINT, signal.SIGTERM):
        try:
            previous[number] = signal.signal(number, _on_stop_signal)
        except ValueError:  # not the main thread (main() called from a thread)
            break
    try:
        yield
    except (KeyboardInterrupt, Stopped):
        _close_sandboxes()
        raise
    except HarnessError as exc:
        if getattr(exc, "signal_number", None) is not None:  # RunInterrupted
            _close_sandboxes()
        raise
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)


SANDBOX_FOLDERS = ("harness-sandboxes-{uid}", "harness-sandbox-")
"""`tasks.sandbox_gc`'s parent of sandbox roots and its legacy prefix, both in the temporary
folder (a test keeps them in step): importing `tasks` costs a tenth of a second, so a command
first looks whether there is anything to collect at all."""


def _sandbox_garbage_possible() -> bool:
    """Whether `tasks.sandbox_gc.collect_garbage` could find anything (one or two listings)."""
    tmp = tempfile.gettempdir()
    parent, legacy = SANDBOX_FOLDERS
    try:
        with os.scandir(os.path.join(tmp, parent.format(uid=os.geteuid()))) as entries:
            if next(entries, None) is not None:
                return True
    except OSError:
        pass
    try:
        return any(name.startswith(legacy) for name in os.listdir(tmp))
    except OSError:
        return False


def _collect_sandbox_garbage() -> None:
    """Remove what sandboxes of dead harness processes left (quietly; `harness sandbox gc`
    says what it removes). A machine without sandboxes has nothing to list."""
    if not sys.platform.startswith("linux") or not _sandbox_garbage_possible():
        return
    try:
        from tasks.sandbox_gc import collect_garbage

        for line in collect_garbage():
            log.info("sandbox gc: %s", line)
    except Exception as exc:  # noqa: BLE001 - housekeeping must never stop a command
        log.debug("sandbox gc skipped: %s", exc)


def cmd_bench(args: argparse.Namespace) -> int:
    from tasks.plugins import resolve

    report = resolve(bench_targets()[args.what])
    for line in report(args):
        print(line)
    return 0


ABSTENTION_METRICS = ("precision", "coverage", "abstention_precision", "abstention_recall",
                      "f1_precision_coverage", "f1_answer_abstain")
"""`harness.stats.abstention.METRICS`, spelt out so that building the parser imports no
statistics."""
SCOPE_METRICS = ("scope_precision", "scope_recall", "scope_f1", "app_progress")
"""`harness.stats.scope.METRICS`, spelt out likewise."""


def _add_reading_commands(sub: Any) -> None:
    """``leaderboard`` and ``compare``: the commands that read runs back."""
    p = sub.add_parser("leaderboard", help="success rate with 95%% intervals per policy x suite")
    p.add_argument("--db", default="results/harness.db")
    p.add_argument("--run-id")
    p.add_argument("--suite")
    p.add_argument("--format", choices=["terminal", "markdown"], default="terminal")
    p.add_argument("--include-audits", action="store_true",
                   help="rank the episodes of `harness audit` runs too (left out by default; "
                   "a run named with --run-id is always shown)")
    p.add_argument("--metric", choices=["success", *ABSTENTION_METRICS, *SCOPE_METRICS],
                   default="success",
                   help="success rate (default), an abstention metric over the tasks that "
                   "declare answerability (precision, coverage, abstention_precision, "
                   "abstention_recall, f1_precision_coverage, f1_answer_abstain), or a scope "
                   "metric over the tasks that declare their scope (scope_precision, "
                   "scope_recall, scope_f1, app_progress)")
    p.set_defaults(func=cmd_leaderboard)

    p = sub.add_parser("compare", help="paired comparison of two policies on shared episodes")
    p.add_argument("--a", required=True, help="policy A (its id in the store)")
    p.add_argument("--b", required=True, help="policy B")
    p.add_argument("--db", default="results/harness.db")
    p.add_argument("--run-id", action="append", help="only these runs (repeatable)")
    p.add_argument("--suite", help="only this suite (default: every suite both played)")
    p.add_argument("--metric", choices=["success", "score", *ABSTENTION_METRICS,
                                        *SCOPE_METRICS],
                   default="success", help="success, score, an abstention metric (paired "
                   "over the tasks that declare answerability) or a scope metric (over the "
                   "tasks that declare their scope)")
    p.add_argument("--margin", type=float, help="equivalence margin for the paired TOST, in "
                   "outcome units (e.g. 0.02); without it equivalence is not tested")
    p.add_argument("--resamples", type=int, default=10_000, help="bootstrap/permutation draws")
    p.add_argument("--seed", type=int, default=0, help="seed of the resampling RNG")
    p.set_defaults(func=cmd_compare)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="harness", description=__doc__)
    parser.add_argument("-v", "--verbose", action="store_true", help="log progress details")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("list", help="list registered suites, policies or harness layers")
    p.add_argument("what", choices=["suites", "policies", "layers"])
    p.set_defaults(func=cmd_list)

    p = sub.add_parser("run", help="play episodes and store them (resumes a stored run)")
    _run_flags(p)
    p.add_argument("--executor", default="local", help="local (default), ray (a local Ray "
                   "instance) or ray:ADDRESS (an existing Ray cluster, e.g. ray:auto)")
    p.add_argument("--env-workers", type=int, default=0, help="with --executor ray: play "
                   "episodes in N environment-worker actors per suite, each holding the suite "
                   "and an Env reused across episodes (0: one Ray task per episode)")
    p.set_defaults(func=cmd_run)

    _add_reading_commands(sub)

    p = sub.add_parser("quickstart", help="a small leaderboard of the scripted policies")
    p.add_argument("--db", default="results/harness.db")
    p.set_defaults(func=cmd_quickstart)

    p = sub.add_parser("export", help="write the episode table to .csv or .parquet")
    p.add_argument("out")
    p.add_argument("--db", default="results/harness.db")
    p.add_argument("--run-id")
    p.set_defaults(func=cmd_export)

    p = sub.add_parser("sandbox", help="sandbox housekeeping")
    sandbox = p.add_subparsers(dest="sandbox_command", required=True)
    gc = sandbox.add_parser("gc", help="kill, unmount and remove what sandboxes of harness "
                            "processes that are gone left behind (every command does it first)")
    gc.set_defaults(func=cmd_sandbox_gc)

    p = sub.add_parser("bench", help="performance figures next to a same-run baseline")
    p.add_argument("what", choices=sorted(bench_targets()))
    p.add_argument("--eval-seeds", type=int, default=None,
                   help="eval seeds per task, a count (default: the bench's own, stated in "
                   "its output: runner 40, medagentbench 1)")
    p.set_defaults(func=cmd_bench)

    for module in command_modules():  # a module listed twice adds its commands once
        importlib.import_module(module).add_commands(sub)
    return parser


def _stdout_reader_left() -> bool:
    """Whether standard output is a pipe whose reader has closed it (poll reports an error
    on the write end of such a pipe)."""
    import select

    try:
        poller = select.poll()
        poller.register(sys.stdout.fileno(), select.POLLERR)
        return any(event & select.POLLERR for _, event in poller.poll(0))
    except (AttributeError, ValueError, OSError):
        return False


def main(argv: Sequence[str] | None = None) -> int:
    try:
        parser = build_parser()
    except HarnessError as exc:  # an installed family that does not load
        print(f"harness: error: {exc}", file=sys.stderr)
        return 2
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING,
                        format="%(levelname)s %(name)s: %(message)s")
    handler: Callable[[argparse.Namespace], int] = args.func
    if args.command != "sandbox":  # `harness sandbox gc` does it itself, and says what
        _collect_sandbox_garbage()
    try:
        with _stop_in_order(args.command, getattr(args, "holds_sandboxes", False)):
            code = handler(args)
            if sys.stdout is not None:  # a reader that left is seen here, not at exit
                sys.stdout.flush()
            return code
    except HarnessError as exc:
        print(f"harness {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        if not _stdout_reader_left():  # another pipe (a worker, a server): keep the traceback
            raise
        # `harness list suites | head`: the reader left; not an error (141, as for SIGPIPE)
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    except KeyboardInterrupt:
        print("interrupted; finished episodes are stored, rerun the same command to resume",
              file=sys.stderr)
        return 130
    except Stopped as exc:
        print(f"harness {args.command}: stopped by {signal.Signals(exc.signal_number).name}; "
              "its sandboxes are closed", file=sys.stderr)
        return 128 + exc.signal_number


if __name__ == "__main__":
    sys.exit(main())
