"""Scripted policies: `random`, `noop`, `oracle` and `refuse` (the oracle behind a known
refusal rule). They need no model and run anywhere."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from harness.core import ConfigError, HarnessError, UnknownNameError
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


REFUSE = "refuse"
"""The refusal-rule policy's backend name: ``refuse:THRESHOLD`` or ``refuse:THRESHOLD:NAME``."""


def task_confidence(task_id: str) -> float:
    """The refusal rule's draw for a task: the first 8 bytes of blake2b(task id) (digest size
    8) as a big-endian integer over 2**64, uniform on [0, 1) across task ids."""
    digest = hashlib.blake2b(task_id.encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") / 2**64


def refusal_threshold(policy_id: str) -> tuple[str, float] | None:
    """``(family, threshold)`` of a refusal-rule policy id (``refuse:0.25:done`` ->
    ``("refuse:*:done", 0.25)``), None for any other id: the policies of one family differ
    only in their threshold, the points of one coverage-precision curve."""
    name, _, rest = policy_id.partition(":")
    if name != REFUSE:
        return None
    value, _, trivial = rest.partition(":")
    try:
        threshold = float(value)
    except ValueError:
        return None
    return f"{REFUSE}:*" + (f":{trivial}" if trivial else ""), threshold


class RefusePolicy(_Scripted):
    """A scripted agent with a known refusal rule and a threshold that scales abstention:
    ``refuse:THRESHOLD`` (0 <= THRESHOLD <= 1), optionally ``refuse:THRESHOLD:NAME``.

    Its confidence in a task is ``c = task_confidence(task id)`` when the task is answerable
    and ``c / 2`` when it is not (a calibrated agent: less sure where nothing can be done;
    it reads the declared answerability, privileged like the oracle's state). Below the
    threshold it abstains: it plays the task's declared abstain action. Otherwise it answers
    with the suite's oracle, except that where the oracle itself would play the abstain
    action, ``NAME`` (one of the suite's trivial actions, e.g. ``done``) is played instead:
    an overconfident answer. Threshold 0 never refuses; threshold 1 always does.
    """

    def __init__(self, spec: str, argument: str):
        super().__init__(spec)
        value, _, self.trivial = argument.partition(":")
        try:
            self.threshold = float(value)
        except ValueError:
            self.threshold = float("nan")
        if not 0.0 <= self.threshold <= 1.0:
            raise ConfigError(f"policy {spec!r}: the refusal threshold must be a number in "
                              "[0, 1], e.g. refuse:0.25 or refuse:0.25:done")
        self.provenance = {**self.provenance, "refusal_threshold": self.threshold}

    async def act(self, context: EpisodeContext) -> Decision:
        declared = context.task.answerability
        if declared is None:
            raise HarnessError(f"task {context.task.id} of {context.suite_id} declares no "
                               f"answerability; {self.id} needs one")
        confidence = task_confidence(context.task.id) / (1 if declared.answerable else 2)
        if confidence < self.threshold:
            return self.decision(declared.abstain_action)
        if not isinstance(context.env, HasOracle):
            raise HarnessError(f"suite {context.suite_id} has no oracle")
        action = context.env.oracle_action()
        if self.trivial and action.strip() == declared.abstain_action:
            if self.trivial not in context.trivial_actions:
                raise UnknownNameError(f"trivial action of {context.suite_id}", self.trivial,
                                       context.trivial_actions)
            action = context.trivial_actions[self.trivial]
        return self.decision(action)
