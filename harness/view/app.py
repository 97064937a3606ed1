"""The ASGI app of `harness view` (Starlette): server-rendered pages over a results store,
opened read-only per request (``mode=ro``), so the viewer runs beside a live ``harness run``
and shows what it has committed so far.

Routes (every page's state in its query string): ``/`` runs; ``/leaderboard?run=&suite=
&task_type=`` (the rows of `harness.report.leaderboard.leaderboard_table` formatted by its
`format_row`, the computation behind ``harness leaderboard``, computed in the background by
`harness.view.boards`; drill-down suite -> task type -> task) and ``/leaderboard/status``
(JSON: computing, ready or failed); ``/audits`` (stored audits, `harness.view.audits`);
``/episodes?run=&policy=&suite=&task_type=&task=&status=&success=&flag=&q=&page=``; ``/episode?run=&policy=&suite=&task=&seed=&sample=``;
``/compare?run=&a=&b=[&suite=][&task=&seed=&sample=]``. Unknown ids answer 404, malformed
parameters 400. Every response carries a Content-Security-Policy that runs only the page's
own script (by nonce), a second line of defence behind escaping.
"""

from __future__ import annotations

import os
import secrets
import socket
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse
from starlette.routing import Route

from harness.core import HarnessError
from harness.records import EpisodeKey
from harness.store import Store
from harness.view import pages
from harness.view.boards import (LEADERBOARD_WAIT_S, Board, Leaderboards, compute_board,
                                 fingerprint)
from harness.view.html import esc, layout, url
from harness.view.queries import (PAGE_SIZE, EpisodeFilter, filter_choices, first_divergence,
                                  list_episodes, list_runs, load_episode, paired_outcomes,
                                  task_outcomes)

__all__ = ["create_app", "serve", "start_in_thread"]

def _csp(nonce: str) -> str:
    return (f"default-src 'none'; script-src 'nonce-{nonce}'; style-src 'unsafe-inline'; "
            "img-src data:; connect-src 'self'; form-action 'self'; base-uri 'none'; "
            "frame-ancestors 'none'")


def _page(title: str, body: str, *, status: int = 200) -> HTMLResponse:
    nonce = secrets.token_urlsafe(16)
    return HTMLResponse(layout(title, body, nonce=nonce), status_code=status, headers={
        "Content-Security-Policy": _csp(nonce), "X-Content-Type-Options": "nosniff",
        "Referrer-Policy": "no-referrer", "Cache-Control": "no-store"})


def _int(request: Request, name: str) -> int:
    value = request.query_params.get(name, "")
    try:
        return int(value)
    except ValueError:
        raise HTTPException(400, f"parameter {name} must be an integer, got {value!r}") \
            from None


def _required(request: Request, *names: str) -> list[str]:
    missing = [n for n in names if not request.query_params.get(n)]
    if missing:
        raise HTTPException(400, f"missing parameter(s): {', '.join(missing)}")
    return [request.query_params[n] for n in names]


class _Views:
    """The viewer's pages over one results database, each opened read-only per request."""

    def __init__(self, path: Path, boards: Leaderboards, page_size: int,
                 leaderboard_wait_s: float):
        self.path, self.boards = path, boards
        self.page_size, self.leaderboard_wait_s = page_size, leaderboard_wait_s

    @contextmanager
    def store(self) -> Iterator[Store]:
        with Store(self.path, readonly=True) as opened:
            yield opened

    def runs(self, request: Request) -> HTMLResponse:
        with self.store() as s:
            return _page("Runs", pages.runs_page(list_runs(s)))

    def leaderboard(self, request: Request) -> HTMLResponse:
        run, suite, task_type = (request.query_params.get(n, "")
                                 for n in ("run", "suite", "task_type"))
        with self.store() as s:
            choices = filter_choices(s, run)
            stamp = fingerprint(s)
            tasks = task_outcomes(s, run, suite, task_type) if suite and task_type else None
        board = self.boards.get(run, suite, stamp, self.leaderboard_wait_s)
        status = url("/leaderboard/status", run=run, suite=suite)
        return _page("Leaderboard", pages.leaderboard_page(board, choices, run, suite,
                                                           task_type, tasks, status))

    def leaderboard_status(self, request: Request) -> JSONResponse:
        run, suite = (request.query_params.get(n, "") for n in ("run", "suite"))
        with self.store() as s:
            stamp = fingerprint(s)
        found = self.boards.future(run, suite, stamp)
        state = ("computing" if not found.done() else
                 "failed" if found.exception() is not None else "ready")
        return JSONResponse({"state": state}, headers={"Cache-Control": "no-store"})

    def audits(self, request: Request) -> HTMLResponse:
        from harness.view.audits import audits_page, stored_audits

        with self.store() as s:
            found, unreadable = stored_audits(s)
        return _page("Audits", audits_page(found, unreadable))

    def episodes(self, request: Request) -> HTMLResponse:
        selected = EpisodeFilter.from_query(request.query_params)
        with self.store() as s:
            page = list_episodes(s, selected, page_size=self.page_size)
            choices = filter_choices(s, selected.run)
        return _page("Episodes", pages.episodes_page(page, choices))

    def episode(self, request: Request) -> HTMLResponse:
        run, policy, suite, task = _required(request, "run", "policy", "suite", "task")
        key = EpisodeKey(policy, suite, task, _int(request, "seed"), _int(request, "sample"))
        with self.store() as s:
            found = load_episode(s, run, key)
        if found is None:
            raise HTTPException(404, f"no episode {tuple(key)} in run {run!r}")
        return _page(f"Episode {task}", pages.episode_page(run, found))

    def compare(self, request: Request) -> HTMLResponse:
        params = request.query_params
        run, a, b, suite = (params.get(n, "") for n in ("run", "a", "b", "suite"))
        with self.store() as s:
            choices = filter_choices(s, run)
            body = pages.compare_form(choices, run, a, b, suite)
            if not (run and a and b):
                return _page("Compare", body + "<p>Choose a run and two policies.</p>")
            if params.get("task"):
                suite, task = _required(request, "suite", "task")
                seed, sample = _int(request, "seed"), _int(request, "sample")
                found = [load_episode(s, run, EpisodeKey(p, suite, task, seed, sample))
                         for p in (a, b)]
                for policy, episode in zip((a, b), found):
                    if episode is None:
                        raise HTTPException(404, f"no episode of {policy!r} on {task!r} "
                                                 f"(seed {seed}, sample {sample}) in run {run!r}")
                body += pages.side_by_side(run, found[0], found[1],
                                           first_divergence(found[0].steps, found[1].steps))
            body += pages.paired_table(run, paired_outcomes(s, run, a, b, suite=suite), suite)
        return _page(f"Compare {a} and {b}", body)



