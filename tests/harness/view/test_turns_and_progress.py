"""The viewer over a run written through the store's API by hand: a model policy's episode
with its turns (prompt and reply shown, escaped, long messages folded), a scripted episode
without any, an errored and a timed-out episode (the timeout flag, errors by kind), and the
runs page's progress against the total the run's config plans."""

from __future__ import annotations

import re
from urllib.parse import parse_qsl, urlencode

import pytest
from starlette.testclient import TestClient

from harness.config import RunConfig
from harness.records import EpisodeKey, EpisodeRecord, StepRecord, TurnRecord
from harness.store import Store
from harness.view.app import create_app
from harness.view.queries import EpisodeFilter, planned_episodes

from tests.harness.view.conftest import table_cells

RUN = "live-run"
CONFIG = RunConfig(policies=("chat:model", "random"), suites=("frozenlake@1",), n_tasks=3,
                   eval_seeds=(0, 1))
"""Plans 2 policies x 1 suite x 3 tasks x 2 eval seeds = 12 episodes; 4 are stored."""
SYSTEM = "You play frozenlake. Reply with <action>Left|Right|Up|Down</action>. " * 30
PROMPT = "P_G\n<script>alert('prompt')</script> Your move?"
REPLY = "<think>go right & win</think><action>Right</action>"
TURNS = (TurnRecord(0, [{"role": "system", "content": SYSTEM},
                        {"role": "user", "content": PROMPT}], REPLY, 123, 17, 0.25),
         TurnRecord(1, [{"role": "system", "content": SYSTEM},
                        {"role": "user", "content": "_PG\nYour move?"}],
                    "no tags at all <b>", 131, 5, 1.5, parsed=False))
TRACEBACK = ("Traceback (most recent call last):\n  File \"x.py\", line 1, in <module>\n"
             "ValueError: the model said nothing\n")


def _episode(policy: str, seed: int, status: str = "ok", turns=(), error=None):
    return EpisodeRecord(key=EpisodeKey(policy, "frozenlake@1", "4x4-0250", seed, 0),
                         task_type="4x4", split="test", status=status,
                         success=status == "ok", score=float(status == "ok"),
                         total_reward=0.0, n_steps=2, n_invalid=0, terminated=True,
                         truncated=False, prompt_tokens=sum(t.prompt_tokens for t in turns),
                         completion_tokens=sum(t.completion_tokens for t in turns),
                         error=error, turns=tuple(turns))


STEPS = [StepRecord(0, "P_G", "Right", REPLY, 0.0, False, False, {}),
         StepRecord(1, "_PG", "Right", "no tags at all <b>", 1.0, True, False, {})]


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    path = tmp_path_factory.mktemp("turns") / "turns.db"
    with Store(path) as store:
        store.begin_run(RUN, CONFIG.identity(), {"code_version": "test", "host": "here",
                                                 "packages": {}})
        store.write_episode(RUN, _episode("chat:model", 0, turns=TURNS), STEPS)
        store.write_episode(RUN, _episode("chat:model", 1, "timeout", TURNS[:1],
                                          "episode exceeded 0.2s"), STEPS[:1])
        store.write_episode(RUN, _episode("random", 0, "error", error=TRACEBACK), ())
        store.write_episode(RUN, _episode("random", 1), STEPS)
    with TestClient(create_app(path)) as test_client:
        yield test_client


def _episode_page(client, policy: str, seed: int) -> str:
    response = client.get("/episode?" + urlencode(dict(
        run=RUN, policy=policy, suite="frozenlake@1", task="4x4-0250", seed=seed, sample=0)))
    assert response.status_code == 200
    return response.text


def _turn(page: str, n: int) -> str:
    return re.search(rf'<section class="turn" id="turn-{n}">(.*?)</section>', page,
                     re.S).group(1)


