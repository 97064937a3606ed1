"""The Signal protocol, the evaluation point every signal is scored on, and the small
protocols signals use to reach an environment without importing `tasks` (duck typing)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import numpy as np

__all__ = ["EvaluationPoint", "Signal", "SimEnv", "Simulator", "point_from_dict"]


@dataclass(frozen=True)
class EvaluationPoint:
    """One state with its candidate actions, shared by every signal under comparison.

    `history` holds the ``(observation, action)`` turns before the state; `candidates` the
    actions to be ordered; `metadata` where the point came from and what a signal may use
    besides the state (e.g. ``hindsight``: the rest of the behaviour episode).

    `episode` names the behaviour episode the state was taken from (the cluster of the
    bootstrap: states of one episode are correlated); `step` is the state's index in it;
    `env_seed` the seed its env was reset with, so that ``reset(seed=env_seed)`` followed by
    the history's actions restores the state exactly. `instructions` is the suite's rules
    text (a model-based signal's system prompt).
    """

    suite: str
    task_id: str
    observation: str
    candidates: tuple[str, ...]
    history: tuple[tuple[str, str], ...] = ()
    metadata: Mapping[str, Any] = field(default_factory=dict)
    episode: str = ""
    step: int = 0
    env_seed: int | None = None
    instructions: str = ""

    @property
    def point_id(self) -> str:
        """Unique within a point set: the episode and the step."""
        return f"{self.episode or self.task_id}#{self.step}"

    @property
    def actions(self) -> tuple[str, ...]:
        """The actions that led from the reset to this state."""
        return tuple(action for _, action in self.history)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable dict (`point_from_dict` inverts it)."""
        return {"suite": self.suite, "task_id": self.task_id, "observation": self.observation,
                "candidates": list(self.candidates),
                "history": [list(turn) for turn in self.history],
                "metadata": dict(self.metadata), "episode": self.episode, "step": self.step,
                "env_seed": self.env_seed, "instructions": self.instructions}


def point_from_dict(data: Mapping[str, Any]) -> EvaluationPoint:
    """The point `EvaluationPoint.to_dict` wrote."""
    return EvaluationPoint(
        suite=data["suite"], task_id=data["task_id"], observation=data["observation"],
        candidates=tuple(data["candidates"]),
        history=tuple((str(o), str(a)) for o, a in data.get("history", ())),
        metadata=dict(data.get("metadata", {})), episode=data.get("episode", ""),
        step=int(data.get("step", 0)), env_seed=data.get("env_seed"),
        instructions=data.get("instructions", ""))


@runtime_checkable
class Signal(Protocol):
    """Scores the candidate actions of each point; higher means "better action"."""

    name: str

    def score(self, points: Sequence[EvaluationPoint]) -> list[np.ndarray]:
        """One float array per point, shape ``(len(point.candidates),)``."""
        ...


class SimEnv(Protocol):
    """The part of `tasks.base.Env` (with ``snapshot``/``restore``) that rollouts use.

    ``step`` returns an object with ``observation, reward, terminated, truncated, info``.
    Optional, found with ``getattr``: ``q_values()``, ``oracle_action()``.
    """

    def step(self, action: str) -> Any: ...

    def snapshot(self) -> Any: ...

    def restore(self, snapshot: Any) -> None: ...


@runtime_checkable
class Simulator(Protocol):
    """Puts an environment into the state of a point (built on the harness side, where the
    suites are): ``env_at(point)`` returns ``(env, info)`` with `info` the env's info dict of
    that state (``admissible_actions`` among it). ``reseed(env, seed)`` makes the env's future
    randomness depend on `seed` alone (independent Monte-Carlo rollouts from one snapshot; a
    no-op for deterministic envs)."""

    def env_at(self, point: EvaluationPoint) -> tuple[SimEnv, dict[str, Any]]: ...

    def reseed(self, env: SimEnv, seed: int) -> None: ...
