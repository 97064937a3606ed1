"""Nothing a sandbox makes outlives its owner: where sandbox roots live, who owns each, and the
collector that removes what a dead owner left.

Every sandbox root is a directory under one parent, `sandboxes_dir()`
(``$TMPDIR/harness-sandboxes-<uid>``, `tempfile.gettempdir` semantics), made by
`make_sandbox_root`. Its owner is the process that made it, named by pid and start time
(field 22 of ``/proc/<pid>/stat``), so a reused pid reads as a dead owner: in the root's name
(``<pid>-<start time>-<sandbox id>-<random>``) and in ``owner.json`` inside it, which adds the
boot id and the sandbox's long-lived helper processes (`register_process`: the holder of its
mount namespace).

`collect_garbage()` finds the roots whose owner is gone, kills their processes still alive
(the recorded ones, any process whose command line names a path in the root, and any whose
mount namespace has an overlay with its upper directory there), unmounts what is mounted
under them (``umount -l``) and removes them. Roots that older code left directly in the
temporary folder (``harness-sandbox-*``, no owner) count as gone when no process uses them
and nothing in them changed for `GRACE_S`. A live owner's sandboxes are never touched.

`close_own_sandboxes()` does the same at once to this process's own roots: the orderly stop
of a command on SIGINT/SIGTERM (the CLI calls it before it exits).
"""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from tasks.sandbox_memory import close_own_groups, collect_stale_groups
from tasks.sandbox_rootfs import SandboxError

__all__ = ["GRACE_S", "LEGACY_PREFIX", "OWNER_FILE", "ProcessId", "RootOwner",
           "close_own_sandboxes", "collect_garbage", "make_sandbox_root", "own_process",
           "process_id", "read_owner", "register_process", "sandboxes_dir", "stopping"]

logger = logging.getLogger(__name__)

OWNER_FILE = "owner.json"
LEGACY_PREFIX = "harness-sandbox-"
"""Roots of the code before this module: ``<tmp>/harness-sandbox-<n>-<random>``."""
GRACE_S = 60.0
"""A root with no owner to check (left by older code, or not made by `make_sandbox_root`)
counts as garbage only once neither it nor its ``layer`` changed for this long."""
_PARENT_MODE = 0o711
"""Others may pass through (the sandbox's mapped ids reach its merged tree inside its root)
but not list the parent: root names are random."""


@dataclass(frozen=True)
class ProcessId:
    """One process, told apart from a later one that reuses its pid by its start time."""

    pid: int
    start_time: int
    """Clock ticks after boot (field 22 of ``/proc/<pid>/stat``)."""

    def alive(self) -> bool:
        """Whether this very process still runs (a zombie has ended)."""
        return _start_time(self.pid) == self.start_time


@dataclass(frozen=True)
class RootOwner:
    """What ``owner.json`` says: the process that made the root, on which boot, and the
    helper processes the sandbox registered."""

    owner: ProcessId
    boot_id: str
    processes: tuple[ProcessId, ...] = ()

    def owner_alive(self) -> bool:
        return self.boot_id == _boot_id() and self.owner.alive()


