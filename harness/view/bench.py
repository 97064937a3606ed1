"""`harness bench view`: the viewer's page times on a generated 100,000-episode store, each
next to its baseline measured in the same run: the same query run directly on SQLite (for
the leaderboard, `load_episodes`, the read the page's statistics start from).

Pages are requested in-process through Starlette's test client (the whole app: routing,
queries, rendering; no socket). Each time is the median of `REPEATS` requests after one
warm-up request. The leaderboard is computed in the app's background thread from its start
(`harness.view.boards`): its first request is timed on its own (it answers with the numbers,
or with the placeholder that polls for them), and so is the time from the app's start until
the numbers are ready; later requests are served from the app's cache until the store
changes."""

from __future__ import annotations

import sqlite3
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from harness.store import Store, load_episodes

__all__ = ["view_report", "bench_view"]

REPEATS = 5
SHAPE = dict(n_policies=10, n_suites=5, tasks_per_type=334, n_eval_seeds=2)
"""10 policies x 5 suites x 1,002 tasks x 2 eval seeds = 100,200 episodes, 3 steps each."""


def _median_s(call: Callable[[], Any], repeats: int = REPEATS) -> float:
    call()
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        call()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def _direct(db: Path) -> dict[str, Callable[[], Any]]:
    """The pages' queries run directly on SQLite (one fresh read-only connection each)."""
    def query(sql: str, params: tuple = ()) -> Callable[[], Any]:
        def run() -> Any:
            with sqlite3.connect(f"{db.resolve().as_uri()}?mode=ro", uri=True) as con:
                rows = con.execute(sql, params).fetchall()
            con.close()
            return rows
        return run

    key = ("synthetic", "policy-03", "synthetic-02@1", "medium-007", 1, 0)

    return {
        "episodes": query("SELECT * FROM episodes WHERE suite = ? AND success = 0 ORDER BY "
                          "run_id, policy_id, suite, task_id, eval_seed, sample LIMIT 50",
                          ("synthetic-02@1",)),
        "episode": query("SELECT e.*, t.steps FROM episodes e JOIN trajectories t USING "
                         "(run_id, policy_id, suite, task_id, eval_seed, sample) WHERE "
                         "e.run_id = ? AND e.policy_id = ? AND e.suite = ? AND e.task_id = ? "
                         "AND e.eval_seed = ? AND e.sample = ?", key),
        "compare": query("SELECT x.success, y.success, COUNT(*) FROM episodes x JOIN episodes y "
                         "ON y.run_id = x.run_id AND y.policy_id = ? AND y.suite = x.suite AND "
                         "y.task_id = x.task_id AND y.eval_seed = x.eval_seed AND y.sample = "
                         "x.sample WHERE x.run_id = ? AND x.policy_id = ? GROUP BY 1, 2",
                         ("policy-07", "synthetic", "policy-03")),
        "leaderboard": lambda: load_episodes(db),
    }


def _pages() -> dict[str, str]:
    episode = dict(run="synthetic", policy="policy-03", suite="synthetic-02@1",
                   task="medium-007", seed=1, sample=0)
    return {
        "episodes": "/episodes?" + urlencode(dict(suite="synthetic-02@1", success="0")),
        "episode": "/episode?" + urlencode(episode),
        "compare": "/compare?" + urlencode(dict(run="synthetic", a="policy-03", b="policy-07",
                                                suite="synthetic-02@1", task="medium-007",
                                                seed=1, sample=0)),
        "leaderboard": "/leaderboard",
    }


READY_BOUND_S = 600.0
"""How long the bench waits for the leaderboard to be computed before it gives up."""


def _until_ready(client: Any, started: float) -> float:
    """Seconds from `started` until ``/leaderboard/status`` says ready (polled)."""
    while time.perf_counter() - started < READY_BOUND_S:
        state = client.get("/leaderboard/status").json()["state"]
        if state == "ready":
            return time.perf_counter() - started
        if state == "failed":
            raise RuntimeError("the leaderboard's computation failed")
        time.sleep(0.05)
    raise RuntimeError(f"the leaderboard was not ready after {READY_BOUND_S:.0f}s")


def bench_view(db: Path | None = None) -> dict[str, float]:
    """Seconds per page and per direct query (``page:NAME``, ``sql:NAME``), the leaderboard's
    first request and its time to be ready from the app's start, the episode count and the
    time to build the store."""
    from starlette.testclient import TestClient

    from harness.report.bench import synthetic_store
    from harness.view.app import create_app

    with tempfile.TemporaryDirectory() as tmp:
        started = time.perf_counter()
        path = db or synthetic_store(Path(tmp) / "view.db", **SHAPE)
        Store(path).close()  # a writable open: the indices of schema version 4
        figures = {"store_s": time.perf_counter() - started}
        with sqlite3.connect(path) as con:
            figures["episodes"] = float(con.execute("SELECT COUNT(*) FROM episodes").fetchone()[0])
        con.close()
        app_started = time.perf_counter()
        with TestClient(create_app(path)) as client:
            pages = _pages()
            started = time.perf_counter()
            first = client.get(pages["leaderboard"])
            figures["leaderboard_first_s"] = time.perf_counter() - started
            if first.status_code != 200:
                raise RuntimeError(f"/leaderboard: HTTP {first.status_code}")
            figures["leaderboard_placeholder"] = float('id="computing"' in first.text)
            figures["leaderboard_ready_s"] = _until_ready(client, app_started)
            for name, page in pages.items():
                def get(page: str = page) -> None:
                    response = client.get(page)
                    if response.status_code != 200:
                        raise RuntimeError(f"{page}: HTTP {response.status_code}")
                figures[f"page:{name}"] = _median_s(get)
        for name, call in _direct(path).items():
            figures[f"sql:{name}"] = _median_s(call)
    return figures


def view_report(args: Any) -> list[str]:
    """The lines `harness bench view` prints."""
    figures = bench_view()
    lines = [f"view bench: {figures['episodes']:,.0f} episodes (store built in "
             f"{figures['store_s']:.1f}s); median of {REPEATS} requests after a warm-up",
             f"{'page':12s} {'page ms':>9s} {'direct SQL ms':>14s}"]
    for name in ("episodes", "episode", "compare", "leaderboard"):
        lines.append(f"{name:12s} {1000 * figures[f'page:{name}']:9.1f} "
                     f"{1000 * figures[f'sql:{name}']:14.1f}")
    answer = ("the placeholder that polls for the numbers" if figures["leaderboard_placeholder"]
              else "the numbers")
    lines.append(f"leaderboard, first request: {1000 * figures['leaderboard_first_s']:.1f} ms "
                 f"({answer}); numbers ready {figures['leaderboard_ready_s']:.2f}s after the "
                 "app started (computed in its background thread, then cached); the direct "
                 "baseline is load_episodes, the read its statistics start from")
    return lines
