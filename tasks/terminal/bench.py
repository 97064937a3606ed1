"""``harness bench sandbox``: the sandbox's costs next to same-run baselines.

Per-command overhead: the median wall time of ``Sandbox.run(cmd)`` minus that of a bare
``subprocess.run(["bash", "-c", cmd])`` of the same command, interleaved (target < 20 ms).
Episode setup: a fresh `Sandbox` over the terminal rootfs and a task layer (tmpfs, overlay
mount, holder process; closed again), next to copying the episode's starting files with
``cp -a`` (the task layer; and the whole rootfs, which a copy-based sandbox would need)
(target < 1 s after the first rootfs build).
"""

from __future__ import annotations

import os
import resource
import statistics
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tasks.sandbox import Sandbox, build_rootfs
from tasks.terminal.environment import TERMINAL_RECIPE, build_environment
from tasks.terminal.suite import LITE_DIR
from tasks.terminal.taskdir import load_task

__all__ = ["SandboxBench", "bench_sandbox", "sandbox_report"]

COMMANDS = ("true", "echo hello; ls / | wc -l")


@dataclass(frozen=True)
class SandboxBench:
    """Medians in milliseconds; `rootfs_build_s` is None when the rootfs was cached."""

    n: int
    bare_ms: dict[str, float]
    sandbox_ms: dict[str, float]
    bare_min_ms: dict[str, float]
    sandbox_min_ms: dict[str, float]
    """Fastest run of each: the latency with the least interference from other load."""
    bare_cpu_ms: float
    sandbox_cpu_ms: float
    """Mean CPU time (user + system, every process of the command) per command."""
    setup_ms: float
    copy_layer_ms: float
    copy_rootfs_ms: float
    rootfs_build_s: float | None

    @property
    def overhead_ms(self) -> float:
        return max(self.sandbox_ms[c] - self.bare_ms[c] for c in self.bare_ms)


def _median_ms(samples: list[float]) -> float:
    return 1000 * statistics.median(samples)


_CPU = {"bare": 0.0, "sandbox": 0.0}


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _time(function, account: str | None = None) -> float:
    cpu = _children_cpu()
    started = time.perf_counter()
    function()
    elapsed = time.perf_counter() - started
    if account:
        _CPU[account] += _children_cpu() - cpu
    return elapsed


def _copy(source: Path) -> float:
    with tempfile.TemporaryDirectory(prefix="harness-bench-copy-") as tmp:
        return _time(lambda: subprocess.run(["cp", "-a", str(source), f"{tmp}/copy"],
                                            check=True))


def bench_sandbox(n: int = 40, setups: int = 10) -> SandboxBench:
    """Measure (see the module docstring); `n` commands of each kind, `setups` episodes."""
    started = time.perf_counter()
    rootfs = build_rootfs(TERMINAL_RECIPE)
    build_s = time.perf_counter() - started
    environment = build_environment(load_task(LITE_DIR / "count-words"))
    bare: dict[str, list[float]] = {c: [] for c in COMMANDS}
    boxed: dict[str, list[float]] = {c: [] for c in COMMANDS}
    with Sandbox(rootfs, layers=environment.layers, workdir="/app") as box:
        for command in COMMANDS:  # warm both paths once
            box.run(command)
            subprocess.run(["bash", "-c", command], capture_output=True)
        _CPU.update(bare=0.0, sandbox=0.0)
        for _ in range(n):
            for command in COMMANDS:
                bare[command].append(_time(lambda: subprocess.run(
                    ["bash", "-c", command], capture_output=True), "bare"))
                boxed[command].append(_time(lambda: box.run(command), "sandbox"))
    setup, copy_layer = [], []
    for _ in range(setups):
        setup.append(_time(lambda: Sandbox(rootfs, layers=environment.layers,
                                           workdir="/app").close()))
        copy_layer.append(_copy(environment.layer))
    copy_rootfs = _copy(rootfs)
    return SandboxBench(
        n, {c: _median_ms(v) for c, v in bare.items()},
        {c: _median_ms(v) for c, v in boxed.items()},
        {c: 1000 * min(v) for c, v in bare.items()}, {c: 1000 * min(v) for c, v in boxed.items()},
        1000 * _CPU["bare"] / (n * len(COMMANDS)), 1000 * _CPU["sandbox"] / (n * len(COMMANDS)),
        _median_ms(setup),
        _median_ms(copy_layer), 1000 * copy_rootfs, build_s if build_s > 1.0 else None)


def sandbox_report(args: Any) -> list[str]:
    """Lines of ``harness bench sandbox``."""
    result = bench_sandbox()
    load = os.getloadavg()[0]
    lines = [f"sandbox (bubblewrap over the terminal rootfs + a task layer), medians of "
             f"{result.n} runs each, load average {load:.1f} on {os.cpu_count()} cores"]
    if result.rootfs_build_s is not None:
        lines.append(f"  first rootfs build            : {result.rootfs_build_s:8.1f} s")
    for command in COMMANDS:
        lines.append(f"  {command!r:28}: bare {result.bare_ms[command]:7.2f} ms   sandbox "
                     f"{result.sandbox_ms[command]:7.2f} ms   overhead "
                     f"{result.sandbox_ms[command] - result.bare_ms[command]:6.2f} ms")
        lines.append(f"  {'':28}  fastest: bare {result.bare_min_ms[command]:7.2f} ms   sandbox "
                     f"{result.sandbox_min_ms[command]:7.2f} ms   overhead "
                     f"{result.sandbox_min_ms[command] - result.bare_min_ms[command]:6.2f} ms")
    verdict = "met" if result.overhead_ms < 20 else "NOT met"
    lines.append(f"  per-command overhead (worst)  : {result.overhead_ms:7.2f} ms (target < 20 ms:"
                 f" {verdict})")
    lines.append(f"  CPU time per command (mean)   : bare {result.bare_cpu_ms:6.2f} ms   sandbox "
                 f"{result.sandbox_cpu_ms:6.2f} ms   overhead "
                 f"{result.sandbox_cpu_ms - result.bare_cpu_ms:5.2f} ms (independent of load)")
    lines.append(f"  fresh episode (layer + mount) : {result.setup_ms:7.2f} ms (target < 1000 ms:"
                 f" {'met' if result.setup_ms < 1000 else 'NOT met'})")
    lines.append(f"  cp -a of the task layer       : {result.copy_layer_ms:7.2f} ms   ratio setup/"
                 f"copy {result.setup_ms / result.copy_layer_ms:5.2f}")
    lines.append(f"  cp -a of the whole rootfs     : {result.copy_rootfs_ms:7.0f} ms   ratio setup/"
                 f"copy {result.setup_ms / result.copy_rootfs_ms:7.4f}")
    return lines
