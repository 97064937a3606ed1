"""``harness view --export DIR``: a static copy of chosen pages for a paper's supplement.

Writes, into one flat folder: ``index.html`` (the leaderboard of a run, or of a suite in it:
the CLI's computation, as on the served page), ``leaderboard-N.html`` (each suite's
drill-down to its task types), ``episodes.html`` (the episodes a filter selects, up to a
limit, in one list) and ``episode-N.html`` (each listed episode, every step). Pages are the
served viewer's, rendered by the same functions; links between exported pages are made
relative, links to pages not exported become plain text, filter forms are dropped, and each
page carries its Content-Security-Policy as a meta tag (its one script by nonce). Every
stored string is escaped exactly as on the served pages.
"""

from __future__ import annotations

import html
import os
import re
import secrets
from dataclasses import dataclass
from pathlib import Path

from harness.core import ConfigError
from harness.store import Store
from harness.view import pages
from harness.view.boards import compute_board
from harness.view.html import layout, url
from harness.view.queries import EpisodeFilter, filter_choices, list_episodes, load_episode

__all__ = ["ExportSummary", "export_pages"]

NAV = (("index.html", "Leaderboard"), ("episodes.html", "Episodes"))
_LINK = re.compile(r'<a href="([^"]*)"([^>]*)>(.*?)</a>', re.S)
_FORM = re.compile(r'<form class="filters".*?</form>', re.S)


@dataclass(frozen=True)
class ExportSummary:
    """What `export_pages` wrote."""

    folder: Path
    files: tuple[str, ...]
    n_episodes: int
    """Episodes exported (each with its page)."""
    n_matching: int
    """Episodes the filter selected (more than `n_episodes` when the limit cut the list)."""


def _relink(body: str, targets: dict[str, str]) -> str:
    """`body` with each link to an exported page pointing at its file, in-page anchors kept,
    every other link made plain text (its label, already escaped, kept)."""
    def replace(match: re.Match[str]) -> str:
        href, attributes, label = match.groups()
        target = html.unescape(href)
        if target.startswith("#"):
            return match.group(0)
        if target in targets:
            return f'<a href="{html.escape(targets[target])}"{attributes}>{label}</a>'
        return f'<span class="unlinked">{label}</span>'

    return _LINK.sub(replace, _FORM.sub("", body))


def _page(title: str, body: str, targets: dict[str, str]) -> str:
    nonce = secrets.token_urlsafe(16)
    csp = (f"default-src 'none'; script-src 'nonce-{nonce}'; style-src 'unsafe-inline'; "
           "img-src data:; base-uri 'none'")
    return layout(title, _relink(body, targets), nonce=nonce, nav=NAV,
                  head=f'<meta http-equiv="Content-Security-Policy" content="{csp}">')


def export_pages(db: str | os.PathLike, folder: str | os.PathLike, *, run: str = "",
                 suite: str = "", episodes: EpisodeFilter | None = None,
                 limit: int = 100) -> ExportSummary:
    """Write the static copy (see the module docstring) of `db` into `folder` (created; files
    of the same names replaced). `run`/`suite` choose the leaderboard (empty: all);
    `episodes` the listed episodes (default: those of `run` and `suite`), at most `limit`."""
    if limit < 1:
        raise ConfigError(f"--limit must be at least 1, got {limit}")
    db, out = Path(db), Path(folder)
    selected = episodes or EpisodeFilter(run=run, suite=suite)
    with Store(db, readonly=True) as store:
        choices = filter_choices(store, run)
        if run and run not in choices["run"]:
            raise ConfigError(f"no run {run!r} in {db}; runs: {', '.join(choices['run'])}")
        listed = list_episodes(store, selected, page_size=limit)
        details = [load_episode(store, row.run_id, row.key) for row in listed.rows]
    board = compute_board(db, run, suite)
    suites = [suite] if suite else list(dict.fromkeys(cells[0] for cells in board.cells))
    drill = {s: compute_board(db, run, s) for s in suites}

    targets = {url("/leaderboard", run=run, suite=suite): "index.html",
               url("/leaderboard", run=run): "index.html",
               "/episodes?" + selected.query_string(): "episodes.html"}
    targets.update({url("/leaderboard", run=run, suite=s): f"leaderboard-{n + 1}.html"
                    for n, s in enumerate(suites) if s != suite})
    if suite:
        targets[url("/leaderboard", run=run, suite=suite)] = "index.html"
    episode_files = {pages.episode_url(row.run_id, row): f"episode-{n + 1:04d}.html"
                     for n, row in enumerate(listed.rows)}
    targets.update(episode_files)

    written: dict[str, str] = {"index.html": _page("Leaderboard", pages.leaderboard_page(
        board if not suite else drill[suite], choices, run, suite), targets)}
    for n, s in enumerate(suites):
        if s != suite:
            written[f"leaderboard-{n + 1}.html"] = _page(
                f"Leaderboard of {s}", pages.leaderboard_page(drill[s], choices, run, s),
                targets)
    written["episodes.html"] = _page("Episodes", pages.episodes_page(listed, choices), targets)
    for row, detail in zip(listed.rows, details):
        if detail is not None:
            written[episode_files[pages.episode_url(row.run_id, row)]] = _page(
                f"Episode {row.task_id}", pages.episode_page(row.run_id, detail), targets)
    out.mkdir(parents=True, exist_ok=True)
    for name, text in written.items():
        (out / name).write_text(text, encoding="utf-8")
    return ExportSummary(out, tuple(written), len(listed.rows), listed.total)
