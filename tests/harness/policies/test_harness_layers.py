"""Each harness layer on hand-made contexts: repair, contract, regulation, skills."""

import asyncio

import numpy as np
import pytest

from harness.core import ConfigError, UnknownNameError
from harness.policies.base import Decision, EpisodeContext
from harness.policies.layers import (ContractLayer, LayerOptions, RegulationLayer, RepairLayer,
                                     SkillsLayer, check_layer_names, contract_text,
                                     layer_names, repair_action)
from harness.policies.scaffold import INVALID_ACTION
from tasks.base import TaskSpec

MOVES = ["Left", "Down", "Right", "Up"]
ROOMS = ["go to desk 1", "go to desk 10", "take pen 1 from desk 1"]


def _context(info=None, **fields):
    return EpisodeContext(suite_id="frozenlake@1", task=TaskSpec("4x4-0001", "test", "4x4"),
                          trivial_actions={}, env=None, rng=np.random.default_rng(0),
                          observation=fields.pop("observation", "P___"), info=info or {},
                          **fields)


# ---- repair ---------------------------------------------------------------------------------

@pytest.mark.parametrize("action, raw, allowed, expected, how", [
    ("Left", "", MOVES, "Left", ""),                                   # already admissible
    ("left.", "", MOVES, "Left", "normalised"),
    ("  `UP`  ", "", MOVES, "Up", "normalised"),
    ("move Down now", "", MOVES, "Down", "named in the reply"),
    ("Downn", "", MOVES, "Down", "respelt"),
    ("go to desk 10 please", "", ROOMS, "go to desk 10", "named in the reply"),
    (INVALID_ACTION, "<think>go Left</think> I pick Right", MOVES, "Right",
     "named in the reply"),                                            # reasoning is ignored
])
def test_repair_maps_an_action_to_the_admissible_one_it_clearly_means(action, raw, allowed,
                                                                      expected, how):
    assert repair_action(action, raw, allowed) == (expected, how)


@pytest.mark.parametrize("action, raw, reason", [
    ("Left or Right", "", "it names 2 admissible actions"),
    ("Jump", "", "it is not admissible"),
    ("go to desk 3", "", "it is not admissible"),                      # numbers never respelt
    (INVALID_ACTION, "I do not know", "no action could be read"),
])
def test_repair_refuses_what_it_cannot_read_unambiguously(action, raw, reason):
    assert repair_action(action, raw, MOVES + ROOMS[:1]) == (None, reason)


class _Asked:
    """A policy answering re-asks from a list, recording the context of each."""

    def __init__(self, *actions):
        self.actions, self.contexts = list(actions), []

    async def __call__(self, note):
        self.contexts.append(note)
        action = self.actions.pop(0)
        return Decision(action, action, prompt_tokens=10, completion_tokens=2)


def _review(layer, context, decision, ask):
    return asyncio.run(layer.review(context, decision, ask))


def test_repair_fixes_in_place_without_asking_again():
    ask = _Asked()
    review = _review(RepairLayer(LayerOptions()), _context({"admissible_actions": MOVES}),
                     Decision("down!", "down!"), ask)
    assert review.decision.action == "Down" and review.fired and review.tokens == 0
    assert ask.contexts == [] and "'down!' -> 'Down'" in review.detail


def test_repair_rejects_and_asks_again_with_the_reason_counting_the_extra_tokens():
    ask = _Asked("Jump", "Up")
    review = _review(RepairLayer(LayerOptions(repair_retries=2)),
                     _context({"admissible_actions": MOVES}),
                     Decision("Jump", "Jump", prompt_tokens=7, completion_tokens=1), ask)
    assert review.decision.action == "Up" and review.fired and review.tokens == 24
    assert review.decision.prompt_tokens == 27 and review.decision.completion_tokens == 5
    assert len(ask.contexts) == 2 and "'Jump' was rejected" in ask.contexts[0]
    assert "it is not admissible" in ask.contexts[0] and "admissible actions" in ask.contexts[0]


def test_repair_sends_an_action_it_cannot_fix_as_it_is_after_its_retries():
    ask = _Asked("Jump")
    review = _review(RepairLayer(LayerOptions(repair_retries=1)),
                     _context({"admissible_actions": MOVES}), Decision("Fly", "Fly"), ask)
    assert review.decision.action == "Jump" and review.fired and review.tokens == 12
    assert "sent as it is" in review.detail
    untouched = _review(RepairLayer(LayerOptions(repair_retries=0)),
                        _context({"admissible_actions": MOVES}), Decision("Fly", "Fly"), ask)
    assert untouched.decision.action == "Fly" and untouched.tokens == 0


