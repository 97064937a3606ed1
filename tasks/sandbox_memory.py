"""A sandbox's memory bound: every process of one sandbox together, shared memory included.

RLIMIT_DATA (`tasks.sandbox.Limits`) bounds each process's private writable memory only: a
``mmap(MAP_SHARED | MAP_ANONYMOUS)`` region, a tmpfs file or many processes together pass it.
A `MemoryBound` bounds what the kernel charges to the whole sandbox, resident and shared pages
and the page cache its files use, by the first mechanism this machine offers:

- ``cgroup v1``: a child of this process's memory cgroup (v1 memory controller, root), with
  ``memory.limit_in_bytes``; the kernel's OOM killer stops a process of the sandbox past it and
  ``memory.oom_control`` counts the kill;
- ``cgroup v2``: a child of this process's cgroup where its ``cgroup.subtree_control`` already
  delegates ``memory``, with ``memory.max``; ``memory.events`` counts the kills;
- ``watchdog``: elsewhere, a thread sums the resident memory (shared pages included) of the
  command's processes every `WATCH_INTERVAL_S` and kills the command past the bound.

Every command enters the cgroup before it execs anything of the sandbox's (a host ``sh``
writes its own pid to ``cgroup.procs`` and execs the launcher), so no process of the sandbox
starts outside it. `MemoryBound.killed` says whether the bound stopped something since it was
last asked, which `tasks.sandbox.CommandResult.killed_by` records.
"""

from __future__ import annotations

import functools
import itertools
import logging
import os
import signal
import threading
import time
from collections.abc import Callable
from pathlib import Path

__all__ = ["MemoryBound", "close_own_groups", "collect_stale_groups", "memory_mechanism",
           "WATCH_INTERVAL_S"]

logger = logging.getLogger(__name__)
WATCH_INTERVAL_S = 0.1
"""How often the watchdog (where no cgroup is available) reads the command's memory."""
_V1_ROOT = Path("/sys/fs/cgroup/memory")
_V2_ROOTS = (Path("/sys/fs/cgroup"), Path("/sys/fs/cgroup/unified"))
_IDS = itertools.count(1)
_PAGE = os.sysconf("SC_PAGE_SIZE")


def _own_cgroup(controller: str) -> str | None:
    """This process's cgroup path for `controller` (``""`` for the v2 line), or None."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        _, names, path = line.split(":", 2)
        if (controller and controller in names.split(",")) or (not controller and not names):
            return path
    return None


@functools.cache
def _v1_parent() -> Path | None:
    own = _own_cgroup("memory")
    if own is None or os.geteuid() != 0 or not (_V1_ROOT / "memory.limit_in_bytes").exists():
        return None
    parent = _V1_ROOT / own.lstrip("/")
    return parent if os.access(parent, os.W_OK) else None


@functools.cache
def _v2_parent() -> Path | None:
    own = _own_cgroup("")
    if own is None:
        return None
    for root in _V2_ROOTS:
        parent = root / own.lstrip("/")
        try:
            delegated = (parent / "cgroup.subtree_control").read_text().split()
        except OSError:
            continue
        if "memory" in delegated and os.access(parent, os.W_OK):
            return parent
    return None


def memory_mechanism() -> str:
    """``cgroup v1``, ``cgroup v2`` or ``watchdog``: what bounds a sandbox's memory here."""
    if _v1_parent() is not None:
        return "cgroup v1"
    if _v2_parent() is not None:
        return "cgroup v2"
    return "watchdog"


