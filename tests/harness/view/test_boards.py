"""The leaderboard computed off the request path: while it is computed the page answers at
once with a placeholder and the status says so; once ready the page shows the numbers; a
failed computation shows its error and is retried. The computation is held back by an event
(the real one, `compute_board`, runs behind it), so nothing here depends on timing."""

from __future__ import annotations

import threading

import pytest
from starlette.testclient import TestClient

from harness.core import HarnessError
from harness.view.app import create_app
from harness.view.boards import compute_board

from tests.harness.view.conftest import table_cells

BOUND_S = 120.0
"""How long a held computation may take to finish once released (a bound, not a pause)."""


class Held:
    """`compute_board`, run only once `release` is set; counts its calls."""

    def __init__(self, fail: bool = False) -> None:
        self.release = threading.Event()
        self.calls: list[tuple[str, str]] = []
        self.fail = fail

    def __call__(self, db, run, suite):
        self.calls.append((run, suite))
        assert self.release.wait(BOUND_S), "the test never released the computation"
        if self.fail:
            raise HarnessError("the store went away")
        return compute_board(db, run, suite)


def _ready(client, params) -> str:
    """The status once the computation has finished (waited for through its future). A
    computation that failed before its request stopped waiting is dropped by that request at
    once (`Leaderboards.get`), so no future left means it failed (on a loaded machine the
    fake computation can end before the request's zero-second wait)."""
    boards = client.app.state.leaderboards
    with boards._lock:
        future = next((f for (run, suite, _), f in boards._boards.items()
                       if (run, suite) == (params.get("run", ""), params.get("suite", ""))),
                      None)
    if future is None:
        return "failed"
    future.exception(timeout=BOUND_S)  # waits for the state, whatever it ends in
    return client.get("/leaderboard/status", params=params).json()["state"]


def test_the_page_answers_with_a_placeholder_until_the_numbers_are_ready(view_db):
    held = Held()
    params = {"run": view_db.run_id}
    with TestClient(create_app(view_db.path, compute=held, leaderboard_wait_s=0)) as client:
        assert held.calls == [] or held.calls[0] == ("", "")  # the default, from the start
        page = client.get("/leaderboard", params=params)
        assert page.status_code == 200
        assert 'id="computing"' in page.text and 'id="leaderboard"' not in page.text
        assert f'data-status="/leaderboard/status?run={view_db.run_id}"' in page.text
        assert "connect-src 'self'" in page.headers["content-security-policy"]
        assert client.get("/leaderboard/status", params=params).json() == {
            "state": "computing"}
        held.release.set()
        assert _ready(client, params) == "ready"
        shown = client.get("/leaderboard", params=params).text
        assert 'id="computing"' not in shown and len(table_cells(shown, "leaderboard")) > 1
        client.get("/leaderboard", params=params)
        assert held.calls.count((view_db.run_id, "")) == 1  # computed once, then cached


def test_a_failed_computation_shows_its_error_and_is_retried(view_db):
    held = Held(fail=True)
    held.release.set()
    params = {"run": view_db.run_id, "suite": "sokoban@1"}
    with TestClient(create_app(view_db.path, compute=held, leaderboard_wait_s=0)) as client:
        client.get("/leaderboard", params=params)
        assert _ready(client, params) == "failed"
        page = client.get("/leaderboard", params=params)
        assert page.status_code == 503 and "the store went away" in page.text
        before = held.calls.count((view_db.run_id, "sokoban@1"))
        client.get("/leaderboard", params=params)
        assert _ready(client, params) == "failed"  # the retry runs in the background
        assert held.calls.count((view_db.run_id, "sokoban@1")) == before + 1


@pytest.mark.parametrize("wait_s", [0.0, 120.0])
def test_the_status_of_a_computed_board_is_ready(view_db, wait_s):
    with TestClient(create_app(view_db.path, leaderboard_wait_s=wait_s)) as client:
        client.get("/leaderboard")
        assert _ready(client, {}) == "ready"
