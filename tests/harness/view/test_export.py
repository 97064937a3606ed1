"""``harness view --export DIR``: the static copy holds the leaderboard, the chosen episodes
and their pages; every link resolves to an exported file (or an anchor in its page); stored
text stays escaped; the numbers are the CLI's."""

from __future__ import annotations

import html
import re
from urllib.parse import urlsplit

from harness.cli import main
from harness.store import load_episodes
from harness.view.export import export_pages
from harness.view.queries import EpisodeFilter

from tests.harness.view.conftest import HOSTILE_RUN, table_cells


def _hrefs(page: str) -> list[str]:
    return [html.unescape(h) for h in re.findall(r'<a href="([^"]*)"', page)]


def test_export_writes_linked_pages_of_a_run(view_db, tmp_path, capsys):
    out = tmp_path / "supplement"
    assert main(["view", "--db", str(view_db.path), "--export", str(out), "--run",
                 view_db.run_id, "--success", "0", "--limit", "7"]) == 0
    line = capsys.readouterr().out.strip()
    frame = load_episodes(view_db.path, run_id=view_db.run_id)
    failures = int((~frame.success).sum())
    assert f"and 7 episodes (the first 7 of {failures}" in line
    files = {p.name for p in out.iterdir()}
    episodes = sorted(f for f in files if f.startswith("episode-"))
    assert {"index.html", "episodes.html"} <= files and len(episodes) == 7
    assert len([f for f in files if f.startswith("leaderboard-")]) == frame.suite.nunique()
    listed = table_cells((out / "episodes.html").read_text(), "episodes")[1:]
    assert len(listed) == 7 and {row[5] for row in listed} <= {"failure", "error"}
    for name in files:
        page = (out / name).read_text()
        assert "<form" not in page and 'href="/' not in page
        for href in _hrefs(page):
            target = urlsplit(href)
            assert not target.scheme and not target.netloc, (name, href)
            if target.path:
                assert (out / target.path).is_file(), (name, href)
            if target.fragment:
                linked = (out / (target.path or name)).read_text()
                assert f'id="{target.fragment}"' in linked, (name, href)
    reached = {h for h in _hrefs((out / "episodes.html").read_text()) if h.startswith("episode-")}
    assert reached == set(episodes)  # every exported episode is reached from the list


def test_export_leaderboard_equals_the_cli(view_db, tmp_path, capsys):
    export_pages(view_db.path, tmp_path / "x", run=view_db.run_id)
    capsys.readouterr()
    assert main(["leaderboard", "--db", str(view_db.path), "--format", "markdown",
                 "--run-id", view_db.run_id]) == 0
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| ")]
    expected = [[c.strip() for c in line.strip().strip("|").split(" | ")] for line in lines]
    assert table_cells((tmp_path / "x" / "index.html").read_text(), "leaderboard") == expected


def test_exported_text_stays_escaped(view_db, tmp_path):
    out = tmp_path / "hostile"
    summary = export_pages(view_db.path, out, run=HOSTILE_RUN,
                           episodes=EpisodeFilter(run=HOSTILE_RUN))
    assert summary.n_episodes == 1
    for name in summary.files:
        page = (out / name).read_text()
        assert page.count("<script") == 1 and "<svg" not in page and "<img" not in page
        assert "\x1b" not in page
        nonce = re.search(r"script-src 'nonce-([^']+)'", page).group(1)
        assert f'<script nonce="{nonce}">' in page  # the CSP meta tag allows only it
    episode = (out / "episode-0001.html").read_text()
    assert "before &lt;script&gt;alert(1)&lt;/script&gt; <span class=\"ctl\">\\x1b</span>" in episode


def test_export_of_an_unknown_run_exits_2(view_db, tmp_path, capsys):
    assert main(["view", "--db", str(view_db.path), "--export", str(tmp_path / "y"),
                 "--run", "no-such-run"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("harness view: error: no run 'no-such-run'") and "\n" not in err
