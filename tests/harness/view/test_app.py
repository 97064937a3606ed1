"""The viewer's pages over a store built by the real runner (conftest): content, filters,
search, pagination, 404s, the leaderboard against the CLI, and hostile text made inert."""

from __future__ import annotations

import re
from urllib.parse import urlencode

import pytest
from starlette.testclient import TestClient

from harness.cli import main
from harness.records import EpisodeKey
from harness.store import Store, load_episodes
from harness.view.app import create_app
from harness.view.queries import first_divergence

from tests.harness.view.conftest import HOSTILE_RUN, table_cells

PAGE_SIZE = 10
WAIT_S = 120.0
"""How long a leaderboard request may wait for its numbers on a busy machine (a bound on
waiting for the state, not a pause; the placeholder is tested in test_boards.py)."""


@pytest.fixture(scope="module")
def client(view_db):
    with TestClient(create_app(view_db.path, page_size=PAGE_SIZE,
                               leaderboard_wait_s=WAIT_S)) as test_client:
        yield test_client


def _count(page: str) -> int:
    return int(re.search(r'id="count">(\d+) episodes', page).group(1))


def _episode_url(run_id, key: EpisodeKey) -> str:
    return "/episode?" + urlencode(dict(run=run_id, policy=key.policy_id, suite=key.suite,
                                        task=key.task_id, seed=key.eval_seed,
                                        sample=key.sample))


# -- runs -----------------------------------------------------------------------------------
def test_runs_page_lists_each_run_with_counts_and_error_kinds(client, view_db):
    page = client.get("/").text
    rows = table_cells(page, "runs")[1:]
    by_run = {row[0].split()[0]: row for row in rows}
    assert set(by_run) == {view_db.run_id, HOSTILE_RUN}
    frame = load_episodes(view_db.path, run_id=view_db.run_id)
    stored = by_run[view_db.run_id][4]
    planned = 3 * 2 * 4 * 2  # policies x suites x n_tasks x eval seeds, all played
    assert f"{len(frame)} of at most {planned} planned ({int(frame.success.sum())} " \
        "successes)" in stored and len(frame) == planned
    assert "1 stored (1 successes)" in by_run[HOSTILE_RUN][4]  # its config plans nothing
    assert f"error: {int((frame.status == 'error').sum())}" in stored
    assert by_run[view_db.run_id][5] == "ValueError: 4"  # the flaky policy's exception
    assert by_run[HOSTILE_RUN][5] == "none"
    assert "frozenlake@1" in by_run[view_db.run_id][1]


# -- leaderboard ----------------------------------------------------------------------------
def _cli_markdown(db, capsys, *flags: str) -> list[list[str]]:
    capsys.readouterr()
    assert main(["leaderboard", "--db", str(db), "--format", "markdown", *flags]) == 0
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| ")]
    return [[cell.strip() for cell in line.strip().strip("|").split(" | ")] for line in lines]


@pytest.mark.parametrize("run", ["", "runner"])
def test_leaderboard_page_shows_the_numbers_of_the_cli(client, view_db, capsys, run):
    run_id = view_db.run_id if run else ""
    expected = _cli_markdown(view_db.path, capsys, *(["--run-id", run_id] if run_id else []))
    page = client.get("/leaderboard", params={"run": run_id} if run_id else {}).text
    shown = table_cells(page, "leaderboard")
    assert shown == expected
    assert len(shown) > 4  # header and one row per policy x suite
    markdown = re.search(r'<pre class="text" id="markdown">(.*?)</pre>', page, re.S).group(1)
    assert "| random |" in markdown or "| oracle |" in markdown


def test_leaderboard_drills_down_by_suite_to_task_types(client, view_db):
    page = client.get("/leaderboard", params={"run": view_db.run_id,
                                              "suite": "frozenlake@1"}).text
    assert {row[0] for row in table_cells(page, "leaderboard")[1:]} == {"frozenlake@1"}
    types = table_cells(page, "by-task-type")[1:]
    frame = load_episodes(view_db.path, run_id=view_db.run_id, suite="frozenlake@1")
    expected = frame.groupby(["task_type", "policy"]).success.agg(["size", "sum"])
    assert {(r[0], r[1]): (int(r[2]), int(r[3])) for r in types} == {
        key: (int(row["size"]), int(row["sum"])) for key, row in expected.iterrows()}