def _start_time(pid: int) -> int | None:
    """Field 22 of ``/proc/<pid>/stat``, or None when `pid` does not run (or is a zombie)."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except (OSError, ValueError):
        return None
    fields = text[text.rindex(")") + 2:].split()  # fields 3.. (the name may hold spaces)
    if fields[0] in ("Z", "X"):
        return None
    return int(fields[19])


def _boot_id() -> str:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return ""


def process_id(pid: int) -> ProcessId | None:
    """Process `pid` as it runs now, or None when none does."""
    start = _start_time(pid)
    return None if start is None else ProcessId(pid, start)


def own_process() -> ProcessId:
    """This process (its pid and start time)."""
    me = process_id(os.getpid())
    if me is None:
        raise SandboxError("cannot read this process's start time from /proc")
    return me


def sandboxes_dir(*, create: bool = True) -> Path:
    """The one parent of every sandbox root of this user: ``<tmp>/harness-sandboxes-<uid>``,
    made mode 0711 when `create`. Refuses a parent another user owns, or a symlink."""
    parent = Path(tempfile.gettempdir()) / f"harness-sandboxes-{os.geteuid()}"
    if create:
        try:
            parent.mkdir(mode=_PARENT_MODE)
            os.chmod(parent, _PARENT_MODE)  # whatever the umask
        except FileExistsError:
            pass
    try:
        info = parent.lstat()
    except FileNotFoundError:
        return parent
    if not parent.is_dir() or parent.is_symlink() or info.st_uid != os.geteuid():
        raise SandboxError(f"{parent} is not a folder of uid {os.geteuid()}; remove it (or "
                           "set TMPDIR elsewhere)")
    return parent


# ---- this process's open roots ----------------------------------------------------------------
_LOCK = threading.Lock()
_OPEN: dict[Path, int] = {}
"""Roots this process made (root -> the pid that made it: a forked child owns none)."""
_STATE = {"refuse_new": False, "prune_at": 256}


def make_sandbox_root(sandbox_id: int) -> Path:
    """A new, empty sandbox root (mode 0711) under `sandboxes_dir()`, owned by this process:
    its name starts with the owner (``<pid>-<start time>-<sandbox_id>-``, so a root whose
    maker died before the owner file was written still has one), and ``owner.json`` is
    written before it is returned."""
    me = own_process()
    with _LOCK:
        if _STATE["refuse_new"]:
            raise SandboxError("this command is stopping (a signal): no new sandbox")
        root = Path(tempfile.mkdtemp(prefix=f"{me.pid}-{me.start_time}-{sandbox_id}-",
                                     dir=sandboxes_dir()))
        root.chmod(_PARENT_MODE)
        _write_owner(root, RootOwner(me, _boot_id()))
        _OPEN[root] = me.pid
        if len(_OPEN) > _STATE["prune_at"]:  # roots closed by their sandbox: forget them
            for closed in [r for r in _OPEN if not r.exists()]:
                del _OPEN[closed]
            _STATE["prune_at"] = max(256, 2 * len(_OPEN))
    return root


def register_process(root: Path, pid: int) -> None:
    """Record `pid` (a helper of the sandbox at `root`) in its owner file, so a collector
    kills it if it outlives the owner. Helpers that ended are dropped from the file (a tree
    rollout restores, and so replaces its holder, thousands of times)."""
    process = process_id(pid)
    if process is None:
        return
    with _LOCK:
        record = read_owner(root)
        if record is None:
            raise SandboxError(f"{root} has no owner file (was it made by make_sandbox_root?)")
        running = tuple(p for p in record.processes if p.alive())
        _write_owner(root, RootOwner(record.owner, record.boot_id, (*running, process)))


def stopping() -> bool:
    """Whether this process is stopping (`close_own_sandboxes` refused new sandboxes): a
    command that failed now may have failed because its sandbox was closed under it."""
    return bool(_STATE["refuse_new"])


def close_own_sandboxes(*, refuse_new: bool = False) -> list[str]:
    """Kill the processes of every root this process made, unmount and remove the roots
    still there; one line per thing removed. Roots their sandbox already removed count too:
    a signal that unwinds a sandbox's ``with`` block closes it while its command still runs.
    `refuse_new`: later `make_sandbox_root` calls fail (the process is stopping; threads
    still playing get no new sandbox)."""
    with _LOCK:
        if refuse_new:
            _STATE["refuse_new"] = True
        pid = os.getpid()
        roots = [root for root, maker in _OPEN.items() if maker == pid]
        _OPEN.clear()
    if not roots:
        _close_own_groups()
        return []
    records = {root: read_owner(root) for root in roots}
    users = _processes_using(roots, exclude=(pid,))
    lines = []
    for root in roots:
        if root.exists():
            record = records[root]
            lines += _remove(root, "closed at the command's stop", users[root],
                             record.processes if record else ())
        else:
            lines += _kill(root, users[root])
    late = _processes_using(roots, exclude=(pid,))  # started (exec'd) while we worked
    lines += [line for root in roots for line in _kill(root, late[root])]
    _close_own_groups()
    return lines


def _close_own_groups() -> None:
    """The memory bounds of this process's sandboxes that a signal unwound, once their
    processes are killed."""
    for group in close_own_groups():
        logger.info("removed memory cgroup %s: the command stopped", group)


# ---- the owner file ---------------------------------------------------------------------------
def _write_owner(root: Path, record: RootOwner) -> None:
    payload = {"pid": record.owner.pid, "start_time": record.owner.start_time,
               "boot_id": record.boot_id,
               "processes": [[p.pid, p.start_time] for p in record.processes]}
    partial = root / f".{OWNER_FILE}.partial"
    partial.write_text(json.dumps(payload))
    os.replace(partial, root / OWNER_FILE)  # readers see the old or the new file, whole


def read_owner(root: Path) -> RootOwner | None:
    """The owner file of `root`, or None when it has none (or an unreadable one)."""
    try:
        data = json.loads((root / OWNER_FILE).read_text())
        return RootOwner(ProcessId(int(data["pid"]), int(data["start_time"])),
                         str(data["boot_id"]),
                         tuple(ProcessId(int(p), int(s)) for p, s in data["processes"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None


# ---- the collector ----------------------------------------------------------------------------
@dataclass(frozen=True)
class _Garbage:
    root: Path
    reason: str
    processes: tuple[ProcessId, ...]


def collect_garbage(parent: Path | None = None, *, legacy_parent: Path | None = None,
                    grace_s: float = GRACE_S) -> list[str]:
    """Remove every sandbox root under `parent` (default `sandboxes_dir()`) whose owner is
    gone, and every legacy root (``harness-sandbox-*`` in `legacy_parent`, default the
    temporary folder) that no process uses; one line per thing removed. Only a directory
    listing when there is nothing to do."""
    if parent is None:  # the machine's own memory cgroups: collected quietly (logged)
        for group in collect_stale_groups():
            logger.info("removed memory cgroup %s: its owner is gone", group)
    groups: list[str] = []
    parent = sandboxes_dir(create=False) if parent is None else Path(parent)
    legacy_parent = Path(tempfile.gettempdir()) if legacy_parent is None else Path(legacy_parent)
    found: list[_Garbage] = []
    for root in _folders(parent):
        record = read_owner(root)
        owner = record.owner if record is not None else _owner_in_name(root.name)
        if owner is None:
            if not _changed_within(root, grace_s):
                found.append(_Garbage(root, "it has no owner", ()))
        elif not (record.owner_alive() if record is not None else owner.alive()):
            found.append(_Garbage(root, f"its owner, pid {owner.pid}, is gone",
                                  record.processes if record is not None else ()))
    legacy = [root for root in _folders(legacy_parent, LEGACY_PREFIX)
              if not _changed_within(root, grace_s)]
    if not found and not legacy:
        return groups
    users = _processes_using([g.root for g in found] + legacy, exclude=(os.getpid(),))
    found += [_Garbage(root, "an older harness left it", ()) for root in legacy
              if not users[root]]
    return groups + [line for garbage in found for line in _remove(
        garbage.root, garbage.reason, users[garbage.root], garbage.processes)]


def _owner_in_name(name: str) -> ProcessId | None:
    """The owner `make_sandbox_root` put in a root's name, or None."""
    fields = name.split("-")
    if len(fields) >= 4 and fields[0].isdigit() and fields[1].isdigit():
        return ProcessId(int(fields[0]), int(fields[1]))
    return None


