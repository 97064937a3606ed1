"""Which instances this machine reproduces: the gold patch must resolve, the empty one fail.

`validate` builds each instance's environment (cached per repository and version, shared by
every instance of it), grades the gold patch and the empty patch with the local backend, and
classifies why an instance does not reproduce (`REASON_CLASSES`) with the first error line of
its log. With `results_dir` each instance's row is stored as it finishes
(``<id>.result.json``) and an interrupted validation resumes from there; with `logs_dir`
every test log is kept (``<id>.gold.log``, ``<id>.empty.log``) next to the instance row
(``<id>.json``): the recorded logs of the resolution-rule cross-check.
"""

from __future__ import annotations

import json
import logging
import re
import subprocess
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, fields
from pathlib import Path

from harness.core import HarnessError
from tasks.swebench.data import Instance

logger = logging.getLogger(__name__)

__all__ = ["ValidationRow", "validate", "validation_lines", "crosscheck", "REASON_CLASSES",
           "classify", "first_error_line", "load_results", "harness_version",
           "repository_table", "manifest"]

NETWORK_SIGNS = ("Temporary failure in name resolution", "Network is unreachable",
                 "Name or service not known", "nodename nor servname")
REASON_CLASSES = ("environment build", "install", "test collection", "timeout",
                  "patch apply", "network", "flaky", "gold fails", "empty passes", "error")
"""Why an instance does not reproduce, first match wins: its environment could not be built;
the instance's own install (at ``base_commit``) failed; pytest could not start or collect;
the tests ran past the limit; the gold patch did not apply; failing tests reached for the
network, which the sandbox denies (upstream's Docker runs had it); the gold patch resolved on a
second run only; some tests fail under the gold patch; the empty patch resolves; anything
else the harness raised."""
_COLLECTION_SIGNS = ("ERROR collecting", "ImportError while loading conftest",
                     "INTERNALERROR", "errors during collection", "pytest: error:",
                     "usage: pytest", "requires pytest-", "no tests ran", "ERROR: file or "
                     "directory not found", "ERROR: not found:")
_INSTALL_SIGNS = ("No matching distribution found", "Could not find a version that satisfies",
                  "error: subprocess-exited-with-error", "ERROR: Failed building",
                  "Failed to build")
_ERROR_LINE = re.compile(r"^(?:E {2,}\S.*|(?:ERROR|INTERNALERROR|FATAL)\b.*|"
                         r"(?:\w+\.)*\w*(?:Error|Exception|Exit)\b: .*|.*No module named .*|"
                         r"fatal: .*|.* requires pytest-.*)$", re.M)


@dataclass(frozen=True)
class ValidationRow:
    """One instance's result; times in seconds (`build_s` is 0 when the env was cached)."""

    instance_id: str
    repo: str
    version: str
    gold_resolved: bool
    empty_failed: bool
    build_s: float
    env_cached: bool
    gold_test_s: float
    empty_test_s: float
    reason: str = ""
    env_notes: tuple[str, ...] = ()
    """Where the environment departs from the official image (dropped requirements, steps
    not run, the era packages were resolved in)."""
    reason_class: str = ""
    """One of `REASON_CLASSES` ("" when the instance reproduces)."""
    first_error: str = ""
    """The first error line of the log that decided `reason_class`."""
    env_digest: str = ""
    """The environment's cache key (repository, version, recipe hash)."""

    @property
    def reproduced(self) -> bool:
        return self.gold_resolved and self.empty_failed

    def to_json(self) -> dict:
        return asdict(self) | {"reproduced": self.reproduced}

    @classmethod
    def from_json(cls, data: dict) -> ValidationRow:
        known = {f.name for f in fields(cls)}
        values = {k: v for k, v in data.items() if k in known}
        values["env_notes"] = tuple(values.get("env_notes", ()))
        return cls(**values)


def harness_version() -> str:
    """``git describe --always --dirty`` of this checkout, else the package version."""
    try:
        done = subprocess.run(["git", "describe", "--always", "--dirty"], capture_output=True,
                              text=True, timeout=5, cwd=Path(__file__).parent)
        if done.returncode == 0 and done.stdout.strip():
            return done.stdout.strip()
    except (OSError, subprocess.SubprocessError):
        pass
    from importlib import metadata

    try:
        return metadata.version("agent-rl-harness")
    except metadata.PackageNotFoundError:
        return "unknown"


