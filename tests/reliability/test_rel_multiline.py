"""Model policies can send a MedAgentBench POST (issue 18, failure 11): a multi-line action
survives every scaffold's parser for a suite that takes multi-line actions."""

import json

import pytest

BODY = json.dumps({"resourceType": "Observation", "status": "final",
                   "code": {"text": "BP"}, "subject": {"reference": "Patient/S6534835"}},
                  indent=1)
ACTION = f"POST http://localhost:8080/fhir/Observation\n{BODY}"
REPLIES = {"think": f"<think>record it</think><action>{ACTION}</action>",
           "react": f"Thought: record it\nAction: {ACTION}",
           "bare": ACTION}


def test_medagentbench_suites_take_multiline_actions():
    from tasks import get_suite

    assert get_suite("medagentbench-v2").multiline_actions is True


@pytest.mark.parametrize("name", sorted(REPLIES))
def test_every_scaffold_keeps_the_post_body(name):
    from harness.policies.scaffold import make_scaffold, scaffold_names

    assert {"think", "react", "bare"} <= {n.split("@")[0] for n in scaffold_names()}
    parsed = make_scaffold(name).parse(REPLIES[name], multiline=True)
    assert parsed.action is not None, parsed
    assert parsed.action.strip() == ACTION
    assert json.loads(parsed.action.split("\n", 1)[1]) == json.loads(BODY)
