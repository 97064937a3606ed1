"""Process plumbing of `tasks.sandbox`: bounded output capture, the wall-clock kill, waiting
for a command's pid namespace to empty."""

from __future__ import annotations

import json
import logging
import os
import selectors
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

__all__ = ["Output", "await_namespace_end", "feed", "init_pid", "kill_group",
           "kill_tree", "pump", "read_info"]

logger = logging.getLogger(__name__)
_DRAIN_S = 2.0


class Output:
    """Keeps the first and last `limit // 2` bytes of a stream and counts the rest."""

    def __init__(self, limit: int):
        self.half = max(limit // 2, 1)
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0

    def add(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = self.half - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        if chunk:
            self.tail += chunk
            if len(self.tail) > self.half:
                del self.tail[: len(self.tail) - self.half]

    def text(self) -> tuple[str, bool]:
        cut = self.total - len(self.head) - len(self.tail)
        if cut <= 0:
            return (bytes(self.head) + bytes(self.tail)).decode(errors="replace"), False
        marker = f"\n[... {cut} bytes of output omitted ...]\n".encode()
        return (bytes(self.head) + marker + bytes(self.tail)).decode(errors="replace"), True


def feed(proc: subprocess.Popen, data: bytes) -> None:
    """Write stdin from a thread so a full pipe can never block the output loop."""
    def write() -> None:
        try:
            proc.stdin.write(data)
            proc.stdin.close()
        except (BrokenPipeError, OSError):
            pass

    threading.Thread(target=write, daemon=True).start()


def pump(proc: subprocess.Popen, output: Output, deadline: float, *,
         exit_grace_s: float | None = None, kill: Callable[[], None] | None = None) -> bool:
    """Read `proc`'s output until EOF or `deadline`; on the deadline `kill` (default: its
    process group). With `exit_grace_s`, also stop that long after `proc` exits (processes
    it left in the background may hold the output open). Returns whether it timed out."""
    kill = kill or (lambda: kill_group(proc))
    timed_out = False
    stop_at: float | None = None
    fd = proc.stdout.fileno()
    os.set_blocking(fd, False)
    with selectors.DefaultSelector() as selector:
        selector.register(fd, selectors.EVENT_READ)
        while True:
            now = time.perf_counter()
            if exit_grace_s is not None and stop_at is None and proc.poll() is not None:
                stop_at = now + exit_grace_s
            if stop_at is not None and now >= stop_at:
                _drain_in_background(proc.stdout)  # as a terminal would, for what it left
                return timed_out
            left = deadline - now
            if left <= 0 and not timed_out:
                timed_out = True
                kill()
                deadline = time.perf_counter() + _DRAIN_S
                continue
            if left <= 0:
                break  # output still open after the kill: stop reading
            wait = min(left, 1.0 if exit_grace_s is None else 0.02)
            if not selector.select(timeout=wait):
                continue
            try:
                chunk = os.read(fd, 1 << 16)
            except BlockingIOError:
                continue
            if not chunk:
                break
            output.add(chunk)
    proc.stdout.close()
    try:
        proc.wait(timeout=_DRAIN_S)
    except subprocess.TimeoutExpired:
        kill()
        proc.wait()
    return timed_out


def read_info(info: BinaryIO) -> bytes:
    """bwrap's ``--info-fd`` JSON object, read up to its end (bwrap may keep the pipe open
    while its command runs, so EOF cannot be waited for)."""
    data = b""
    while not data.rstrip().endswith(b"}"):
        chunk = info.read1(4096)
        if not chunk:
            break
        data += chunk
    return data


def init_pid(info: bytes) -> int | None:
    """The host pid of the sandbox's pid-1 from bwrap's ``--info-fd`` JSON (None if absent)."""
    try:
        return int(json.loads(info or b"{}")["child-pid"])
    except (ValueError, KeyError, TypeError):
        return None


def await_namespace_end(init_pid: int | None, limit_s: float = 10.0) -> None:
    """Wait until the sandbox's pid-1 is gone or a zombie: the kernel makes a namespace's init
    reap every other process of the namespace before it exits, so then nothing is left."""
    if init_pid is None:
        return
    deadline = time.perf_counter() + limit_s
    while time.perf_counter() < deadline:
        try:
            state = Path(f"/proc/{init_pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            return
        if state in ("Z", "X"):
            return
        time.sleep(0.005)
    logger.warning("sandbox processes still exiting after %.0f s (pid %d)", limit_s, init_pid)


def _drain_in_background(stream) -> None:
    """Read and drop what `stream` still carries until every writer closes it: a process a
    session command left in the background keeps writing (request logs, progress) without
    blocking or dying of a broken pipe, as on a terminal nobody reads."""
    def drain() -> None:
        try:
            os.set_blocking(stream.fileno(), True)
            while stream.read1(1 << 16):
                pass
        except (OSError, ValueError):
            pass
        finally:
            stream.close()

    threading.Thread(target=drain, name="session-output", daemon=True).start()


def kill_tree(proc: subprocess.Popen) -> None:
    """SIGKILL `proc` and every process descended from it (a session command's processes:
    they share the session's pid namespace, so no namespace takes them with it; a process it
    left in the background and that outlived its parent is no longer in the tree)."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
        except (OSError, IndexError, ValueError):
            continue
    tree, todo = [], [proc.pid]
    while todo:
        pid = todo.pop()
        tree.append(pid)
        todo += children.get(pid, [])
    for pid in tree:
        try:
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def kill_group(proc: subprocess.Popen) -> None:
    """SIGKILL the launcher's process group; bwrap's --die-with-parent and the pid namespace
    take every process of the command with it."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
