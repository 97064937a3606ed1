"""``harness bench swebench``: environment build time (uncached vs cached) and per-episode
sandbox costs, each next to its same-run baseline.

- swe-lite: the shared environment (cached after the first call), the sandbox of an episode
  (fresh writable layer + the repository copied to ``/testbed``), a snapshot/restore, and
  the grading of the gold patch (a fresh sandbox, apply, tests, parse);
- real instances, when ``$SWEBENCH_REPOS`` names a mirror directory: one (repository,
  version) environment built from scratch into a temporary cache (uncached), then asked for
  again (cached), then the same episode figures; every environment already in the cache is
  listed with its recorded build time.
"""

from __future__ import annotations

import json
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from typing import Any

__all__ = ["swebench_report"]

REAL_INSTANCE = "pylint-dev__astroid-941"
"""A small real instance (astroid 2.5: Python 3.9, pytest, `pip install -e .`)."""


def _timed(action: Callable[[], Any], repeats: int = 1) -> tuple[float, Any]:
    """Median wall seconds of `repeats` calls and the last result."""
    times, result = [], None
    for _ in range(repeats):
        started = time.perf_counter()
        result = action()
        times.append(time.perf_counter() - started)
    return statistics.median(times), result


def _episode_lines(label: str, backend: Any, instance: Any, repeats: int) -> list[str]:
    def open_close() -> None:
        backend.open_sandbox(instance).close()

    setup_s, _ = _timed(open_close, repeats)
    sandbox = backend.open_sandbox(instance)
    try:
        snap_s, snap = _timed(sandbox.snapshot, repeats)
        restore_s, _ = _timed(lambda: sandbox.restore(snap), repeats)
        command_s, _ = _timed(lambda: sandbox.run("git status --short", cwd="/testbed"),
                              repeats)
    finally:
        sandbox.close()
    grade_s, result = _timed(lambda: backend.evaluate(instance, instance.patch))
    return [f"{label}: episode sandbox setup {setup_s * 1000:.0f} ms (median of {repeats}; "
            f"a shell command in it {command_s * 1000:.0f} ms, snapshot "
            f"{snap_s * 1000:.0f} ms, restore {restore_s * 1000:.0f} ms)",
            f"{label}: grading the gold patch {grade_s:.1f} s (fresh sandbox {result.setup_s:.1f}"
            f" s + tests {result.test_s:.1f} s), resolved={result.verdict.resolved}"]


def _lite_lines(repeats: int) -> list[str]:
    from tasks.swebench import lite

    uncached_s, _ = _timed(lambda: lite.lite_backend())
    cached_s, backend = _timed(lambda: lite.lite_backend(), repeats)
    instance = lite.lite_instances()[0]
    lines = [f"swe-lite environment (shared by all {len(lite.lite_instances())} instances): "
             f"first call {uncached_s * 1000:.0f} ms, cached {cached_s * 1000:.1f} ms"]
    return lines + _episode_lines(f"swe-lite {instance.instance_id}", backend, instance,
                                  repeats)


def _real_lines(repeats: int) -> list[str]:
    from tasks.swebench.data import TABLES, load_table
    from tasks.swebench.local import real_backend
    from tasks.swebench.repos import CACHE_ENV, cache_root

    recorded = sorted(cache_root().glob("envs/*/env.json"))
    lines = []
    for path in recorded:
        record = json.loads(path.read_text())
        spec = record["spec"]
        lines.append(f"cached environment {spec['repo']} {spec['version']} (Python "
                     f"{spec['python']}): built in {record['build_s']:.0f} s when first "
                     "asked for")
    if not os.environ.get("SWEBENCH_REPOS"):
        return lines + ["real instances: set SWEBENCH_REPOS to a mirror directory to time an "
                        "uncached build"]
    pool = {i.instance_id: i for table in TABLES for i in load_table(table)}
    instance = pool[REAL_INSTANCE]
    previous = os.environ.get(CACHE_ENV)
    with tempfile.TemporaryDirectory(prefix="swe-bench-cache-") as tmp:
        os.environ[CACHE_ENV] = tmp
        try:
            backend = real_backend()
            uncached_s, env = _timed(lambda: backend.environment(instance))
            fresh = real_backend()
            cached_s, _ = _timed(lambda: fresh.environment(instance), repeats)
            lines.append(f"{instance.repo} {instance.version} environment: uncached "
                         f"{uncached_s:.0f} s (wheels, venv, offline install), cached "
                         f"{cached_s * 1000:.0f} ms")
            lines += _episode_lines(instance.instance_id, backend, instance, repeats)
        finally:
            if previous is None:
                os.environ.pop(CACHE_ENV, None)
            else:
                os.environ[CACHE_ENV] = previous
    return lines


def swebench_report(args: Any = None) -> list[str]:
    """The lines `harness bench swebench` prints."""
    from tasks.sandbox import sandbox_available

    reason = sandbox_available()
    if reason is not None:
        return [f"swebench bench needs the sandbox: {reason}"]
    repeats = 5
    return _lite_lines(repeats) + _real_lines(repeats)
