"""The episode writer: finished episodes go to the store through a separate process
(`harness.writer_process`), so the event loop that plays them never waits on SQLite and never
shares the interpreter lock with the code that commits them (`harness.runner` and the Ray
executor's driver use it).

A writer thread in this process would have to take the interpreter lock back after every
SQLite call; while episodes play, each such take waits for the event loop to be forced off
it. With a process, the loop's only costs are making each episode's rows and one pipe write
per batch.
"""

from __future__ import annotations

import asyncio
import fcntl
import os
import pickle
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from harness.core import HarnessError, last_line
from harness.records import EpisodeRecord, StepRecord
from harness.store import episode_rows
from harness.writer_process import END_OF_INPUT, FRAME_HEADER

GATHER_S = 0.005
"""Longest a finished episode waits in this process before it is sent (inside an event loop;
without one every episode is sent at once)."""
FLUSH_BYTES = 1 << 18
"""Pending step text that is sent at once rather than after `GATHER_S`."""
PIPE_BYTES = 1 << 20
"""Pipe capacity asked for (Linux), so a batch never waits for the process to read."""

_CHILD = ("import sys; sys.path.insert(0, sys.argv[1]); "
          "from harness.writer_process import main; main(sys.argv[2:])")
_PACKAGE_ROOT = str(Path(__file__).resolve().parents[1])  # the folder holding `harness`


class EpisodeWriter:
    """Commits submitted episodes to the results database at `path` (which must exist with
    the store's tables) from a separate process. Episodes are sent in batches, at most
    `GATHER_S` after they finish; the process commits each batch as it arrives, so an
    interruption loses at most the episodes of the last few milliseconds, and never half of
    one. A signal meant for the run does not reach the process (its own session), and if
    this process dies, the writer still commits everything it was sent.

    Use as a context manager around a run: leaving it sends what is pending and waits until
    every submitted episode is committed and the process has copied its log into the
    database file and exited. A failed write raises `HarnessError`, from the next
    `submit` or from `close`. ``turns=False`` stores no episode's model turns
    (``store_turns = false``).
    """

    def __init__(self, path: str | os.PathLike, *, replace: bool = False, turns: bool = True):
        self._path = Path(path)
        self._turns = turns
        self._pending: list[tuple[tuple, tuple, tuple | None]] = []
        self._pending_bytes = 0
        self._submitted = 0
        self._timer: asyncio.TimerHandle | None = None
        self._error: HarnessError | None = None
        self._closed = False
        try:
            self._process = subprocess.Popen(
                [sys.executable, "-I", "-S", "-c", _CHILD, _PACKAGE_ROOT, str(self._path),
                 "replace" if replace else "insert"],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                start_new_session=True)
        except OSError as exc:
            raise HarnessError(f"cannot start the episode writer for {self._path}: "
                               f"{exc.strerror or exc}") from None
        self._fd = self._process.stdin.fileno()
        if hasattr(fcntl, "F_SETPIPE_SZ"):
            try:
                fcntl.fcntl(self._fd, fcntl.F_SETPIPE_SZ, PIPE_BYTES)
            except OSError:  # above the system's limit: the default size works, more slowly
                pass

    def submit(self, run_id: str, episode: EpisodeRecord, steps: Sequence[StepRecord]) -> None:
        """Queue one episode. Its rows are made here (a JSON text instead of live step
        objects); they are sent with the others that finish within `GATHER_S`."""
        if self._error is not None:
            raise self._error
        rows = episode_rows(run_id, episode, steps, turns=self._turns)
        self._pending.append(tuple(rows))  # plain tuples: the process imports no store
        self._pending_bytes += len(rows.trajectory[-1])
        if rows.turns is not None:
            self._pending_bytes += len(rows.turns[-1])
        self._submitted += 1
        if self._pending_bytes >= FLUSH_BYTES:
            self.flush()
        elif self._timer is None:
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:  # no event loop to send it later: now
                self.flush()
                return
            self._timer = loop.call_later(GATHER_S, self._flush_later)

    def flush(self) -> None:
        """Send every pending episode to the process now."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if not self._pending or self._error is not None:
            return
        payload = pickle.dumps(self._pending, pickle.HIGHEST_PROTOCOL)
        self._pending, self._pending_bytes = [], 0
        try:
            _write_all(self._fd, FRAME_HEADER.pack(len(payload)), payload)
        except OSError as exc:  # the process has ended: its report says why
            self._error = self._failure(self._read_report(), f"cannot send episodes: {exc}")
            raise self._error from None

    def _flush_later(self) -> None:
        self._timer = None
        try:
            self.flush()
        except HarnessError:  # kept in self._error: the next submit or close raises it
            pass

    def close(self) -> None:
        """Send what is pending and wait until every submitted episode is committed and the
        process has checkpointed and exited."""
        if not self._closed:
            self._closed = True
            try:
                self.flush()
                if self._error is None:
                    os.write(self._fd, END_OF_INPUT)
            except HarnessError:
                pass
            except OSError as exc:  # the process has ended: its report says why
                self._error = self._failure(self._read_report(), f"cannot send: {exc}")
            finally:
                self._process.stdin.close()  # also the end, should the process miss the frame
                report = self._read_report()
            if self._error is None:
                self._error = self._check(report)
        if self._error is not None:
            raise self._error

    def _read_report(self) -> str:
        """The process's report: its line ``ok N``, or else everything it wrote before it
        exited (an error's last line says why). Returns once the process has exited: after
        ``ok`` it checkpoints, and a run must not return while a process still writes the
        database file (a command after it, or a copy of the file, would race it)."""
        if self._process.stdout.closed:
            return ""
        first = self._process.stdout.readline().decode(errors="replace")
        text = first if first.startswith("ok ") else \
            first + self._process.stdout.read().decode(errors="replace")
        self._reap()
        return text

    def _reap(self) -> None:
        self._process.wait()
        self._process.stdout.close()

    def _check(self, report: str) -> HarnessError | None:
        last = last_line(report)
        if last == f"ok {self._submitted}":
            return None
        if last.startswith("ok "):
            return HarnessError(f"writing to {self._path} failed: {last[3:]} of "
                                f"{self._submitted} episodes were committed")
        return self._failure(report, f"the writer process exited with status "
                                     f"{self._process.returncode}")

    def _failure(self, report: str, otherwise: str) -> HarnessError:
        last = last_line(report)
        reason = last.removeprefix("error ") if last.startswith("error ") else last or otherwise
        return HarnessError(f"writing to {self._path} failed: {reason}")

    def __enter__(self) -> EpisodeWriter:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def _write_all(fd: int, header: bytes, payload: bytes) -> None:
    """Write `header` then `payload` to `fd`, however many calls the pipe needs."""
    written = os.writev(fd, [header, payload])
    total = len(header) + len(payload)
    if written < total:
        rest = memoryview(header + payload)[written:]
        while rest:
            rest = rest[os.write(fd, rest):]