class MemoryBound:
    """The memory bound of one sandbox (module docstring). Call `close` when it ends."""

    def __init__(self, limit_bytes: int):
        self.limit_bytes = int(limit_bytes)
        self.mechanism = memory_mechanism()
        self.group: Path | None = None
        self._kills_seen = 0
        self._watch_kills = 0
        parent = _v1_parent() if self.mechanism == "cgroup v1" else _v2_parent()
        if parent is None:
            return
        group = parent / f"harness-sandbox-{os.getpid()}-{next(_IDS)}"
        try:
            group.mkdir()
            limit_file = "memory.limit_in_bytes" if self.mechanism == "cgroup v1" else "memory.max"
            (group / limit_file).write_text(str(self.limit_bytes))
            if self.mechanism == "cgroup v2":
                (group / "memory.swap.max").write_text("0")
        except OSError as error:
            logger.warning("no memory cgroup for the sandbox (%s); a watchdog bounds it", error)
            _remove_group(group)
            self.mechanism = "watchdog"
            return
        self.group = group

    def describe(self) -> str:
        """The bound in one phrase, for `Limits.enforcement` and recorded kill reasons."""
        return f"{self.mechanism}: {self.limit_bytes >> 20} MiB for the whole sandbox"

    def launcher(self) -> list[str]:
        """The argv prefix that puts a command into the cgroup before it starts (empty for the
        watchdog): a host ``sh`` writes its pid to ``cgroup.procs`` and execs the rest."""
        if self.group is None:
            return []
        procs = self.group / "cgroup.procs"
        return ["/bin/sh", "-c", f'echo $$ > "{procs}" && exec "$@"', "sh"]

    def watch(self, pid: int, kill: Callable[[], None]) -> Callable[[], None]:
        """For the watchdog: watch the process tree under `pid` until the returned function is
        called; past the bound, `kill` it (counted for `killed`). A no-op under a cgroup."""
        if self.group is not None:
            return lambda: None
        stop = threading.Event()

        def loop() -> None:
            while not stop.wait(WATCH_INTERVAL_S):
                if _tree_resident_bytes(pid) > self.limit_bytes:
                    self._watch_kills += 1
                    logger.info("the sandbox passed its memory bound (%s)", self.describe())
                    kill()
                    return

        threading.Thread(target=loop, daemon=True, name=f"memory-watch-{pid}").start()
        return stop.set

    def killed(self) -> bool:
        """Whether the bound stopped a process since this was last asked."""
        total = self._watch_kills + self._cgroup_kills()
        hit, self._kills_seen = total > self._kills_seen, total
        return hit

    def _cgroup_kills(self) -> int:
        if self.group is None:
            return 0
        name = "memory.oom_control" if self.mechanism == "cgroup v1" else "memory.events"
        try:
            text = (self.group / name).read_text()
        except OSError:
            return 0
        for line in text.splitlines():
            key, _, value = line.partition(" ")
            if key == "oom_kill":
                return int(value)
        return 0

    def close(self) -> None:
        """Remove the cgroup (its processes are gone by now; waits briefly for the kernel)."""
        if self.group is not None:
            _remove_group(self.group)
            self.group = None


def _remove_group(group: Path) -> None:
    deadline = time.monotonic() + 5.0
    while group.exists():
        try:
            group.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError:
            if time.monotonic() > deadline:
                _kill_members(group)
                logger.warning("memory cgroup %s still busy; left for the next collection",
                               group)
                return
            time.sleep(0.05)


def _kill_members(group: Path) -> None:
    try:
        pids = [int(p) for p in (group / "cgroup.procs").read_text().split()]
    except OSError:
        return
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def _children() -> dict[int, list[int]]:
    tree: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as stat:
                fields = stat.read().rsplit(b")", 1)[1].split()
        except OSError:
            continue
        tree.setdefault(int(fields[1]), []).append(int(entry))
    return tree


def _tree_resident_bytes(root: int) -> int:
    """Resident bytes (shared pages included) of `root` and its descendants."""
    tree, total, todo = _children(), 0, [root]
    while todo:
        pid = todo.pop()
        todo.extend(tree.get(pid, ()))
        try:
            with open(f"/proc/{pid}/statm") as statm:
                total += int(statm.read().split()[1]) * _PAGE
        except (OSError, IndexError, ValueError):
            continue
    return total


def collect_stale_groups() -> list[str]:
    """Remove memory cgroups left by processes that no longer run (a SIGKILLed harness)."""
    removed = []
    for parent in (_v1_parent(), _v2_parent()):
        if parent is None:
            continue
        for group in parent.glob("harness-sandbox-*-*"):
            owner = group.name.split("-")[2]
            if owner.isdigit() and not Path(f"/proc/{owner}").exists():
                _remove_group(group)
                removed.append(str(group))
    return removed


def close_own_groups() -> list[str]:
    """Kill what is left in this process's memory cgroups and remove them (a stopping
    command: the sandboxes a signal unwound may not have closed their bound)."""
    removed = []
    for parent in (_v1_parent(), _v2_parent()):
        if parent is None:
            continue
        for group in parent.glob(f"harness-sandbox-{os.getpid()}-*"):
            _kill_members(group)
            _remove_group(group)
            removed.append(str(group))
    return removed
