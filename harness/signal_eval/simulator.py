"""Puts a suite's env into the state of an evaluation point (`signals.base.Simulator`).

A state is restored by ``reset(seed=point.env_seed)`` and replaying the point's history,
checked against the stored observation (a mismatch means the suite is not deterministic or
its version changed, and is an error). The state is then snapshotted, so later requests for
the same point only ``restore``. `extra_steps` raises the env's step limit by that many
steps, so Monte-Carlo rollouts from late states are not cut by the episode's limit (the
exact solvers ignore truncation too).
"""

from __future__ import annotations

import logging
from typing import Any

import numpy as np

from harness.core import HarnessError
from signals.base import EvaluationPoint
from tasks.base import Snapshotable, Suite

log = logging.getLogger(__name__)

__all__ = ["ReplayError", "SuiteSimulator"]


class ReplayError(HarnessError):
    """Replaying a stored history did not reproduce the stored observation."""


class SuiteSimulator:
    """`signals.base.Simulator` over one suite."""

    def __init__(self, suite: Suite, *, extra_steps: int = 0):
        self.suite = suite
        self.extra_steps = extra_steps
        self._envs: dict[str, Any] = {}
        self._states: dict[str, tuple[Any, dict[str, Any]]] = {}
        self._warned = False

    def _env(self, task_id: str) -> Any:
        if task_id not in self._envs:
            env = self.suite.make_env(task_id)
            if not isinstance(env, Snapshotable):
                raise HarnessError(f"{self.suite.id} envs have no snapshot()/restore(); "
                                   "signals need them to restore states")
            env.max_steps += self.extra_steps
            self._envs[task_id] = env
        return self._envs[task_id]

    def env_at(self, point: EvaluationPoint) -> tuple[Any, dict[str, Any]]:
        env = self._env(point.task_id)
        key = point.point_id
        if key in self._states:
            snapshot, info = self._states[key]
            env.restore(snapshot)
            return env, dict(info)
        if point.env_seed is None:
            raise HarnessError(f"point {key} has no env_seed; it cannot be restored")
        observation, info = env.reset(seed=point.env_seed)
        for step, action in enumerate(point.actions):
            result = env.step(action)
            observation, info = result.observation, result.info
            if result.terminated or result.truncated:
                raise ReplayError(f"{key}: the episode ended at step {step} while replaying")
        if observation != point.observation:
            raise ReplayError(f"{key}: replaying the history did not reproduce the stored "
                              f"observation ({self.suite.id} is not deterministic, or changed)")
        self._states[key] = (env.snapshot(), dict(info))
        return env, dict(info)

    def reseed(self, env: Any, seed: int) -> None:
        """Replace the env's dynamics RNG (`tasks.embedded.EmbeddedEnv` keeps it in
        ``_rng``); envs without one are taken as deterministic."""
        if hasattr(env, "_rng"):
            env._rng = np.random.default_rng(seed)
        elif not self._warned:
            self._warned = True
            log.warning("%s envs expose no RNG; Monte-Carlo rollouts assume determinism",
                        self.suite.id)
