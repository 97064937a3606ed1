"""Which instances this machine reproduces: the gold patch must resolve, the empty one fail.

`validate` builds each instance's environment (cached per repository and version), grades
the gold patch and the empty patch with the local backend, and says why an instance fails
(environment build error, the tests that did not pass under the gold patch, files the mirror
lacks). With `logs_dir` every test log is kept (``<id>.gold.log``, ``<id>.empty.log``) next
to the instance row (``<id>.json``): the recorded logs of the resolution-rule cross-check.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from harness.core import HarnessError
from tasks.swebench.data import Instance

logger = logging.getLogger(__name__)

__all__ = ["ValidationRow", "validate", "validation_lines", "crosscheck"]

NETWORK_SIGNS = ("Temporary failure in name resolution", "Network is unreachable",
                 "Name or service not known", "nodename nor servname")


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

    @property
    def reproduced(self) -> bool:
        return self.gold_resolved and self.empty_failed


def _missing_files(backend: object, instance: Instance) -> int:
    source = getattr(backend, "source", None)
    try:
        marker = Path(source(instance)) / ".git" / "harness-missing-files" if source else None
    except HarnessError:
        return 0
    return len(marker.read_text().split()) if marker is not None and marker.exists() else 0


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


def validate(instances: Sequence[Instance], backend: object, *,
             logs_dir: Path | None = None,
             progress: Callable[[str], None] | None = None) -> list[ValidationRow]:
    """Gold-resolves / empty-fails for each instance (see the module docstring)."""
    say = progress or (lambda line: None)
    rows: list[ValidationRow] = []
    seen: set[tuple[str, str]] = set()
    for instance in instances:
        say(f"{instance.instance_id}: environment")
        try:
            started = time.perf_counter()
            env = backend.environment(instance)  # type: ignore[attr-defined]
            key = (instance.repo, instance.version)
            fresh = not env.cached and key not in seen
            seen.add(key)
            build_s = (env.build_s or time.perf_counter() - started) if fresh else 0.0
            say(f"{instance.instance_id}: gold and empty patches")
            gold = backend.evaluate(instance, instance.patch)  # type: ignore[attr-defined]
            empty = backend.evaluate(instance, "")  # type: ignore[attr-defined]
        except HarnessError as exc:
            rows.append(ValidationRow(instance.instance_id, instance.repo, instance.version,
                                      False, False, 0.0, False, 0.0, 0.0,
                                      " ".join(f"error: {exc}".split())[:300]))
            say(f"{instance.instance_id}: {rows[-1].reason}")
            continue
        if logs_dir is not None:
            logs_dir.mkdir(parents=True, exist_ok=True)
            (logs_dir / f"{instance.instance_id}.gold.log").write_text(gold.log)
            (logs_dir / f"{instance.instance_id}.empty.log").write_text(empty.log)
            row = instance.row() | {"version": instance.version,
                                    "log_parser": instance.log_parser}
            (logs_dir / f"{instance.instance_id}.json").write_text(json.dumps(row))
        rows.append(ValidationRow(
            instance.instance_id, instance.repo, instance.version, gold.verdict.resolved,
            not empty.verdict.resolved, build_s, not fresh, gold.test_s, empty.test_s,
            _reason(gold, empty, _missing_files(backend, instance)),
            tuple(getattr(env, "notes", ()))))
        say(f"{instance.instance_id}: gold {'resolves' if gold.verdict.resolved else 'FAILS'}, "
            f"empty {'fails' if not empty.verdict.resolved else 'RESOLVES'}")
    return rows


def validation_lines(rows: Sequence[ValidationRow]) -> list[str]:
    """A Markdown table, a one-line summary, and each environment's notes (once per
    repository and version)."""
    lines = ["| instance | version | gold resolves | empty fails | env build s | gold test s "
             "| empty test s | why not |", "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        build = "cached" if r.env_cached else f"{r.build_s:.0f}"
        lines.append(f"| {r.instance_id} | {r.version} | {'yes' if r.gold_resolved else 'NO'} "
                     f"| {'yes' if r.empty_failed else 'NO'} | {build} | {r.gold_test_s:.1f} | "
                     f"{r.empty_test_s:.1f} | {r.reason} |")
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


def crosscheck(logs_dir: Path) -> list[tuple[str, str, bool, bool]]:
    """For every recorded log in `logs_dir` (``<id>.<kind>.log`` beside ``<id>.json``):
    ``(instance id, kind, our verdict, the swebench package's get_eval_report verdict)``.
    Repositories upstream does not list (swe-lite) are skipped: its function cannot read them."""
    from swebench.harness.log_parsers import MAP_REPO_TO_PARSER

    from tasks.swebench.data import instance_from_row
    from tasks.swebench.grading import grade_log, official_report

    rows = []
    for row_path in sorted(Path(logs_dir).glob("*.json")):
        instance = instance_from_row(json.loads(row_path.read_text()))
        if instance.repo not in MAP_REPO_TO_PARSER:
            continue
        for log_path in sorted(Path(logs_dir).glob(f"{instance.instance_id}.*.log")):
            kind = log_path.name[len(instance.instance_id) + 1:-len(".log")]
            ours = grade_log(log_path.read_text(errors="replace"), instance).resolved
            theirs = bool(official_report(instance, str(log_path), "patch")["resolved"])
            rows.append((instance.instance_id, kind, ours, theirs))
    return rows
