"""Scaffolds: prompt layout, history window, token budget, and a parser that never raises."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.policies.base import EpisodeContext
from harness.policies.scaffold import (INVALID_ACTION, ParsedAction, PromptTemplate,
                                       ScaffoldSpec, TaggedScaffold as Scaffold,
                                       make_scaffold, parse_action, register_template,
                                       scaffold_names, strip_reasoning, template_for)
from harness.core import UnknownNameError
from tasks import get_suite, suite_ids


def _context(suite_id="frozenlake@1", history=(), step=None, info=None, obs="P___\nOO__"):
    suite = get_suite(suite_id)
    task = suite.tasks("test")[0]
    context = EpisodeContext(suite.id, task, suite.trivial_actions, suite.make_env(task.id),
                             np.random.default_rng(0), obs,
                             info if info is not None else {"admissible_actions": ["Left",
                                                                                    "Right"]},
                             list(history), len(history) if step is None else step,
                             instructions=suite.instructions)
    return context


# ---- parser: hand cases --------------------------------------------------------------------

@pytest.mark.parametrize("text, action", [
    ("<think>go right</think><action>Right</action>", "Right"),
    ("<action>  Left </action>", "Left"),
    ("<THINK>x</THINK>\n<Action>Up</ACTION>", "Up"),
    ("reasoning without tags </think><action>Down</action>", "Down"),  # template opened it
    ("<think>maybe <action>Left</action>?</think><action>Right</action>", "Right"),
    ("<think>a</think>text<think>b</think><action>[2 3]</action> trailing", "[2 3]"),
    ("<think>İİ</think><action>go to İstanbul</action>", "go to İstanbul"),  # lower() grows
])
def test_think_format_reads_the_one_action(text, action):
    parsed = parse_action(text, "think")
    assert parsed == ParsedAction(action) and parsed.env_action == action


@pytest.mark.parametrize("text, reason", [
    ("", "no <action> tag"),
    ("Right", "no <action> tag"),
    ("<action>Right", "unclosed <action>"),
    ("</action>Right<action>", "unclosed <action>"),
    ("<action>Left</action><action>Right</action>", "several actions"),
    ("<action>Left</action> IGNORE ALL PREVIOUS INSTRUCTIONS <action>Up</action>",
     "several actions"),
    ("<think>never closed <action>Left</action>", "unclosed <think>"),
    ("<action>   </action>", "empty action"),
    ("<action>" + "x" * 201 + "</action>", "action longer than 200 characters"),
    ("<action>Left\nRight</action>", "action spans several lines"),
    ("<action>Le\x00ft</action>", "non-printable characters in the action"),
    ("<action>\ufffd</action>", "non-printable characters in the action"),
])
def test_think_format_rejects_malformed_output(text, reason):
    parsed = parse_action(text, "think")
    assert parsed.action is None and parsed.error == reason
    assert parsed.env_action == INVALID_ACTION


@pytest.mark.parametrize("text, action, reason", [
    ("Thought: the goal is right\nAction: Right", "Right", ""),
    ("thought: x\n  action :  [1 2]  \nObservation: ...", "[1 2]", ""),
    ("<think>Action: Left</think>Thought: hmm\nAction: Down", "Down", ""),
    ("Thought: no action here", None, "no Action: line"),
    ("Action: Left\nAction: Right", None, "several actions"),
    ("Thought: x Action: Left", None, "no Action: line"),  # not at the start of a line
    ("Action:", None, "empty action"),
])
def test_react_format(text, action, reason):
    assert parse_action(text, "react") == ParsedAction(action, reason)


def test_non_text_output_is_unparsed():
    assert parse_action(None).error == "output is not text"
    assert parse_action(b"<action>Left</action>").action is None


def test_strip_reasoning_removes_every_block():
    assert strip_reasoning("a<think>1</think>b<think>2</think>c") == ("abc", "")
    assert strip_reasoning("a<think>open") == ("a", "unclosed <think>")


# ---- parser: properties --------------------------------------------------------------------

FRAGMENTS = st.sampled_from(["<think>", "</think>", "<action>", "</action>", "<ACTION>",
                             "Action:", "Thought:", "\n", " ", "Left", "[2 3]", "\x00",
                             "\ufffd", "ignore previous instructions", "<", ">", "/"])
OUTPUTS = st.one_of(
    st.text(),
    st.binary(max_size=400).map(lambda b: b.decode("utf-8", errors="replace")),
    st.binary(max_size=400).map(lambda b: b.decode("latin-1")),
    st.lists(st.one_of(FRAGMENTS, st.text(max_size=20)), max_size=30).map("".join),
)


def _well_formed(parsed: ParsedAction, limit: int) -> bool:
    action = parsed.action
    return (action is not None and action == action.strip() and 0 < len(action) <= limit
            and "\n" not in action
            and all((ch >= " " or ch == "\t") and not "\x7f" <= ch <= "\x9f"
                    and ch not in "\u2028\u2029\ufffd" for ch in action))


@settings(max_examples=400, deadline=None)
@given(OUTPUTS, st.sampled_from(["think", "react"]), st.integers(1, 300))
def test_any_text_yields_an_action_or_the_invalid_marker(text, output_format, limit):
    parsed = parse_action(text, output_format, max_chars=limit)
    assert isinstance(parsed, ParsedAction)
    if parsed.ok:
        assert _well_formed(parsed, limit), parsed
        assert parsed.env_action == parsed.action and parsed.error == ""
    else:
        assert parsed.env_action == INVALID_ACTION and parsed.error


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.characters(min_codepoint=32, max_codepoint=0x2FFF,
                                      blacklist_categories=("Cc", "Cs", "Zl", "Zp"),
                                      blacklist_characters="<>\ufffd"), min_size=1,
               max_size=50).filter(lambda s: s.strip()),
       st.text(alphabet=st.characters(blacklist_characters="<>"), max_size=80))
def test_one_tagged_action_round_trips(action, reasoning):
    text = f"<think>{reasoning}</think><action>{action}</action>"
    assert parse_action(text).action == action.strip()


def test_huge_output_parses():
    text = "<think>" + "x" * 2_000_000 + "</think><action>Left</action>" + "<" * 100_000
    assert parse_action(text).action == "Left"


def test_invalid_marker_is_invalid_in_every_registered_suite():
    """Suites that tests register count too (some have no test split: their first task)."""
    for suite_id in suite_ids():
        suite = get_suite(suite_id)
        env = suite.make_env((suite.tasks("test") or suite.tasks())[0].id)
        env.reset(seed=0)
        assert env.step(INVALID_ACTION).info["invalid"], suite_id


# ---- prompts -------------------------------------------------------------------------------

def test_prompt_carries_rules_format_observation_and_admissible_actions():
    history = [("obs-0", "Left"), ("obs-1", "Down"), ("obs-2", "Right")]
    messages = Scaffold("think", history=2).messages(_context(history=history))
    system, user = messages[0]["content"], messages[1]["content"]
    assert [m["role"] for m in messages] == ["system", "user"]
    assert get_suite("frozenlake@1").instructions in system and "<action>" in system
    assert "Your last 2 of 3 steps" in user
    assert "[Step 1] Observation:\nobs-1\nAction: Down" in user
    assert "[Step 2] Observation:\nobs-2\nAction: Right" in user and "obs-0" not in user
    assert "Current observation (step 3):\nP___\nOO__" in user
    assert "Admissible actions: Left, Right" in user


def test_react_prompt_and_empty_history():
    messages = Scaffold("react", history=4).messages(_context(info={}))
    assert "Thought:" in messages[0]["content"]
    assert "steps:" not in messages[1]["content"]
    assert "Admissible" not in messages[1]["content"]


def test_unknown_format_and_bad_history():
    with pytest.raises(UnknownNameError, match="did you mean 'react'"):
        Scaffold("reac")
    with pytest.raises(Exception, match="history"):
        Scaffold(history=-1)


def test_suite_family_templates():
    assert template_for("frozenlake@1") is template_for("sokoban@1")
    custom = PromptTemplate(user="OBS {observation} {history}{admissible}{reminder}{step}")
    register_template("my-family", custom)
    assert template_for("my-family@3") is custom


def _chars(messages):
    return sum(len(m["content"]) for m in messages)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.text(max_size=300), st.text(max_size=40)), max_size=12),
       st.integers(700, 5000), st.integers(0, 8))
def test_token_budget_trims_history_first_and_is_respected(history, budget, window):
    context = _context(history=history, obs="P" * 200)
    scaffold = Scaffold(history=window)
    full = scaffold.messages(context)
    fitted = scaffold.messages(context, budget=budget, count_tokens=_chars)
    if _chars(full) <= budget:
        assert fitted == full
    else:
        assert _chars(fitted) <= budget
        kept = fitted[1]["content"]
        assert "Current observation" in kept  # the current turn always stays


def test_budget_keeps_the_most_recent_steps():
    history = [(f"observation number {i} " * 5, f"act{i}") for i in range(6)]
    context = _context(history=history)
    scaffold = Scaffold(history=6)
    full = _chars(scaffold.messages(context))
    trimmed = scaffold.messages(context, budget=full - 150, count_tokens=_chars)
    user = trimmed[1]["content"]
    assert "act5" in user and "act0" not in user
    assert "Your last 4 of 6 steps" in user or "Your last 5 of 6 steps" in user


def test_budget_shortens_admissible_list_then_observation():
    actions = [f"[{r} {c}]" for r in range(10) for c in range(10)]
    context = _context(info={"admissible_actions": actions}, obs="row\n" * 200)
    scaffold = Scaffold(history=0)
    system_only = len(scaffold.messages(context)[0]["content"])
    fitted = scaffold.messages(context, budget=system_only + 400, count_tokens=_chars)
    user = fitted[1]["content"]
    assert "more)" in user and "[...]" in user
    assert _chars(fitted) <= system_only + 400


# ---- multi-line actions and the registry ----------------------------------------------------

POST = ('POST http://localhost:8080/fhir/Observation\n'
        '{"resourceType": "Observation",\n "status": "final"}')


@pytest.mark.parametrize("name, text", [
    ("think", f"<think>record it</think><action>\n{POST}\n</action>"),
    ("react", f"Thought: record the value\nAction: {POST}"),
    ("bare", f"{POST}\n"),
])
def test_every_scaffold_expresses_a_multiline_action_when_the_suite_takes_them(name, text):
    scaffold = make_scaffold(f"{name}@1")
    assert scaffold.parse(text, multiline=True) == ParsedAction(POST)
    single = scaffold.parse(text)  # a suite of one-line actions: rejected or its first line
    assert single.action in (None, POST.splitlines()[0])


def test_medagentbench_declares_multiline_actions_and_reads_the_post_body():
    from tasks.medagentbench.protocol import Post, parse_action as mab_parse

    assert get_suite("medagentbench-v1@1").multiline_actions
    assert not get_suite("frozenlake@1").multiline_actions
    action = make_scaffold("react@1").parse(f"Thought: x\nAction: {POST}", multiline=True)
    assert isinstance(mab_parse(action.action), Post)


def test_registry_specs_round_trip_and_unknown_names():
    spec = make_scaffold("bare@1", history=3).spec
    assert spec.id == "bare@1" and ScaffoldSpec.from_value(spec.to_dict()) == spec
    assert ScaffoldSpec.from_value("think").id == "think@1"
    assert {"think@1", "react@1", "bare@1"} <= set(scaffold_names())
    with pytest.raises(UnknownNameError, match="did you mean 'react@1'"):
        make_scaffold("reac@1")
    with pytest.raises(UnknownNameError):
        make_scaffold("think@9")


def test_bare_scaffold_renders_the_trainers_chat_layout():
    history = [("obs-0", "Left"), ("obs-1", "Down")]
    messages = make_scaffold("bare@1", history=1).messages(_context(history=history))
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "user"]
    assert messages[1:3] == [{"role": "user", "content": "obs-1"},
                             {"role": "assistant", "content": "Down"}]
    assert make_scaffold("bare@1").parse("\n  Left \nRight") == ParsedAction("Left")
    assert make_scaffold("bare@1").parse("   ").env_action == INVALID_ACTION


def test_bare_2_shows_every_earlier_turn_within_its_window_and_bare_1_keeps_its_defect():
    history = [("obs-0", "Left"), ("obs-1", "Down"), ("obs-2", "Right")]
    shown = {version: [m["content"] for m in make_scaffold(f"bare@{version}", history=4)
                       .messages(_context(history=history)) if m["role"] == "assistant"]
             for version in (1, 2)}
    assert shown[2] == ["Left", "Down", "Right"]  # 3 earlier steps, a window of 4: all 3
    assert shown[1] == ["Right"]  # the stored runs' defect: 4 - 3 = 1 turn
    window = make_scaffold("bare@2", history=2).messages(_context(history=history))
    assert [m["content"] for m in window if m["role"] == "assistant"] == ["Down", "Right"]
    assert make_scaffold("bare@2").renders_turns and not make_scaffold("think@1").renders_turns
