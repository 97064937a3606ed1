"""The official protocol of the @2 suites: parsing, POSTs acknowledged and not executed, an
invalid turn ends the episode, 8 rounds; the suites, their options and comparability."""

import json

import pytest

from harness.core import UnknownNameError
from tasks import get_suite
from tasks.base import check_env
from tasks.medagentbench.clinical import OFFICIAL_API_BASE
from tasks.medagentbench.env import MedAgentBenchEnv
from tasks.medagentbench.env_official import OfficialProtocolEnv
from tasks.medagentbench.official_protocol import INVALID_POST, classify
from tasks.medagentbench.protocol import POST_ACCEPTED
from tasks.medagentbench.suite_v2 import MedAgentBenchV1Suite2

BASE = OFFICIAL_API_BASE


def test_classify_follows_the_official_harness():
    assert classify(" GET x?a=1 \n").kind == "get" and classify("GET x?a=1").url == "x?a=1"
    assert classify("GETx").kind == "get", "the official harness checks only the prefix"
    post = classify(f"POST {BASE}Observation\n{{\"a\": 1}}")
    assert (post.kind, post.url, post.body_ok) == ("post", f"{BASE}Observation", True)
    assert not classify(f"POST {BASE}Observation\n{{\"a\": ").body_ok
    assert classify("FINISH([1, 2])").result == "[1, 2]"
    assert classify("FINISH([1, 2]").result == "[1, 2", "the last character is cut, whatever"
    assert classify("```tool_code\nFINISH([3])\n```").result == "[3]"
    assert classify("```json\nFINISH([3])\n```").kind == "invalid", "json fences stay"
    assert classify("The answer: FINISH([3])").kind == "invalid"


@pytest.fixture(scope="module")
def suite():
    return get_suite("medagentbench-v1@2")


def task_of(suite, task_type, branch=None):
    return next(t for t in suite.tasks("test") if t.task_type == task_type
                and (branch is None or suite.task_def(t.id).branch == branch))


def test_post_is_acknowledged_and_not_executed(suite):
    task = task_of(suite, "task8")
    env = suite.make_env(task.id)
    mrn = suite.task_def(task.id).mrn
    env.reset(seed=0)
    search = f"GET {BASE}ServiceRequest?patient={mrn}"
    before = env.step(search).observation
    body = {"resourceType": "ServiceRequest", "status": "active", "intent": "order",
            "subject": {"reference": f"Patient/{mrn}"}}
    assert env.step(f"POST {BASE}ServiceRequest\n{json.dumps(body)}").observation == POST_ACCEPTED
    assert env.step(search).observation == before, "nothing reached the server"
    reply = env.step(f"POST {BASE}ServiceRequest\n{{not json")
    assert reply.observation == INVALID_POST and reply.info["invalid"]
    assert not reply.terminated


def test_invalid_turn_ends_the_episode_and_eight_rounds_truncate(suite):
    env = suite.make_env(task_of(suite, "task4").id)
    env.reset(seed=0)
    result = env.step("Let me check the magnesium first.")
    assert result.terminated and result.info["invalid"] and not result.info["won"]
    env.reset(seed=0)
    for k in range(8):
        result = env.step(f"GET {BASE}Patient?_count=1")
        assert result.truncated == (k == 7) and not result.terminated
    assert not result.info["won"]


def test_get_replies_as_the_official_harness(suite):
    env = suite.make_env(task_of(suite, "task2").id)
    env.reset(seed=0)
    ok = env.step(f"GET {BASE}Patient?identifier={env.task.mrn}").observation
    assert ok.startswith("Here is the response from the GET request:\n{")
    assert "_format=json" in ok, "the harness appends &_format=json to the URL"
    missing = env.step(f"GET {BASE}Patient").observation
    assert missing.startswith("Error in sending the GET request: 404 Client Error")
    assert "Patient&_format=json" in missing
    outside = env.step("GET http://example.org/fhir/Patient?x=1")
    assert outside.info["invalid"] and outside.observation.startswith("Error in sending")


def test_oracle_and_env_contract(suite):
    for task_type in ("task5", "task9", "task10"):
        env = suite.make_env(task_of(suite, task_type).id)
        assert isinstance(env, OfficialProtocolEnv)
        check_env(env, seed=1, n_steps=10)
        env.reset(seed=3)
        while True:
            result = env.step(env.oracle_action())
            if result.terminated or result.truncated:
                break
        assert result.info["won"], result.info
        env.close()


def test_suites_options_and_comparability(suite):
    assert suite.id == "medagentbench-v1@2" and suite.protocol == "official"
    assert len(suite.tasks("test")) == 100
    assert len(get_suite("medagentbench-v2@2").tasks("test")) == 300
    c = suite.comparability
    assert (c.tasks, c.grader, c.protocol, c.data) == ("upstream", "upstream", "upstream",
                                                       "generated")
    assert c.generated_records and c.evidence.endswith("test_mab_refsol_fixture.py")
    fhir = get_suite("medagentbench-v1-fhir@2")
    assert fhir.protocol == "fhir" and fhir.comparability.protocol == "rebuilt"
    assert isinstance(fhir.make_env(task_of(fhir, "task8").id), MedAgentBenchEnv)
    assert [t.id for t in fhir.tasks()] == [t.id for t in suite.tasks()]
    with pytest.raises(UnknownNameError):
        MedAgentBenchV1Suite2(protocol="http")
