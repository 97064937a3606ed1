"""The episode writer's process: commits the rows its parent (`EpisodeWriter`) sends.

Standard input carries frames: a 4-byte little-endian length, then a pickled list of
``(episode_row, trajectory_row[, turns_row])`` tuples (`harness.store.episode_rows`; a
``turns_row`` of None or none at all: the episode stores no turns). Everything that has
arrived is committed in one transaction, at once; after the end-of-input frame (length 0), or
when standard input closes, the process writes one line to standard output, ``ok N`` (N
episodes committed) or ``error MESSAGE``, and exits (after a checkpoint, when all went well:
see `main`). It ignores SIGINT and SIGTERM: Ctrl-C reaches a terminal's whole process group,
and episodes already handed over must not be lost to a signal meant for the run. The parent
ends it by closing its standard input, which also happens when the parent dies.

It imports only the standard library and `harness.sqlite_batch`, so it starts in a few
milliseconds, while the run's first episodes play.
"""

from __future__ import annotations

import os
import pickle
import signal
import sqlite3
import struct
import sys
from pathlib import Path

from harness.sqlite_batch import BUSY_TIMEOUT_S, write_episode_rows

FRAME_HEADER = struct.Struct("<I")
END_OF_INPUT = FRAME_HEADER.pack(0)
"""The frame that says everything was sent. Closing the pipe says so too, but a process
forked from the parent (a pool's worker) may hold the pipe open after the parent closed it."""
READ_BYTES = 1 << 20
"""Most bytes read from the pipe at once (what has arrived is committed together)."""


def connect(path: str) -> sqlite3.Connection:
    """An existing results database, opened for writing (never created here)."""
    uri = Path(path).resolve().as_uri() + "?mode=rw"
    db = sqlite3.connect(uri, uri=True, isolation_level=None)
    db.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_S * 1000:.0f}")
    db.execute("PRAGMA synchronous=NORMAL")
    return db


def complete_frames(buffer: bytearray) -> tuple[list[tuple], int, bool]:
    """The rows of every complete frame at the start of `buffer`, the bytes they took, and
    whether the end-of-input frame came (nothing after it is read)."""
    rows: list[tuple] = []
    used = 0
    while len(buffer) - used >= FRAME_HEADER.size:
        (length,) = FRAME_HEADER.unpack_from(buffer, used)
        if length == 0:
            return rows, used + FRAME_HEADER.size, True
        end = used + FRAME_HEADER.size + length
        if end > len(buffer):
            break
        rows += pickle.loads(buffer[used + FRAME_HEADER.size:end])
        used = end
    return rows, used, False


def receive(db: sqlite3.Connection, *, replace: bool, source: int = 0) -> int:
    """Commit frames read from file descriptor `source` until the end-of-input frame, or
    until it closes; the episodes committed. Errors propagate."""
    committed, ended = 0, False
    buffer = bytearray()
    while not ended and (chunk := os.read(source, READ_BYTES)):
        buffer += chunk
        rows, used, ended = complete_frames(buffer)
        del buffer[:used]
        if rows:
            write_episode_rows(db, [row[0] for row in rows], [row[1] for row in rows],
                               replace=replace,
                               turns=[row[2] for row in rows if len(row) > 2 and row[2]])
            committed += len(rows)
    if buffer and not ended:
        raise ValueError(f"the last {len(buffer)} bytes sent are not a whole frame")
    return committed


def main(argv: list[str]) -> None:
    """``DB insert|replace``: commit what standard input carries, report on standard output, exit.

    The report goes out as soon as the last episode is committed; the process then copies
    the log into the database file (a checkpoint, so the run's own store, the last
    connection, has little left to copy when it closes) and exits. The parent waits for
    that exit before its run returns (`EpisodeWriter.close`)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    db = None
    try:
        db = connect(argv[0])
        committed = receive(db, replace=argv[1] == "replace")
    except Exception as exc:  # noqa: BLE001 - reported to the parent, which raises it
        message = " ".join(str(exc).split()) or type(exc).__name__
        os.write(1, f"error {message}\n".encode())
        os._exit(1)
    os.write(1, f"ok {committed}\n".encode())
    try:
        db.execute("PRAGMA wal_checkpoint(PASSIVE)")
        db.close()
    except sqlite3.Error:  # housekeeping only: every episode is committed
        pass
    os._exit(0)  # nothing left to tear down


if __name__ == "__main__":
    main(sys.argv[1:])