def first_error_line(log: str) -> str:
    """The first line of `log` that reads as an error (pytest's ``E   ...``, ``ERROR ...``,
    ``SomeError: ...``), searched in the test output first, then in the whole log; ""."""
    start = log.find(">>>>> Start Test Output")
    for text in ((log[start:],) if start >= 0 else ()) + (log,):
        for match in _ERROR_LINE.finditer(text):
            line = " ".join(match.group(0).split())
            if line and not line.startswith("+ "):
                return line[:240]
    return ""


def _missing_files(backend: object, instance: Instance) -> int:
    source = getattr(backend, "source", None)
    try:
        marker = Path(source(instance)) / ".git" / "harness-missing-files" if source else None
    except HarnessError:
        return 0
    return len(marker.read_text().split()) if marker is not None and marker.exists() else 0


def classify(gold: object, empty: object) -> str:
    """The reason class (`REASON_CLASSES`) of a graded gold/empty pair; "" when it
    reproduces. `gold` and `empty` are `tasks.swebench.local.EvalResult`s."""
    verdict = gold.verdict  # type: ignore[attr-defined]
    if not verdict.applied:
        if gold.timed_out:  # type: ignore[attr-defined]
            return "timeout"
        if ">>>>> Patch Apply Failed" in gold.log:  # type: ignore[attr-defined]
            return "patch apply"
        return "test collection"
    if not verdict.resolved:
        head, _, tests = gold.log.partition(">>>>> Start Test Output")  # type: ignore
        failed = verdict.failed_tests()
        absent = [t for t in failed if t not in verdict.status_map]
        if any(sign in tests for sign in _COLLECTION_SIGNS) or (failed and len(absent)
                                                                 == len(failed)):
            return ("install" if any(sign in head for sign in _INSTALL_SIGNS)
                    else "test collection")
        return "network" if any(sign in tests for sign in NETWORK_SIGNS) else "gold fails"
    if empty.verdict.resolved:  # type: ignore[attr-defined]
        return "empty passes"
    return ""


def _reason(gold: object, empty: object, missing: int) -> str:
    parts = []
    if not gold.verdict.applied:  # type: ignore[attr-defined]
        parts.append("gold: patch did not apply or the tests did not run"
                     + (" (timed out)" if gold.timed_out else ""))  # type: ignore[attr-defined]
    elif not gold.verdict.resolved:  # type: ignore[attr-defined]
        failed = gold.verdict.failed_tests()  # type: ignore[attr-defined]
        absent = [t for t in failed if t not in gold.verdict.status_map]  # type: ignore
        parts.append(f"gold: {len(failed)} tests not passing, e.g. {', '.join(failed[:2])}"[:300])
        if absent:
            parts.append(f"{len(absent)} of them never appear in the log (ids that did not "
                         "run here)")
    if empty.verdict.resolved:  # type: ignore[attr-defined]
        parts.append("empty patch resolves")
    if missing and parts:
        parts.append(f"{missing} files absent from the mirror")
    if parts and any(sign in gold.log for sign in NETWORK_SIGNS):  # type: ignore[attr-defined]
        parts.append("tests reach for the network, which the sandbox denies (upstream's "
                     "Docker runs had it)")
    return "; ".join(parts)


def load_results(results_dir: Path) -> dict[str, ValidationRow]:
    """The rows stored in `results_dir` (``<id>.result.json``), by instance id."""
    rows = {}
    for path in sorted(Path(results_dir).glob("*.result.json")):
        row = ValidationRow.from_json(json.loads(path.read_text()))
        rows[row.instance_id] = row
    return rows


def _env_digest(env: object) -> str:
    layers = getattr(env, "layers", ())
    return Path(layers[0]).parent.name if layers else ""


