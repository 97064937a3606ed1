"""Which Terminal-Bench tasks this machine runs as upstream intends: ``python -m
tasks.terminal.validate``.

For every task folder under ``--tasks`` (else ``TERMINAL_BENCH_TASKS``): whether it loads as
supported (else the reason), whether its environment builds (else the error), whether its own
solution passes the verifier (oracle) and whether submitting at once fails it (it must). Each
task's row is written to a JSON results file as soon as it is known, so an interrupted
validation continues where it stopped (rows of tasks whose translation changed since are
measured again). ``--manifest FILE`` writes the expected outcome per task with its provenance
(dataset commit, date, command): the file the project commits, never the tasks themselves.
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import logging
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from pathlib import Path

from harness.core import ConfigError, HarnessError

logger = logging.getLogger(__name__)

__all__ = ["TaskOutcome", "main", "summary", "validate_tasks", "task_key"]


@dataclass(frozen=True)
class TaskOutcome:
    """One task's result; `built`, `oracle` and `submit` are None where not reached (an
    unsupported task is never built, a task that did not build is never played)."""

    task_id: str
    key: str
    """`task_key` of the translation measured (a changed translation is measured again)."""
    supported: bool
    built: bool | None
    oracle: bool | None
    submit: bool | None
    """True when submitting at once *passed* (a task the verifier cannot tell from done)."""
    reason: str = ""
    build_s: float = 0.0
    oracle_s: float = 0.0

    @property
    def stage(self) -> str:
        """``unsupported``, ``build failed``, ``oracle failed``, ``submit passes`` or ``ok``."""
        if not self.supported:
            return "unsupported"
        if not self.built:
            return "build failed"
        if not self.oracle:
            return "oracle failed"
        return "submit passes" if self.submit else "ok"


def task_key(task) -> str:
    """A digest of what the harness makes of a task: its translation and settings, the
    emulation of its base image, its verifier's scripts and the stand-ins on their PATH."""
    from tasks.terminal.base_images import BASE_IMAGES
    from tasks.terminal.environment import SHIMS, task_base

    label = task_base(task)[0]
    image = next((i for i in BASE_IMAGES if i.label == label), None)
    text = repr((task.format, task.packages, task.steps, task.workdir, task.env,
                 task.solution, task.unsupported, task.network, task.agent_timeout_s,
                 task.verifier_timeout_s, image, task.extras.get("run_tests"),
                 task.extras.get("test_scripts"),
                 sorted((f.name, f.read_bytes()) for f in SHIMS.iterdir())))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _play(env, actions: Callable[[object], str | None], max_steps: int
          ) -> tuple[bool, str, list[str]]:
    """Reset `env` and play until it ends; (won, verifier verdict, hosts the egress refused:
    outside the registries, what the episode could not reach)."""
    env.reset(seed=0)
    refused: list[str] = []
    for _ in range(max_steps):
        result = env.step(actions(env))
        refused += [f"{r['host']}" for r in result.info.get("egress", ())
                    if r.get("verdict") == "refused" and r.get("host")]
        if result.terminated or result.truncated:
            return (bool(result.info.get("won")), str(result.info.get("verifier", "")),
                    sorted(set(refused)))
    return False, "did not end", sorted(set(refused))


def measure(suite, task_id: str) -> TaskOutcome:
    """Build, oracle and submit-at-once of one task of `suite`."""
    from tasks.terminal.taskdir import Unsupported

    task = suite.all_tasks[task_id]
    key = task_key(task)
    if task.unsupported:
        return TaskOutcome(task_id, key, False, None, None, None, task.unsupported)
    started = time.monotonic()
    try:
        env = suite.make_env(task_id)
    except (Unsupported, HarnessError) as exc:
        return TaskOutcome(task_id, key, True, False, None, None, f"build: {exc}"[:600],
                           time.monotonic() - started)
    build_s = time.monotonic() - started
    try:
        started = time.monotonic()
        steps = len(env._oracle) + 2
        oracle, verdict, refused = _play(env, lambda e: e.oracle_action(), steps)
        oracle_s = time.monotonic() - started
        submit, _, _ = _play(env, lambda e: "submit", 2)
    finally:
        env.close()
    reason = "" if oracle else f"oracle: verifier says {verdict}"
    if refused and not oracle:
        reason += f"; outside the registries, the episode asked for {', '.join(refused)}"
    if oracle and submit:
        reason = "submitting at once passes the verifier"
    return TaskOutcome(task_id, key, True, True, oracle, submit, reason, build_s, oracle_s)