def _folders(parent: Path, prefix: str = "") -> list[Path]:
    """Directories (not symlinks) named `prefix`* in `parent` that this user owns."""
    try:
        entries = list(os.scandir(parent))
    except OSError:
        return []
    uid = os.geteuid()
    found = []
    for entry in entries:
        try:
            if (entry.name.startswith(prefix) and entry.is_dir(follow_symlinks=False)
                    and entry.stat(follow_symlinks=False).st_uid == uid):
                found.append(Path(entry.path))
        except OSError:
            continue
    return found


def _changed_within(root: Path, seconds: float) -> bool:
    now = time.time()
    for path in (root, root / "layer"):
        try:
            if now - path.stat().st_mtime < seconds:
                return True
        except OSError:
            continue
    return False


def _processes_using(roots: Sequence[Path], exclude: Iterable[int] = ()) -> dict[Path, set[int]]:
    """root -> pids of the processes whose command line names a path in it, or whose mount
    namespace (other than ours) has an overlay whose upper directory is in it (a holder, a
    sandboxed command). A mount point in the root does not count: every mount namespace made
    after the root was mounted holds a copy of that mount, other sandboxes' included. One pass
    over /proc, each text searched once per parent folder of the roots."""
    users: dict[Path, set[int]] = {root: set() for root in roots}
    if not roots:
        return users
    by_parent: dict[bytes, dict[bytes, Path]] = {}
    for root in roots:
        by_parent.setdefault(os.fsencode(root.parent) + b"/", {})[os.fsencode(root.name)] = root
    leads = [(prefix, b"upperdir=" + _escaped(os.fsdecode(prefix)).encode(), names)
             for prefix, names in by_parent.items()]
    skip = set(exclude)
    ours = _namespace("self")
    namespace_mounts: dict[str, bytes] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit() or int(entry.name) in skip:
            continue
        pid = int(entry.name)
        try:
            cmdline = Path(entry.path, "cmdline").read_bytes()
        except OSError:
            continue
        namespace = _namespace(entry.name)
        mounts = b""
        if namespace is not None and namespace != ours:
            if namespace not in namespace_mounts:
                try:
                    namespace_mounts[namespace] = Path(entry.path, "mounts").read_bytes()
                except OSError:
                    namespace_mounts[namespace] = b""
            mounts = namespace_mounts[namespace]
        for in_cmdline, in_mounts, names in leads:
            for text, lead in ((cmdline, in_cmdline), (mounts, in_mounts)):
                for name in _names_after(text, lead):
                    if name in names:
                        users[names[name]].add(pid)
    return users