def test_each_model_turn_shows_its_prompt_and_raw_reply_escaped(client):
    page = _episode_page(client, "chat:model", 0)
    assert len(re.findall(r'<section class="turn" id="turn-\d+">', page)) == 2
    first, second = _turn(page, 0), _turn(page, 1)
    assert "P_G\n&lt;script&gt;alert(&#x27;prompt&#x27;)&lt;/script&gt; Your move?" in first
    assert "&lt;think&gt;go right &amp; win&lt;/think&gt;&lt;action&gt;Right&lt;/action&gt;" \
        in first
    assert "123 prompt tokens, 17 completion tokens · 0.250 s" in first
    assert '<a href="#step-0">step 0</a>' in first
    assert "131 prompt tokens, 5 completion tokens · 1.500 s" in second
    assert "no action read from the reply" in second and "no action read" not in first
    assert "no tags at all &lt;b&gt;" in second
    assert "<script>alert(" not in page and "at all <b>" not in page  # nothing unescaped
    assert page.count("<script") == 1  # the page's own script only


def test_long_prompt_messages_are_folded(client):
    first = _turn(_episode_page(client, "chat:model", 0), 0)
    assert first.startswith("<h3>turn 0") and '<details class="fold prompt">' in first
    system = first.index('<div class="label">system</div>')
    assert first.index('<details class="fold">', system) < first.index("You play frozenlake")
    assert f"({len(SYSTEM)} chars, 1 lines)" in first
    reply = re.search(r'<div class="reply">(.*?)</div>', first, re.S).group(1)
    assert reply.startswith('<pre class="text">')  # a short reply is shown open


def test_an_errored_episode_keeps_its_turns_and_a_scripted_one_has_none(client):
    timed_out = _episode_page(client, "chat:model", 1)
    assert len(re.findall(r'<section class="turn"', timed_out)) == 1
    assert 'id="no-turns"' not in timed_out
    scripted = _episode_page(client, "random", 1)
    assert '<p id="no-turns">No model turns stored.</p>' in scripted
    assert '<section class="turn"' not in scripted


def test_timeout_flag_lists_the_timed_out_episodes_only(client):
    page = client.get("/episodes", params={"flag": "timeout"}).text
    rows = table_cells(page, "episodes")[1:]
    assert re.search(r'id="count">1 episodes', page)
    assert [(row[2], row[5]) for row in rows] == [("chat:model", "timeout")]
    assert '<option value="timeout" selected>' in page  # the form keeps the state
    errored = client.get("/episodes", params={"flag": "errored"}).text
    assert {row[5] for row in table_cells(errored, "episodes")[1:]} == {"timeout", "error"}


def test_timeout_flag_round_trips_through_the_url():
    selected = EpisodeFilter(run=RUN, flag="timeout", page=2)
    query = selected.query_string()
    assert "flag=timeout" in query
    assert EpisodeFilter.from_query(dict(parse_qsl(query))) == selected


def test_runs_page_shows_progress_statuses_and_errors_by_kind(client):
    page = client.get("/").text
    [row] = [row for row in table_cells(page, "runs")[1:] if row[0].startswith(RUN)]
    assert "4 of at most 12 planned (2 successes)" in row[4]
    assert "error: 1, ok: 2, timeout: 1" in row[4]
    assert row[5] == "ValueError: 1 timeout: 1"
    assert '<progress value="4" max="12"></progress>' in page
    assert f'href="/episodes?run={RUN}&amp;flag=timeout">timeout: 1</a>' in page


@pytest.mark.parametrize("config, planned", [
    (CONFIG.identity(), 12),
    ({**CONFIG.identity(), "samples": 4, "eval_seeds": [0, 1, 2]}, 2 * 3 * 3 * 4),
    ({**CONFIG.identity(), "suites": ["a", "b"]}, 2 * 2 * 3 * 2),
    ({**CONFIG.identity(), "n_tasks": None}, None),  # every task: the config cannot say
    ({**CONFIG.identity(), "n_tasks": None, "task_ids": ["x", "y", "z", "w"]}, 2 * 4 * 2),
    ({**CONFIG.identity(), "n_tasks": None, "task_ids": ["x"], "suites": ["a", "b"]}, None),
    ({"policies": ["p"]}, None),  # a run begun by hand
])
def test_planned_episodes_from_the_stored_config(config, planned):
    assert planned_episodes(config) == planned