def validate_tasks(suite, results: Path, task_ids: Iterable[str] | None = None, *,
                   say: Callable[[str], None] = logger.info, jobs: int = 1
                   ) -> list[TaskOutcome]:
    """Measure every task of `suite` (or `task_ids`), `jobs` at once, resuming from `results`
    (a JSON file rewritten after each task); rows whose `key` still matches are kept."""
    done: dict[str, dict] = {}
    if results.exists():
        try:
            done = json.loads(results.read_text()).get("tasks", {})
        except (ValueError, AttributeError):
            raise ConfigError(f"{results} is not a results file of this command; move it "
                              "away or name another with --results") from None
    ids = list(task_ids or suite.all_tasks)
    rows: dict[str, TaskOutcome] = {}
    todo = []
    for task_id in ids:
        previous = done.get(task_id)
        if previous and previous.get("key") == task_key(suite.all_tasks[task_id]):
            rows[task_id] = TaskOutcome(**previous)
        else:
            todo.append(task_id)
    for row in _measured(suite, todo, jobs):
        rows[row.task_id] = row
        done[row.task_id] = asdict(row)
        results.parent.mkdir(parents=True, exist_ok=True)
        partial = results.with_suffix(".partial")
        partial.write_text(json.dumps({"tasks": done}, indent=1, sort_keys=True))
        partial.replace(results)
        say(f"[{len(rows)}/{len(ids)}] {row.task_id}: {row.stage}"
            + (f" ({row.reason[:160]})" if row.reason else ""))
    return [rows[i] for i in ids]


def _measured(suite, task_ids: list[str], jobs: int) -> Iterable[TaskOutcome]:
    """`measure` of each task, as they finish (`jobs` worker threads: each task's work is in
    its sandboxes' processes)."""
    if jobs <= 1:
        yield from (measure(suite, task_id) for task_id in task_ids)
        return
    from concurrent.futures import ThreadPoolExecutor, as_completed

    with ThreadPoolExecutor(max_workers=jobs) as pool:
        futures = [pool.submit(measure, suite, task_id) for task_id in task_ids]
        for future in as_completed(futures):
            yield future.result()


def environment_disk(suite, task_ids: Iterable[str]) -> dict[str, int]:
    """What the environments of `task_ids` (built ones; nothing is built here) take on disk:
    the distinct rootfs and layers they stack, counted once each (``du``, files hard-linked
    between them once)."""
    from tasks.terminal.environment import build_environment
    from tasks.terminal.taskdir import Unsupported

    folders: set[Path] = set()
    for task_id in task_ids:
        try:
            environment = build_environment(suite.all_tasks[task_id],
                                            agent_user=suite.agent_user)
        except (Unsupported, HarnessError):
            continue
        folders |= {environment.rootfs, *environment.layers}
    if not folders:
        return {"rootfs": 0, "layers": 0, "bytes": 0}
    done = subprocess.run(["du", "-scB1", *sorted(map(str, folders))], capture_output=True,
                          text=True)
    total = int(done.stdout.strip().splitlines()[-1].split()[0]) if done.stdout else 0
    rootfs = {f for f in folders if f.parent.name != "layers"}
    return {"rootfs": len(rootfs), "layers": len(folders) - len(rootfs), "bytes": total}


