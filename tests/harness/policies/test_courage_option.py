"""The ``courage=`` option of model policies: validated with the spec, stated in the prompt
with the task's declared abstain action (and only where one is declared), recorded in the
policy id and provenance of a run with the tiny local model, and a refusal family for the
coverage-precision curve."""

from __future__ import annotations

import json

import numpy as np
import pytest

from harness.config import RunConfig
from harness.core import ConfigError
from harness.policies.base import EpisodeContext
from harness.policies.courage import courage_instruction, courage_threshold, with_courage
from harness.policies.specs import parse_model_spec
from harness.records import EpisodeKey
from harness.report.abstention import refusal_families
from harness.runner import run
from harness.store import load_episodes, load_turns
from tasks import get_suite
from tests.harness.policies.llm_support import stored_episodes

SUITE = "medagentbench-v1@1"


def _task(answerable_declared: bool):
    if answerable_declared:
        return next(t for t in get_suite(SUITE).tasks("test") if t.answerability is not None)
    return get_suite("frozenlake@1").tasks("test")[0]


def test_the_option_is_validated_with_the_spec():
    assert parse_model_spec("hf:m?courage=0.25").options.courage == 0.25
    assert parse_model_spec("openai:m@http://127.0.0.1:1/v1?courage=1").options.courage == 1.0
    assert parse_model_spec("hf:m").options.courage is None
    for bad in ("hf:m?courage=1.5", "hf:m?courage=-0.1", "hf:m?courage=often"):
        with pytest.raises(ConfigError, match="courage"):
            parse_model_spec(bad)


def test_the_line_names_the_required_confidence_and_the_abstain_action():
    task = _task(True)
    context = EpisodeContext(SUITE, task, {}, env=None, rng=np.random.default_rng(0),
                             instructions="Rules.")
    changed = with_courage(context, 0.25)
    line = courage_instruction(0.25, task.answerability.abstain_action)
    assert "at least 75% sure" in line and task.answerability.abstain_action in line
    assert changed.instructions == f"Rules.\n\n{line}" and context.instructions == "Rules."
    assert with_courage(context, None) is context
    plain = EpisodeContext("frozenlake@1", _task(False), {}, env=None,
                           rng=np.random.default_rng(0), instructions="Rules.")
    assert with_courage(plain, 0.25) is plain  # no declared abstain action: no line


def test_courage_levels_form_one_refusal_family():
    ids = [f"hf:models/m?temperature=0&courage={c}&threads=1" for c in (0.2, 0.5, 1)]
    assert courage_threshold(ids[0]) == ("hf:models/m?temperature=0&courage=*&threads=1", 0.8)
    assert courage_threshold("hf:models/m?temperature=0") is None
    assert courage_threshold("refuse:0.5") is None
    families = refusal_families(ids + ["oracle", "refuse:0.5"])
    assert families == {"hf:models/m?temperature=0&courage=*&threads=1":
                        {ids[0]: pytest.approx(0.8), ids[1]: 0.5, ids[2]: 0.0}}


def test_a_run_with_the_tiny_model_states_and_records_the_courage(tiny_path, tmp_path):
    db = tmp_path / "r.db"
    task = _task(True)
    spec = f"hf:{tiny_path}?max_tokens=8&threads=1&courage=0.3"
    summary = run(RunConfig(policies=(spec, f"hf:{tiny_path}?max_tokens=8&threads=1"),
                            suites=(SUITE,), task_ids=(task.id,), max_steps=1, db=str(db)))
    frame = load_episodes(db)
    assert sorted(frame.policy) == sorted([spec, f"hf:{tiny_path}?max_tokens=8&threads=1"])
    line = courage_instruction(0.3, task.answerability.abstain_action)
    for row in frame.itertuples():
        turns = load_turns(db, summary.run_id,
                           EpisodeKey(row.policy, row.suite, row.task_id, row.eval_seed, 0))
        assert turns, row.policy
        system = turns[0].messages[0]["content"]
        assert (line in system) == (row.policy == spec), row.policy
        assert "at least 70% sure" in system or row.policy != spec
    provenance = {e["policy_id"]: json.loads(e["policy_provenance"])
                  for e in stored_episodes(db)}
    assert provenance[spec]["courage"] == 0.3
    assert "courage" not in provenance[f"hf:{tiny_path}?max_tokens=8&threads=1"]
