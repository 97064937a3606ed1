"""Leaderboards computed off the request path.

The leaderboard page shows `harness leaderboard`'s numbers: `leaderboard_table` over
`load_episodes`, with its 10,000-resample bootstraps and sign-flip tests. On a
100,000-episode store that computation takes seconds (profiled: about a third loading the
frame, two thirds the resampling, already vectorised), so the viewer runs it in one
background thread: the app starts the default leaderboard when it starts, a page request
waits for its leaderboard at most `LEADERBOARD_WAIT_S` and otherwise answers at once with a
placeholder whose script polls ``/leaderboard/status`` until the numbers are ready. Results
are cached per (run, suite, the store's episode count and last write), so a live run's new
episodes start a fresh computation and a finished one is computed once.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from harness.store import Store

__all__ = ["Board", "Leaderboards", "compute_board", "LEADERBOARD_CACHE",
           "LEADERBOARD_WAIT_S"]

log = logging.getLogger(__name__)

LEADERBOARD_CACHE = 16
"""Leaderboards kept per app (the least recently asked for go first)."""
LEADERBOARD_WAIT_S = 0.3
"""How long a page request waits for a leaderboard being computed before it answers with
the placeholder."""


@dataclass(frozen=True)
class Board:
    """One computed leaderboard page's data."""

    header: tuple[str, ...]
    cells: tuple[tuple[str, ...], ...]
    """`harness.report.leaderboard.format_row` of each row: the CLI's strings."""
    markdown: str
    notes: tuple[str, ...]
    by_task_type: pd.DataFrame | None
    """Episodes and successes per (task type, policy) when a suite is chosen."""
    n_episodes: int
    message: str = ""


def compute_board(db: Path, run: str, suite: str) -> Board:
    """The CLI's computation (`leaderboard_table` over `scoped_episodes`, cells by
    `format_row`, `leaderboard_markdown`, `error_notes` and `comparability_notes`) for `run`
    and `suite` (empty: all)."""
    from harness.report.leaderboard import (HEADER, comparability_notes, error_notes,
                                            flagged_resolve_notes, format_row,
                                            leaderboard_markdown, leaderboard_table,
                                            scoped_episodes)

    frame = scoped_episodes(db, run_id=run or None, suite=suite or None)
    if frame.empty:
        return Board(tuple(HEADER), (), "", (), None, 0,
                     "No episodes match: choose another run or suite.")
    board = leaderboard_table(frame)
    cells = tuple(tuple(format_row(row)) for _, row in board.iterrows())
    notes = (*error_notes(frame),
             *comparability_notes(db, run_id=run or None, suite=suite or None),
             *flagged_resolve_notes(db, run_id=run or None, suite=suite or None))
    by_type = None
    if suite:
        by_type = frame.groupby(["task_type", "policy"]).agg(
            n=("success", "size"), successes=("success", "sum")).reset_index()
    return Board(tuple(HEADER), cells, leaderboard_markdown(board), notes, by_type, len(frame))


def fingerprint(store: Store) -> tuple:
    """What changes when episodes are written: their count and the last finish time."""
    return tuple(store.query("SELECT COUNT(*), MAX(finished_at) FROM episodes")[0])


class Leaderboards:
    """Leaderboards of one store, computed one at a time in a background thread and cached.

    `compute` is `compute_board` (a parameter so tests can hold a computation back)."""

    def __init__(self, db: Path, *, size: int = LEADERBOARD_CACHE,
                 compute: Callable[[Path, str, str], Board] = compute_board) -> None:
        self.db = db
        self.size = size
        self.compute = compute
        self._boards: OrderedDict[tuple, Future] = OrderedDict()
        self._lock = threading.Lock()
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="leaderboard")

    def future(self, run: str, suite: str, stamp: tuple) -> Future:
        """The computation of the leaderboard of `run` and `suite` at store state `stamp`,
        started when not already cached or under way."""
        key = (run, suite, stamp)
        with self._lock:
            found = self._boards.get(key)
            if found is not None:
                self._boards.move_to_end(key)
                return found
            found = self._pool.submit(self._compute, run, suite)
            self._boards[key] = found
            while len(self._boards) > self.size:
                self._boards.popitem(last=False)
            return found

    def _compute(self, run: str, suite: str) -> Board:
        try:
            return self.compute(self.db, run, suite)
        except Exception:
            log.exception("leaderboard of run %r suite %r failed", run, suite)
            raise

    def get(self, run: str, suite: str, stamp: tuple, wait_s: float) -> Board | None:
        """The leaderboard, waiting at most `wait_s` for it; None while it is computed. A
        computation that failed raises its exception (and is dropped, so it is retried)."""
        found = self.future(run, suite, stamp)
        try:
            return found.result(timeout=wait_s)
        except TimeoutError:
            return None
        except BaseException:
            with self._lock:
                if self._boards.get((run, suite, stamp)) is found:
                    del self._boards[run, suite, stamp]
            raise

    def close(self) -> None:
        """Drop queued computations; one under way finishes in its thread."""
        self._pool.shutdown(wait=False, cancel_futures=True)

