"""Scripted policies: `random`, `noop` and `oracle`. They need no model and run anywhere."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from harness.core import HarnessError, UnknownNameError
from harness.policies.base import Decision, EpisodeContext
from tasks.base import HasOracle


def choose_uniform(actions: Sequence[str], fallback: str, rng: np.random.Generator) -> str:
    """A uniformly random element of `actions` (or `fallback` when there are none); the
    choice `RandomPolicy` makes."""
    if not actions:
        return fallback
    return actions[int(rng.integers(len(actions)))]


class _Scripted:
    train_seed: int | None = None

    def __init__(self, spec: str):
        self.id = spec
        self.provenance: Mapping[str, Any] = {"kind": "scripted", "spec": spec}
        self._decisions: dict[str, Decision] = {}

    def decision(self, action: str) -> Decision:
        """The (immutable) decision to play `action`, made once per distinct action: a
        scripted policy's turn costs a dictionary lookup, not a new object."""
        made = self._decisions.get(action)
        if made is None:
            if len(self._decisions) >= MAX_CACHED_DECISIONS:
                return Decision(action, action)
            made = self._decisions[action] = Decision(action, action)
        return made


MAX_CACHED_DECISIONS = 4096
"""Distinct actions a scripted policy keeps decisions for (suites with open-ended actions,
e.g. an oracle's shell commands, make new ones past it)."""


class RandomPolicy(_Scripted):
    """Uniform over the admissible actions (the first trivial action when there are none)."""

    async def act(self, context: EpisodeContext) -> Decision:
        actions = context.info.get("admissible_actions") or ()
        fallback = next(iter(context.trivial_actions.values()), "") if not actions else ""
        return self.decision(choose_uniform(actions, fallback, context.rng))


class NoopPolicy(_Scripted):
    """Always plays one of the suite's declared trivial actions: ``noop`` takes the first,
    ``noop:NAME`` the one named NAME (e.g. ``noop:empty``)."""

    def __init__(self, spec: str, name: str = ""):
        super().__init__(spec)
        self.name = name

    async def act(self, context: EpisodeContext) -> Decision:
        trivial = context.trivial_actions
        if not trivial:
            raise HarnessError(f"suite {context.suite_id} declares no trivial actions")
        if self.name and self.name not in trivial:
            raise UnknownNameError(f"trivial action of {context.suite_id}", self.name, trivial)
        return self.decision(trivial[self.name] if self.name else next(iter(trivial.values())))


class OraclePolicy(_Scripted):
    """The suite's reference policy (`oracle_action()`: a solver, a planner or a gold path)."""

    async def act(self, context: EpisodeContext) -> Decision:
        if not isinstance(context.env, HasOracle):
            raise HarnessError(f"suite {context.suite_id} has no oracle")
        return self.decision(context.env.oracle_action())