def _validate_one(instance: Instance, backend: object, logs_dir: Path | None,
                  seen: set, say: Callable[[str], None]) -> ValidationRow:
    say(f"{instance.instance_id}: environment")
    stage = "environment build"
    try:
        started = time.perf_counter()
        env = backend.environment(instance)  # type: ignore[attr-defined]
        key = (instance.repo, instance.version)
        fresh = not env.cached and key not in seen
        seen.add(key)
        build_s = (env.build_s or time.perf_counter() - started) if fresh else 0.0
        stage = "install"
        prepare = getattr(backend, "prepare", None)
        if prepare is not None:
            prepare(instance)
        stage = "error"
        say(f"{instance.instance_id}: gold and empty patches")
        gold = backend.evaluate(instance, instance.patch)  # type: ignore[attr-defined]
        empty = backend.evaluate(instance, "")  # type: ignore[attr-defined]
        reason_class = classify(gold, empty)
        if reason_class == "gold fails":  # once more: a flaky test passes on a second run
            again = backend.evaluate(instance, instance.patch)  # type: ignore[attr-defined]
            if again.verdict.resolved:
                reason_class = "flaky"
    except HarnessError as exc:
        message = " ".join(f"error: {exc}".split())
        return ValidationRow(instance.instance_id, instance.repo, instance.version, False,
                             False, 0.0, False, 0.0, 0.0, message[:300],
                             reason_class=stage, first_error=first_error_line(str(exc))
                             or message[:240])
    if logs_dir is not None:
        logs_dir.mkdir(parents=True, exist_ok=True)
        (logs_dir / f"{instance.instance_id}.gold.log").write_text(gold.log)
        (logs_dir / f"{instance.instance_id}.empty.log").write_text(empty.log)
        row = instance.row() | {"version": instance.version, "log_parser": instance.log_parser}
        (logs_dir / f"{instance.instance_id}.json").write_text(json.dumps(row))
    decisive = empty.log if reason_class == "empty passes" else gold.log
    return ValidationRow(
        instance.instance_id, instance.repo, instance.version, gold.verdict.resolved,
        not empty.verdict.resolved, build_s, not fresh, gold.test_s, empty.test_s,
        _reason(gold, empty, _missing_files(backend, instance)),
        tuple(getattr(env, "notes", ())), reason_class,
        first_error_line(decisive) if reason_class else "", _env_digest(env))


def validate(instances: Sequence[Instance], backend: object, *,
             logs_dir: Path | None = None, results_dir: Path | None = None, jobs: int = 1,
             progress: Callable[[str], None] | None = None) -> list[ValidationRow]:
    """Gold-resolves / empty-fails for each instance (see the module docstring), `jobs`
    instances at a time; instances with a row in `results_dir` are not run again."""
    say = progress or (lambda line: None)
    done = load_results(results_dir) if results_dir is not None else {}
    pending = [i for i in instances if i.instance_id not in done]
    if len(pending) < len(instances):
        say(f"resuming: {len(instances) - len(pending)} instances already validated")
    seen: set[tuple[str, str]] = set()
    lock, started, finished = threading.Lock(), time.perf_counter(), [0]

    def one(instance: Instance) -> ValidationRow:
        row = _validate_one(instance, backend, logs_dir, seen, say)
        if results_dir is not None:
            results_dir.mkdir(parents=True, exist_ok=True)
            path = results_dir / f"{instance.instance_id}.result.json"
            path.with_suffix(".tmp").write_text(json.dumps(
                row.to_json() | {"harness_version": harness_version(),
                                 "finished": time.strftime("%Y-%m-%dT%H:%M:%SZ",
                                                           time.gmtime())}, indent=1))
            path.with_suffix(".tmp").rename(path)
        with lock:
            finished[0] += 1
            elapsed = time.perf_counter() - started
            eta = elapsed / finished[0] * (len(pending) - finished[0])
            outcome = "reproduced" if row.reproduced else \
                f"NOT reproduced ({row.reason_class}: {row.first_error[:120]})"
            say(f"[{finished[0]}/{len(pending)}] {instance.instance_id}: {outcome}; "
                f"{elapsed / 60:.0f} min, about {eta / 60:.0f} min left")
        return row

    if jobs <= 1:
        fresh = [one(i) for i in pending]
    else:
        with ThreadPoolExecutor(max_workers=jobs) as pool:
            fresh = list(pool.map(one, pending))
    by_id = done | {row.instance_id: row for row in fresh}
    return [by_id[i.instance_id] for i in instances]