async def _http_error(request: Request, exc: HTTPException) -> HTMLResponse:
    return _page(f"{exc.status_code}", f'<p id="error">{esc(exc.detail)}</p>',
                 status=exc.status_code)


async def _harness_error(request: Request, exc: HarnessError) -> HTMLResponse:
    return _page("Cannot show this page", f'<p id="error">{esc(exc)}</p>', status=503)


def create_app(db: str | os.PathLike, *, page_size: int = PAGE_SIZE,
               leaderboard_wait_s: float = LEADERBOARD_WAIT_S,
               compute: Callable[[Path, str, str], Board] = compute_board) -> Starlette:
    """The viewer over the results database `db` (which must exist); `page_size` episodes
    per page of the episode list. Leaderboards are computed by `compute` in a background
    thread (`harness.view.boards`), the default one from the app's start; a page waits
    `leaderboard_wait_s` for its leaderboard before answering with a placeholder."""
    path = Path(db)
    Store(path, readonly=True).close()  # fail now, with the store's one-line error
    boards = Leaderboards(path, compute=compute)
    views = _Views(path, boards, page_size, leaderboard_wait_s)

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        with views.store() as s:
            boards.future("", "", fingerprint(s))  # the page the navigation opens
        try:
            yield
        finally:
            boards.close()

    routes = [Route("/", views.runs), Route("/leaderboard", views.leaderboard),
              Route("/leaderboard/status", views.leaderboard_status),
              Route("/audits", views.audits), Route("/episodes", views.episodes),
              Route("/episode", views.episode), Route("/compare", views.compare)]
    app = Starlette(routes=routes, exception_handlers={HTTPException: _http_error,
                                                       HarnessError: _harness_error},
                    lifespan=lifespan)
    app.state.leaderboards = boards
    return app


def bind(host: str, port: int) -> socket.socket:
    """A listening TCP socket on `host`:`port` (0: a free port)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise HarnessError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    sock.listen(128)
    return sock


def _server(app: Starlette) -> Any:
    import uvicorn

    return uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False,
                                         timeout_graceful_shutdown=2))


def serve(db: str | os.PathLike, host: str, port: int,
          on_ready: Callable[[str], None] = lambda address: None) -> None:
    """Serve the viewer of `db` until interrupted; `on_ready(url)` once it listens."""
    app = create_app(db)
    sock = bind(host, port)
    bound_port = sock.getsockname()[1]
    on_ready(f"http://{host if ':' not in host else f'[{host}]'}:{bound_port}/")
    _server(app).run(sockets=[sock])


@contextmanager
def start_in_thread(db: str | os.PathLike, host: str = "127.0.0.1", **options: Any
                    ) -> Iterator[str]:
    """The viewer of `db` served from a thread on a free port of `host`; yields its URL. The
    socket listens before this yields: a client connecting at once waits in its backlog."""
    server = _server(create_app(db, **options))
    sock = bind(host, 0)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        yield f"http://{host}:{sock.getsockname()[1]}/"
    finally:
        server.should_exit = True
        thread.join()
        sock.close()