def summary(rows: list[TaskOutcome]) -> dict[str, int]:
    """Counts: tasks, unsupported, supported, built, oracle passes, submit-at-once passes."""
    return {"tasks": len(rows), "unsupported": sum(not r.supported for r in rows),
            "supported": sum(r.supported for r in rows),
            "built": sum(bool(r.built) for r in rows),
            "oracle_passes": sum(bool(r.oracle) for r in rows),
            "submit_passes": sum(bool(r.submit) for r in rows)}


def manifest(rows: list[TaskOutcome], *, dataset: str, commit: str, command: str,
             disk: dict[str, int] | None = None) -> dict:
    """The committed record: provenance, counts, what the built environments take on disk
    and each task's expected outcome."""
    return {"dataset": dataset, "commit": commit,
            "date": datetime.date.today().isoformat(), "command": command,
            "summary": summary(rows), "environments_on_disk": disk or {},
            "tasks": {r.task_id: {"builds": r.built, "oracle": r.oracle, "submit": r.submit,
                                  "stage": r.stage, "reason": r.reason} for r in rows}}


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m tasks.terminal.validate", description=__doc__.split("\n\n")[1])
    parser.add_argument("--tasks", help="folder of task folders (else $TERMINAL_BENCH_TASKS)")
    parser.add_argument("--results", default="results/terminal-validate.json",
                        help="JSON file of per-task rows, read to resume and rewritten")
    parser.add_argument("--only", action="append", help="task ids (repeat or comma-separate)")
    parser.add_argument("--jobs", type=int, default=1,
                        help="tasks measured at once (each builds and plays in its own "
                             "sandboxes; 2 suit a 2-core machine)")
    parser.add_argument("--load-only", action="store_true",
                        help="only say which tasks load as supported (nothing built)")
    parser.add_argument("--manifest", help="write the expected outcome per task here")
    parser.add_argument("--dataset", default="terminal-bench-core",
                        help="dataset name recorded in the manifest")
    parser.add_argument("--commit", default="",
                        help="commit of the dataset repository, recorded in the manifest")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    say = (lambda line: print(line, file=sys.stderr, flush=True))
    try:
        from tasks.terminal.suite import TerminalBenchSuite

        suite = TerminalBenchSuite(args.tasks)
        wanted = [v.strip() for item in args.only or [] for v in item.split(",") if v.strip()]
        for task_id in wanted:
            if task_id not in suite.all_tasks:
                from harness.core import UnknownNameError

                raise UnknownNameError("task", task_id, suite.all_tasks)
        if args.load_only:
            for task in suite.all_tasks.values():
                print(f"{task.id}\t{task.unsupported or 'supported'}")
            print(f"{len(suite.all_tasks) - len(suite.unsupported)} of {len(suite.all_tasks)} "
                  "supported")
            return 0
        rows = validate_tasks(suite, Path(args.results), wanted or None, say=say,
                              jobs=max(1, args.jobs))
    except HarnessError as exc:
        print(f"python -m tasks.terminal.validate: error: {exc}", file=sys.stderr)
        return 2
    for row in rows:
        print(f"{row.task_id}\t{row.stage}\t{row.reason[:200]}")
    counts = summary(rows)
    print(" ".join(f"{name}={value}" for name, value in counts.items()))
    disk = environment_disk(suite, [r.task_id for r in rows if r.built])
    print(f"environments on disk: {disk['rootfs']} rootfs and {disk['layers']} layers, "
          f"{disk['bytes'] / 1e9:.2f} GB")
    if args.manifest:
        command = "python -m tasks.terminal.validate " + " ".join(
            a for a in (argv if argv is not None else sys.argv[1:]))
        if not args.tasks:  # where the tasks came from
            command = f"TERMINAL_BENCH_TASKS={os.environ.get('TERMINAL_BENCH_TASKS')} {command}"
        Path(args.manifest).write_text(json.dumps(
            manifest(rows, dataset=args.dataset, commit=args.commit, command=command.strip(),
                     disk=disk),
            indent=1, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