_NAME_END = re.compile(rb"[/\0,\s]")


def _names_after(text: bytes, lead: bytes) -> Iterable[bytes]:
    """The path component right after each occurrence of `lead` in `text`."""
    start = text.find(lead)
    while start >= 0:
        begin = start + len(lead)
        end = _NAME_END.search(text, begin)
        yield text[begin:end.start() if end else len(text)]
        start = text.find(lead, begin)


def _namespace(pid: str) -> str | None:
    try:
        return os.readlink(f"/proc/{pid}/ns/mnt")
    except OSError:
        return None


def _escaped(path: str) -> str:
    """`path` as /proc/mounts writes it (space, tab, newline and backslash in octal)."""
    return "".join(f"\\{ord(c):03o}" if c in " \t\n\\" else c for c in path)


_OCTAL = re.compile(r"\\([0-7]{3})")


def _mounts_under(root: Path) -> list[Path]:
    """Mount points at or under `root` in this process's mount namespace, deepest first."""
    try:
        lines = Path("/proc/self/mounts").read_text().splitlines()
    except OSError:
        return []
    prefix = str(root) + "/"
    points = []
    for line in lines:
        fields = line.split(" ")
        if len(fields) < 2:
            continue
        point = _OCTAL.sub(lambda m: chr(int(m.group(1), 8)), fields[1])
        if point == str(root) or point.startswith(prefix):
            points.append(Path(point))
    return sorted(set(points), key=lambda p: len(p.parts), reverse=True)


def _remove(root: Path, reason: str, users: set[int],
            recorded: Sequence[ProcessId]) -> list[str]:
    """Kill, unmount, remove: one line per thing removed."""
    lines = _kill(root, set(users) | {p.pid for p in recorded if p.alive()})
    for _ in range(3):  # a mount made meanwhile (a thread still starting) is caught too
        for point in _mounts_under(root):
            done = subprocess.run(["umount", "-l", "--", str(point)], capture_output=True,
                                  text=True)
            if done.returncode == 0:
                lines.append(f"unmounted {point}")
            elif point in _mounts_under(root):
                logger.warning("cannot unmount %s: %s", point, done.stderr.strip())
        if _mounts_under(root):  # never delete through a mount
            continue
        shutil.rmtree(root, ignore_errors=True)
        if not root.exists():
            lines.append(f"removed {root} ({reason})")
            break
    else:
        logger.warning("cannot remove %s", root)
    return lines


def _kill(root: Path, pids: Iterable[int]) -> list[str]:
    lines = []
    for pid in sorted(pids):
        try:
            os.kill(pid, signal.SIGKILL)
            lines.append(f"killed process {pid} of sandbox {root}")
        except ProcessLookupError:
            continue
        except PermissionError as exc:
            logger.warning("cannot kill process %s of sandbox %s: %s", pid, root, exc)
    return lines