def test_leaderboard_drills_down_from_a_task_type_to_its_tasks(client, view_db):
    page = client.get("/leaderboard", params={"run": view_db.run_id, "suite": "frozenlake@1",
                                              "task_type": "4x4"}).text
    assert "4x4" in {row[0] for row in table_cells(page, "by-task-type")[1:]}  # level above
    assert re.search(r'id="crumbs">.*frozenlake@1.* › 4x4</p>', page)
    rows = table_cells(page, "by-task")
    frame = load_episodes(view_db.path, run_id=view_db.run_id, suite="frozenlake@1")
    frame = frame[frame.task_type == "4x4"]
    policies = sorted(frame.policy.unique())
    assert rows[0] == ["task", *policies]
    expected = {(task, policy): f"{int(g.success.sum())}/{len(g)}"
                for (task, policy), g in frame.groupby(["task_id", "policy"])}
    shown = {(row[0], policy): cell for row in rows[1:] for policy, cell in zip(policies, row[1:])}
    assert shown == expected and len(rows) - 1 == frame.task_id.nunique() > 0
    task = rows[1][0]
    link = re.search(r'<a href="([^"]+)" class="task-link">' + re.escape(task) + "<", page)
    listed = client.get(link.group(1).replace("&amp;", "&")).text
    assert _count(listed) == int((frame.task_id == task).sum())
    assert {row[0].split(" / ")[0] for row in table_cells(listed, "episodes")[1:]} == {task}


def test_leaderboard_of_an_unknown_run_says_so(client):
    page = client.get("/leaderboard", params={"run": "no-such-run"})
    assert page.status_code == 200 and "No episodes match" in page.text


