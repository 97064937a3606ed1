"""Scripted policies: one immutable decision per distinct action, up to a bound."""

import asyncio

import numpy as np

import harness.policies.scripted as scripted
from harness.policies import make_policy
from harness.policies.base import Decision, EpisodeContext
from tasks.base import TaskSpec


def _context(actions):
    return EpisodeContext(suite_id="s@1", task=TaskSpec("t", "test", "x"), trivial_actions={},
                          env=None, rng=np.random.default_rng(0),
                          info={"admissible_actions": actions})


def test_random_policy_reuses_its_decision_per_action():
    policy = make_policy("random")
    context = _context(["Left"])
    first, second = (asyncio.run(policy.act(context)) for _ in range(2))
    assert first == Decision("Left", "Left") and first is second


def test_decisions_past_the_bound_are_made_fresh(monkeypatch):
    monkeypatch.setattr(scripted, "MAX_CACHED_DECISIONS", 2)
    policy = make_policy("random")
    made = [asyncio.run(policy.act(_context([f"a{i}"]))) for i in range(4)]
    assert [d.action for d in made] == ["a0", "a1", "a2", "a3"]
    assert len(policy._decisions) == 2
    assert asyncio.run(policy.act(_context(["a3"]))) is not made[3]