def validation_lines(rows: Sequence[ValidationRow]) -> list[str]:
    """A Markdown table, a one-line summary, and each environment's notes (once per
    repository and version)."""
    lines = ["| instance | version | gold resolves | empty fails | env build s | gold test s "
             "| empty test s | why not |", "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        build = "cached" if r.env_cached else f"{r.build_s:.0f}"
        why = (f"{r.reason_class}: {r.first_error}; {r.reason}" if r.reason_class
               else r.reason).replace("|", "\\|")
        lines.append(f"| {r.instance_id} | {r.version} | {'yes' if r.gold_resolved else 'NO'} "
                     f"| {'yes' if r.empty_failed else 'NO'} | {build} | {r.gold_test_s:.1f} | "
                     f"{r.empty_test_s:.1f} | {why} |")
    good = sum(r.reproduced for r in rows)
    lines.append(f"\n{good} of {len(rows)} instances reproduced here (gold resolves and the "
                 f"empty patch fails); {len(rows) - good} not")
    noted: dict[tuple[str, str], tuple[str, ...]] = {}
    for r in rows:
        if r.env_notes:
            noted.setdefault((r.repo, r.version), r.env_notes)
    if noted:
        lines.append("\nEnvironment notes (where an environment departs from the official "
                     "image):")
        lines += [f"- {repo} {version}: {note}" for (repo, version), notes in noted.items()
                  for note in notes]
    return lines


def repository_table(rows: Sequence[ValidationRow]) -> list[str]:
    """A Markdown table per repository: attempted, reproduced, and the instances not
    reproduced by reason class (only the classes that occur get a column)."""
    classes = [c for c in REASON_CLASSES if any(r.reason_class == c for r in rows)]
    lines = ["| repository | attempted | reproduced |" + "".join(f" {c} |" for c in classes),
             "|---|---|---|" + "---|" * len(classes)]
    repos = sorted({r.repo for r in rows})
    for repo in repos + ["all"]:
        mine = [r for r in rows if repo in ("all", r.repo)]
        counts = [sum(r.reason_class == c for r in mine) for c in classes]
        lines.append(f"| {repo} | {len(mine)} | {sum(r.reproduced for r in mine)} |"
                     + "".join(f" {n} |" for n in counts))
    return lines


def manifest(rows: Sequence[ValidationRow], provenance: dict) -> dict:
    """The manifest of a validation: `provenance` (date, command, commit, tables) and one
    entry per instance (reproduced, reason class, first error line, environment digest,
    the harness version that validated it)."""
    return {"provenance": provenance, "summary": {
        "attempted": len(rows), "reproduced": sum(r.reproduced for r in rows)},
        "instances": {r.instance_id: {
            "repo": r.repo, "version": r.version, "reproduced": r.reproduced,
            "reason_class": r.reason_class, "first_error": r.first_error,
            "env_digest": r.env_digest,
            "harness_version": provenance.get("harness_version", "")}
            for r in sorted(rows, key=lambda r: r.instance_id)}}


def crosscheck(logs_dir: Path) -> list[tuple[str, str, bool, bool]]:
    """For every recorded log in `logs_dir` (``<id>.<kind>.log`` beside ``<id>.json``):
    ``(instance id, kind, our verdict, the swebench package's get_eval_report verdict)``.
    Repositories upstream does not list (swe-lite) are skipped: its function cannot read them."""
    from swebench.harness.log_parsers import MAP_REPO_TO_PARSER

    from tasks.swebench.data import instance_from_row
    from tasks.swebench.grading import grade_log, official_report

    rows = []
    for row_path in sorted(Path(logs_dir).glob("*.json")):
        if row_path.name.endswith(".result.json"):
            continue
        instance = instance_from_row(json.loads(row_path.read_text()))
        if instance.repo not in MAP_REPO_TO_PARSER:
            continue
        for log_path in sorted(Path(logs_dir).glob(f"{instance.instance_id}.*.log")):
            kind = log_path.name[len(instance.instance_id) + 1:-len(".log")]
            ours = grade_log(log_path.read_text(errors="replace"), instance).resolved
            theirs = bool(official_report(instance, str(log_path), "patch")["resolved"])
            rows.append((instance.instance_id, kind, ours, theirs))
    return rows
