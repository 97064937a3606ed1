"""Context compaction as a harness layer: the ``compaction`` option of a policy spec, the
summary turn, segments and compaction events in the stored steps, and the must-show: a
scripted policy's environment trajectory is the same with and without compaction."""

import asyncio

import numpy as np
import pytest

from harness.config import make_run_config
from harness.core import UnknownNameError
from harness.policies import make_policy
from harness.policies.base import Decision, EpisodeContext
from harness.policies.compaction import (SUMMARY_PROMPTS, Segments, over_budget, segment_view,
                                         segments_of, summary_request, summary_text)
from harness.policies.layered import LayeredPolicy
from harness.records import EpisodeKey
from harness.runner import run
from harness.store import Store
from tasks.base import TaskSpec

PROMPT = SUMMARY_PROMPTS["summary@1"]


def _context(**fields):
    return EpisodeContext(suite_id="frozenlake@1", task=TaskSpec("4x4-0001", "test", "4x4"),
                          trivial_actions={}, env=None, rng=np.random.default_rng(0),
                          observation="obs", instructions="rules", **fields)


def test_over_budget_needs_a_step_to_summarise():
    assert over_budget(101, 100, 1) and not over_budget(100, 100, 1)
    assert not over_budget(500, 100, 0)  # a fresh segment: nothing to summarise
    assert not over_budget(10**6, None, 5)


def test_segment_view_shows_the_summary_and_the_steps_since_it():
    context = _context(history=[("o0", "a0"), ("o1", "a1"), ("o2", "a2")], step=3)
    assert segment_view(context, Segments(), PROMPT) is context
    view = segment_view(context, Segments(start=2, summary="went right", index=1), PROMPT)
    assert view.history == [("o2", "a2")] and view.observation == "obs"
    assert view.instructions == f"rules\n\n{PROMPT.header}\nwent right"
    assert context.history[0] == ("o0", "a0")  # the runner's history is never cut


def test_the_summary_request_leaves_the_action_stream_alone():
    context = _context()
    expected = np.random.default_rng(0).integers(1000, size=3)
    request = summary_request(context, PROMPT)
    request.rng.integers(1000, size=5)  # the summary turn draws from its own stream
    assert request.observation == f"obs\n\n{PROMPT.request}" and request.notes == ()
    assert list(context.rng.integers(1000, size=3)) == list(expected)


@pytest.mark.parametrize("raw, action, expected", [
    ("<think>hmm</think><action>goal east; two holes</action>", "x",
     "goal east; two holes"),
    ("  went down twice \n", "down", "went down twice"),
    ("", "Right", "Right"),
])
def test_summary_text_drops_reasoning_and_falls_back_to_the_action(raw, action, expected):
    assert summary_text(raw, action) == expected


class _Recorder:
    """A scripted policy that records the contexts it was shown and says what it saw."""

    id, train_seed, provenance = "recorder", None, {}

    def __init__(self):
        self.seen: list[tuple[int, str, str]] = []

    async def act(self, context):
        self.seen.append((len(context.history), context.observation, context.instructions))
        return Decision("Right", f"{len(context.history)} steps seen")


def test_the_layer_summarises_past_the_budget_and_continues_from_the_summary():
    inner = _Recorder()
    options = make_policy("oracle?layers=compaction&compact_budget=10").options
    policy = LayeredPolicy("recorder?layers=compaction", inner, options)
    context = _context()
    logs = []
    for step in range(4):
        decision = asyncio.run(policy.act(context))
        logs.append(decision.layers["compaction"])
        context.history.append((context.observation, decision.action))
        context.step = step + 1
    # chars / 3, rounded up: rules + obs = 8 chars (3 tokens); each step adds obs + Right
    # (8 chars): 3, 6, 8, 11 tokens at steps 0-3, so step 3 passes a budget of 10
    fired = [log["fired"] for log in logs]
    assert fired == [False, False, False, True], logs
    assert [log["segment"] for log in logs] == [0, 0, 0, 1]
    shown, observation, _ = inner.seen[-2]  # the summary turn
    assert observation.endswith(PROMPT.request) and shown == 3
    assert logs[-1]["summary"] == "3 steps seen" and "steps 0-2 summarised" in logs[-1]["detail"]
    shown, observation, instructions = inner.seen[-1]  # the action turn after it
    assert shown == 0 and observation == "obs" and "3 steps seen" in instructions
    assert [log["context_tokens"] for log in logs] == [3, 6, 8, 11]


def test_the_spec_switches_compaction_by_name_and_the_run_stores_it():
    policy = make_policy("random?layers=compaction,repair&compact_budget=300")
    assert isinstance(policy, LayeredPolicy)
    compaction = policy.provenance["layers"][0]
    assert compaction["id"] == "compaction@1"
    assert compaction["options"]["compact_budget"] == 300
    assert compaction["options"]["compact_prompt"]["id"] == "summary@1"
    with pytest.raises(UnknownNameError, match="did you mean 'summary@1'"):
        make_policy("random?layers=compaction&compact_prompt=sumary@1")


@pytest.mark.parametrize("inner", ["oracle", "random"])
def test_compaction_leaves_a_scripted_policys_trajectory_unchanged(tmp_path, inner):
    """Must-show: the same episodes with a budget that forces compaction and without one."""
    compacted = f"{inner}?layers=compaction&compact_budget=40"
    config = make_run_config({"policies": [inner, compacted], "suites": ["frozenlake"],
                              "n_tasks": 6, "max_steps": 12, "db": str(tmp_path / "h.db")})
    summary = run(config)
    with Store(config.db, readonly=True) as store:
        frame = store.load_episodes(run_id=summary.run_id)
        trajectories, events = {}, 0
        for row in frame.itertuples():
            key = EpisodeKey(row.policy, row.suite, row.task_id, row.eval_seed, row.sample)
            steps = store.load_steps(summary.run_id, key)
            trajectories[row.policy, row.task_id] = [
                (s.observation, s.action, s.reward, s.terminated, s.truncated) for s in steps]
            if row.policy == compacted:
                segments = segments_of(steps)
                events += len(segments) - 1
                assert [s.start for s in segments][0] == 0 and segments[-1].stop == len(steps)
                assert all(s.summary for s in segments[1:])
    assert events >= 6, "the budget should force compaction"
    for task in set(frame.task_id):
        assert trajectories[inner, task] == trajectories[compacted, task]
    by_policy = frame.set_index(["policy", "task_id"]).sort_index()
    assert (by_policy.loc[inner].success == by_policy.loc[compacted].success).all()
    print(f"{inner}: {len(set(frame.task_id))} episodes, {events} compaction events, "
          "identical trajectories")