def test_repair_without_an_admissible_list_salvages_unparsed_replies_only():
    layer, ask = RepairLayer(LayerOptions()), _Asked()
    shell = _review(layer, _context(), Decision("ls -la", "ls -la"), ask)
    assert shell.decision.action == "ls -la" and not shell.fired
    salvaged = _review(layer, _context(), Decision(INVALID_ACTION, "Thought: x\nAction: ls"),
                       ask)
    assert salvaged.decision.action == "ls" and salvaged.fired and ask.contexts == []


# ---- contract -------------------------------------------------------------------------------

def test_contract_states_the_actions_constraints_with_the_tool():
    text = contract_text(_context({"admissible_actions": MOVES}, step_limit=7), 200)
    assert "exactly one action per turn (on one line, at most 200 characters)" in text
    assert "Only the admissible actions" in text and "at most 7 steps" in text
    free = contract_text(_context(multiline_actions=True), None)
    assert "it may span several lines)" in free and "admissible" not in free
    assert "steps." not in free.splitlines()[-1]
    guidance = ContractLayer(LayerOptions(), 80).guide(_context(step_limit=3))
    assert guidance.fired and not guidance.note and "at most 80 characters" in \
        guidance.instructions


# ---- regulation -----------------------------------------------------------------------------

def _advance(context, observation, action, invalid=False):
    context.history.append((context.observation, action))
    context.observation, context.info = observation, {"invalid": invalid}
    context.step += 1


def test_regulation_warns_after_repeated_failures_and_resets_on_success():
    layer, context = RegulationLayer(LayerOptions(stall_patience=2, budget_warning=0)), \
        _context(step_limit=50)
    assert not layer.guide(context).fired
    _advance(context, "P___", "Jump", invalid=True)
    assert not layer.guide(context).fired            # one failure is not a pattern
    _advance(context, "P___", "Jump", invalid=True)
    warned = layer.guide(context)
    assert warned.detail == "repeated failures" and "last 2 actions were invalid" in warned.note
    assert layer.guide(context) == warned            # asked twice in a step: counted once
    _advance(context, "_P__", "Right")
    assert not layer.guide(context).fired


def test_regulation_detects_stagnation_and_the_end_of_the_step_budget():
    layer, context = RegulationLayer(LayerOptions(stall_patience=2, budget_warning=2)), \
        _context(step_limit=5)
    layer.guide(context)  # the runner asks once per step; the layer counts as it goes
    _advance(context, "P___", "Left")
    assert not layer.guide(context).fired
    _advance(context, "P___", "Left")
    stalled = layer.guide(context)
    assert stalled.detail == "stagnation" and "other than 'Left'" in stalled.note
    _advance(context, "_P__", "Right")
    ending = layer.guide(context)
    assert ending.detail == "step budget" and "2 steps left of 5" in ending.note
    context.step_limit = None
    assert not RegulationLayer(LayerOptions()).guide(_context()).fired


# ---- skills ---------------------------------------------------------------------------------

def test_skills_are_retrieved_once_per_episode_and_stated_every_turn(tmp_path):
    store = tmp_path / "skills.toml"
    store.write_text('[[skills]]\nname = "lake"\nsuites = ["frozenlake"]\n'
                     'text = "Mind the holes."\n'
                     '[[skills]]\nname = "sokoban"\nsuites = ["sokoban"]\ntext = "No corners."\n')
    layer, context = SkillsLayer(LayerOptions(skills_store=str(store))), _context()
    first = layer.guide(context)
    assert first.fired and first.detail == "lake" and "- Mind the holes." in first.instructions
    context.observation = "something else"
    assert layer.guide(context) == first and context.layer_state["skills"][0].name == "lake"
    assert layer.spec.options["store"] == str(store) and len(layer.spec.options["sha256"]) == 64
    other = _context()
    other.suite_id = "webshop@1"
    assert not layer.guide(other).fired


# ---- registry -------------------------------------------------------------------------------

def test_layer_names_come_back_in_running_order_and_unknown_ones_suggest():
    assert list(layer_names()) == ["compaction", "repair", "contract", "regulation", "skills"]
    assert check_layer_names(["skills", "repair", "skills"]) == ("repair", "skills")
    with pytest.raises(UnknownNameError, match="did you mean 'regulation'"):
        check_layer_names(["regulaton"])


@pytest.mark.parametrize("options, message", [
    (LayerOptions(repair_retries=-1), "repair_retries must be >= 0"),
    (LayerOptions(stall_patience=0), "stall_patience must be >= 1"),
    (LayerOptions(repair_cutoff=0.0), "repair_cutoff must lie in"),
])
def test_out_of_range_options_are_config_errors(options, message):
    with pytest.raises(ConfigError, match=message):
        options.check()
