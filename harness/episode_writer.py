"""The episode writer: finished episodes go to the store from a background thread, so the
event loop that plays them never waits on SQLite (`harness.runner` and the Ray executor's
driver use it)."""

from __future__ import annotations

import os
import queue
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from harness.core import HarnessError
from harness.records import EpisodeRecord, StepRecord
from harness.store import Store, episode_rows

GATHER_S = 0.005
"""How long the writer lets finished episodes gather before it commits them together."""


class EpisodeWriter:
    """Writes finished episodes from a background thread so that the event loop never waits
    on SQLite. Episodes queued while a transaction is in progress are committed together in
    the next one (group commit); nothing is held back on purpose, so an interruption loses
    at most the episodes whose commit was in flight.

    Use as a context manager around a run; `submit` re-raises a failed write.
    """

    def __init__(self, path: str | os.PathLike, *, replace: bool = False, batch: int = 256):
        self._path, self._replace, self._batch = Path(path), replace, batch
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._error: BaseException | None = None
        self._closing = False
        # opened here, so that a database the writer cannot open fails the run at its start
        self._store = Store(self._path, check_same_thread=False)
        self._thread = threading.Thread(target=self._loop, name="episode-writer", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        store = self._store
        try:
            while True:
                item = self._queue.get()
                if item is None:
                    return
                batch = [item]
                # let a burst gather: one wake-up per batch rather than per episode keeps the
                # writer off the interpreter lock the event loop needs; once the run is
                # closing nothing more is coming, and what is queued is committed at once
                if not self._closing:
                    time.sleep(GATHER_S)
                while len(batch) < self._batch:
                    try:
                        item = self._queue.get_nowait()
                    except queue.Empty:
                        break
                    if item is None:
                        self._queue.put(None)
                        break
                    batch.append(item)
                if self._error is None:
                    try:
                        store.write_rows(batch, replace=self._replace)
                    except BaseException as exc:  # noqa: BLE001 - re-raised in the caller
                        self._error = exc
        finally:
            store.close()

    def _check(self) -> None:
        if isinstance(self._error, HarnessError):  # already names the database
            raise HarnessError(f"storing episodes failed: {self._error}") from self._error
        if self._error is not None:
            raise HarnessError(f"writing to {self._path} failed: {self._error}") from self._error

    def submit(self, run_id: str, episode: EpisodeRecord, steps: Sequence[StepRecord]) -> None:
        """Queue one episode. Its rows are made here, on the caller's thread (a JSON text
        instead of thousands of live step objects waiting in the queue): the writer thread
        then only runs SQLite, which lets go of the interpreter lock."""
        self._check()
        self._queue.put(episode_rows(run_id, episode, steps))

    def close(self) -> None:
        """Wait until every submitted episode is committed."""
        if self._thread.is_alive():
            self._closing = True
            self._queue.put(None)
            self._thread.join()
        self._check()

    def __enter__(self) -> EpisodeWriter:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