# -- episodes -------------------------------------------------------------------------------
def test_episode_list_paginates_with_the_filters_in_the_url(client, view_db):
    total = len(load_episodes(view_db.path))
    first = client.get("/episodes").text
    assert _count(first) == total and total > 2 * PAGE_SIZE
    assert len(table_cells(first, "episodes")) == PAGE_SIZE + 1
    assert f"page 1 of {-(-total // PAGE_SIZE)}" in first
    last_page = -(-total // PAGE_SIZE)
    last = client.get("/episodes", params={"page": last_page}).text
    assert len(table_cells(last, "episodes")) - 1 == total - (last_page - 1) * PAGE_SIZE
    assert 'id="next"' not in last and 'id="prev"' in last
    seen = [row[0] for page in range(1, last_page + 1)
            for row in table_cells(client.get("/episodes", params={"page": page}).text,
                                   "episodes")[1:]]
    assert len(seen) == total
    failures = client.get("/episodes", params={"success": "0"}).text
    next_link = re.search(r'<a href="([^"]+)" id="next">', failures)
    n_failures = int((~load_episodes(view_db.path).success).sum())
    assert _count(failures) == n_failures
    if n_failures > PAGE_SIZE:
        assert "success=0" in next_link.group(1) and "page=2" in next_link.group(1)


@pytest.mark.parametrize("params, expected", [
    ({"policy": "flaky", "status": "error"},
     lambda f: (f.policy == "flaky") & (f.status == "error")),
    ({"success": "0"}, lambda f: ~f.success),
    ({"success": "1", "suite": "sokoban@1"}, lambda f: f.success & (f.suite == "sokoban@1")),
    ({"suite": "frozenlake@1", "task_type": "8x8"},
     lambda f: (f.suite == "frozenlake@1") & (f.task_type == "8x8")),
    ({"flag": "errored"}, lambda f: f.status != "ok"),
    ({"flag": "truncated"}, lambda f: f.truncated),
])
def test_episode_filters_select_what_the_store_holds(client, view_db, params, expected):
    frame = load_episodes(view_db.path)
    want = frame[expected(frame)]
    page = client.get("/episodes", params={**params, "page": 1})
    assert _count(page.text) == len(want)
    rows = table_cells(page.text, "episodes")[1:]
    assert len(rows) == min(len(want), PAGE_SIZE)
    if params.get("policy"):
        assert {row[2] for row in rows} == {params["policy"]}
    if params.get("status") == "error" or params.get("flag") == "errored":
        assert rows and {row[5] for row in rows} == {"error"}


def _matches(view_db, needle: str) -> int:
    """Episodes whose steps or final observation hold `needle` (ignoring ASCII case), read
    through the store's own API."""
    needle = needle.lower()
    found = 0
    with Store(view_db.path, readonly=True) as store:
        frame = store.load_episodes()
        finals = dict(((r[0], r[1], r[2], r[3], r[4], r[5]), r[6]) for r in store.query(
            "SELECT run_id, policy_id, suite, task_id, eval_seed, sample, final_observation "
            "FROM episodes"))
        for row in frame.itertuples():
            key = EpisodeKey(row.policy, row.suite, row.task_id, row.eval_seed, row.sample)
            try:
                steps = store.load_steps(row.run_id, key)
            except Exception:  # noqa: BLE001 - an episode without a trajectory row
                steps = []
            texts = [s.observation for s in steps] + [s.action for s in steps] + \
                [finals[(row.run_id, *key)] or ""]
            found += any(needle in text.lower() for text in texts)
    return found


@pytest.mark.parametrize("needle", ["Available actions", "alert(1)", "OO__\n____", "O%G",
                                    "O_G"])
def test_search_finds_text_in_observations_and_actions(client, view_db, needle):
    expected = _matches(view_db, needle)
    page = client.get("/episodes", params={"q": needle}).text
    assert _count(page) == expected
    if needle == "O%G":  # a LIKE wildcard is searched for literally
        assert expected == 0
    else:
        assert expected > 0


def test_search_combines_with_filters(client, view_db):
    page = client.get("/episodes", params={"q": "Available actions", "policy": "oracle"}).text
    rows = table_cells(page, "episodes")[1:]
    assert _count(page) == 8 and {row[2] for row in rows} == {"oracle"}
    assert {row[3] for row in rows} == {"sokoban@1"}


# -- one episode ----------------------------------------------------------------------------
def test_episode_page_shows_every_step(client, view_db):
    key = EpisodeKey("random", "frozenlake@1", "4x4-0250", 0, 0)
    with Store(view_db.path, readonly=True) as store:
        steps = store.load_steps(view_db.run_id, key)
    page = client.get(_episode_url(view_db.run_id, key)).text
    assert len(re.findall(r'<section class="step" id="step-\d+">', page)) == len(steps) > 0
    for step in steps:
        assert f"step {step.t} · reward {step.reward:.3f}" in page
        assert step.observation.replace("\n", "\n") in page  # plain text, no markup in it
        assert f'<pre class="text">{step.action}</pre>' in page
    assert "compare with: " in page
    assert {"oracle", "flaky"} <= set(re.findall(r'class="compare-link">([^<]+)<', page))


def test_an_errored_episode_shows_its_traceback(client, view_db):
    key = EpisodeKey("flaky", "frozenlake@1", "4x4-0251", 1, 0)
    page = client.get(_episode_url(view_db.run_id, key)).text
    error = re.search(r'<div id="error">(.*?)</div>', page, re.S).group(1)
    assert "Traceback (most recent call last)" in error
    assert "ValueError: model output could not be decoded for 4x4-0251" in error


def test_long_text_is_folded(client, view_db):
    key = EpisodeKey("<svg onload=alert(3)>", "frozenlake@1", "4x4-0250", 0, 0)
    page = client.get(_episode_url(HOSTILE_RUN, key)).text
    step = re.search(r'<section class="step" id="step-1">(.*?)</section>', page, re.S).group(1)
    assert step.index('<details class="fold">') < step.index("line\nline")
    assert "(200 chars, 41 lines)" in step


@pytest.mark.parametrize("url, status", [
    ("/episode?run=nope&policy=random&suite=frozenlake@1&task=4x4-0250&seed=0&sample=0", 404),
    ("/episode?run={run}&policy=random&suite=frozenlake@1&task=no-task&seed=0&sample=0", 404),
    ("/episode?run={run}&policy=random&suite=frozenlake@1&task=4x4-0250&seed=9&sample=0", 404),
    ("/episode?run={run}&policy=random&suite=frozenlake@1&task=4x4-0250&seed=x&sample=0", 400),
    ("/episode?run={run}", 400),
    ("/compare?run={run}&a=oracle&b=nobody&suite=frozenlake@1&task=4x4-0250&seed=0&sample=0",
     404),
    ("/no-such-page", 404),
])
def test_unknown_ids_answer_404_and_bad_parameters_400(client, view_db, url, status):
    response = client.get(url.format(run=view_db.run_id))
    assert response.status_code == status
    assert 'id="error"' in response.text


# -- compare --------------------------------------------------------------------------------
def test_compare_highlights_the_first_diverging_step(client, view_db):
    key = dict(suite="frozenlake@1", task="4x4-0250", seed=0, sample=0)
    with Store(view_db.path, readonly=True) as store:
        a = store.load_steps(view_db.run_id, EpisodeKey("oracle", "frozenlake@1", "4x4-0250",
                                                        0, 0))
        b = store.load_steps(view_db.run_id, EpisodeKey("random", "frozenlake@1", "4x4-0250",
                                                        0, 0))
    diverge = first_divergence(a, b)
    assert diverge is not None  # the oracle and random part ways on this map
    page = client.get("/compare", params=dict(run=view_db.run_id, a="oracle", b="random",
                                              **key)).text
    rows = table_cells(page, "side-by-side")
    assert rows[0] == ["step", "oracle", "random"]
    assert len(rows) == 1 + max(len(a), len(b)) + 1  # header, steps, outcomes
    highlighted = re.search(r'<tr class="diverge" id="diverge"><td>(\d+)</td>', page)
    assert int(highlighted.group(1)) == diverge
    assert page.count('class="diverge"') == 1
    assert f"first divergence at step {diverge}" in page


def test_compare_gives_the_paired_outcomes_of_the_run(client, view_db):
    page = client.get("/compare", params=dict(run=view_db.run_id, a="oracle", b="flaky")).text
    frame = load_episodes(view_db.path, run_id=view_db.run_id)
    keys = ["suite", "task_id", "eval_seed", "sample"]
    paired = frame[frame.policy == "oracle"].merge(frame[frame.policy == "flaky"], on=keys)
    grid = table_cells(page, "paired")
    counts = {(x, y): int(((paired.success_x == x) & (paired.success_y == y)).sum())
              for x in (True, False) for y in (True, False)}
    assert grid[1][1:] == [str(counts[True, True]), str(counts[True, False])]
    assert grid[2][1:] == [str(counts[False, True]), str(counts[False, False])]
    discordant = table_cells(page, "discordant")[1:]
    assert len(discordant) == counts[True, False] + counts[False, True] > 0


def test_compare_of_one_policy_with_itself_is_identical(client, view_db):
    page = client.get("/compare", params=dict(run=view_db.run_id, a="random", b="random",
                                              suite="sokoban@1", task="6x6-b1-0230", seed=1,
                                              sample=0)).text
    assert "the two trajectories are identical" in page and 'class="diverge"' not in page


# -- hostile text ---------------------------------------------------------------------------
HOSTILE_PAGES = [
    "/", "/leaderboard", "/episodes", "/episodes?q=alert", "/compare?" + urlencode(dict(
        run=HOSTILE_RUN, a="<svg onload=alert(3)>", b="<svg onload=alert(3)>")),
    _episode_url(HOSTILE_RUN, EpisodeKey("<svg onload=alert(3)>", "frozenlake@1", "4x4-0250",
                                         0, 0)),
]


@pytest.mark.parametrize("url", HOSTILE_PAGES)
def test_episode_text_renders_inert_and_visible(client, url):
    response = client.get(url)
    assert response.status_code == 200
    page = response.text
    nonce = re.search(r"script-src 'nonce-([^']+)'", response.headers["content-security-policy"])
    assert page.count("<script") == 1 and f'<script nonce="{nonce.group(1)}">' in page
    assert "<svg" not in page and "<img" not in page and "\x1b" not in page
    assert "&lt;svg onload=alert(3)&gt;" in page


def test_hostile_observation_is_shown_as_text(client):
    page = client.get(HOSTILE_PAGES[-1]).text
    assert ("before &lt;script&gt;alert(1)&lt;/script&gt; <span class=\"ctl\">\\x1b</span>[31mred"
            "<span class=\"ctl\">\\x1b</span>[0m after") in page
    assert "&lt;img src=x onerror=alert(2)&gt;" in page
    assert "&lt;b&gt;bold&lt;/b&gt;" in page  # info values too
