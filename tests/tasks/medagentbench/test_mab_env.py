"""The protocol and the Env: action parsing, the official prompt, HTTP round trips through
the env, invalid actions, step limits, snapshot/restore, and the Env contract checker."""

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tasks.base import check_env
from tasks.medagentbench import MedAgentBenchV1Suite, MedAgentBenchV3Suite
from tasks.medagentbench.data import load_official_tasks
from tasks.medagentbench.protocol import (POST_ACCEPTED, Finish, Get, Post, parse_action)

BASE = "http://localhost:8080/fhir/"


@pytest.fixture(scope="module")
def v1():
    return MedAgentBenchV1Suite()


@pytest.fixture(scope="module")
def v3():
    return MedAgentBenchV3Suite()


def test_parse_action_forms():
    assert parse_action("GET http://x/fhir/Patient?name=a") == Get("http://x/fhir/Patient?name=a")
    assert parse_action("```tool_code\nGET http://x/P\n```") == Get("http://x/P")
    assert parse_action('POST http://x/Observation\n{"a": 1}') == Post("http://x/Observation",
                                                                      '{"a": 1}')
    assert parse_action('FINISH(["S1", 2])') == Finish('["S1", 2]', ["S1", 2])
    assert parse_action("FINISH([])").answer == []
    bad = parse_action("FINISH([1,)")
    assert isinstance(bad, Finish) and bad.answer is None and bad.error
    for text in ("", "get http://x", "GET", "POST", "I think FINISH([1])", "GET a\nb"):
        assert parse_action(text) is None


@given(st.text())
def test_parse_action_never_raises(text):
    parsed = parse_action(text)
    assert parsed is None or isinstance(parsed, (Get, Post, Finish))


@given(st.lists(st.one_of(st.integers(), st.text().filter(lambda t: "```" not in t),
                          st.floats(allow_nan=False))))
def test_finish_round_trips_any_json_list(answer):
    assert parse_action(f"FINISH({json.dumps(answer)})").answer == answer


def test_code_fences_are_removed_anywhere_in_a_turn_as_the_official_harness_does():
    """The turn is cleaned of every ``` (and ```json, ```tool_code) before parsing, inside an
    answer too: the one case the round trip above leaves out."""
    assert parse_action('```\nFINISH(["a```b"])\n```').answer == ["ab"]


def test_reset_shows_the_official_prompt(v1):
    official = {t["id"]: t for t in load_official_tasks(1)}
    env = v1.make_env("task5_1")
    obs, info = env.reset(seed=0)
    assert obs.startswith("You are an expert in using FHIR functions")
    assert f"Context: {official['task5_1']['context']}" in obs
    assert obs.endswith(f"Question: {official['task5_1']['instruction']}")
    assert f"Note that you should use {BASE} as the api_base." in obs
    assert '"name": "GET {api_base}/Condition"' in obs
    assert info == {"won": False, "score": 0.0, "invalid": False, "steps": 0}
    assert env.reset(seed=0)[0] == obs


def test_get_and_post_go_over_http_and_are_graded(v1):
    env = v1.make_env("task3_1")
    env.reset(seed=0)
    mrn = v1.task_def("task3_1").mrn
    result = env.step(f"GET {BASE}Patient?identifier={mrn}")
    assert result.info["http_status"] == 200 and not result.info["invalid"]
    assert result.observation.startswith("Here is the response from the GET request:\n{")
    bundle = json.loads(result.observation.split("\n", 1)[1].rsplit(". Please call", 1)[0])
    assert bundle["entry"][0]["resource"]["id"] == mrn
    rejected = env.step(f'POST {BASE}Observation\n{{"resourceType": "Observation"}}')
    assert rejected.info["invalid"] and rejected.info["http_status"] == 400
    assert "OperationOutcome" in rejected.observation
    accepted = env.step(env.oracle_action())
    assert accepted.observation == POST_ACCEPTED and accepted.info["http_status"] == 201
    done = env.step("FINISH([])")
    assert done.terminated and done.info["won"] and done.reward == 1.0


def test_invalid_actions_change_nothing_and_the_step_limit_truncates(v3):
    suite = MedAgentBenchV3Suite(max_steps=3)
    env = suite.make_env("task4_1")
    env.reset(seed=0)
    first = env.step("let me think")
    assert first.info["invalid"] and not first.terminated and not first.truncated
    outside = env.step("GET http://evil.example/fhir/Patient")
    assert outside.info["invalid"] and "api_base" in outside.observation
    last = env.step(f"GET {BASE}Patient?identifier=x")
    assert last.truncated and not last.terminated and not last.info["won"]
    with pytest.raises(Exception, match="after the episode ended"):
        env.step("FINISH([-1])")
    assert v3.make_env("task4_1").max_steps == 8


def test_snapshot_restore_undoes_a_post(v1):
    env = v1.make_env("task8_2")
    env.reset(seed=1)
    snap = env.snapshot()
    mrn = v1.task_def("task8_2").mrn
    assert env.step(env.oracle_action()).info["http_status"] == 201
    query = f"GET {BASE}ServiceRequest?patient={mrn}"
    assert '"total":1' in env.step(query).observation
    env.restore(snap)
    assert '"total":0' in env.step(query).observation
    env.restore(snap)
    assert env.step(env.oracle_action()).info["http_status"] == 201
    assert env.step("FINISH([])").info["won"]


def test_episodes_of_the_same_task_are_isolated(v1):
    a, b = v1.make_env("task3_2"), v1.make_env("task3_2")
    a.reset(seed=0)
    b.reset(seed=0)
    a.step(a.oracle_action())
    assert not b.step("FINISH([])").info["won"], "a's POST must not count for b"
    assert a.step("FINISH([])").info["won"]


def test_unparseable_finish_ends_the_episode_as_a_failure(v1):
    env = v1.make_env("task1_1")
    env.reset(seed=0)
    result = env.step("FINISH([S6534835])")
    assert result.terminated and not result.info["won"] and "not JSON" in result.info["grade"]


@pytest.mark.parametrize("suite_class", [MedAgentBenchV1Suite, MedAgentBenchV3Suite])
def test_check_env_one_task_per_type(suite_class):
    suite = suite_class()
    for task_type in suite.task_types():
        task = next(t for t in suite.tasks("test") if t.task_type == task_type)
        check_env(suite.make_env(task.id), seed=0, n_steps=10)
