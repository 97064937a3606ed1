"""A base class for the small embedded games (frozenlake, sokoban, minesweeper).

It owns what every such game does the same way: seeding, step counting and truncation at
`max_steps`, invalid actions (no state change, ``info["invalid"] = True``), the required info
keys, and exact `snapshot()`/`restore()` of the game state and its RNG. A game supplies its
rules through a handful of hooks.
"""

from __future__ import annotations

import copy
from abc import ABC, abstractmethod
from typing import Any

import numpy as np

from harness.core import HarnessError
from tasks.base import StepResult


class EmbeddedEnv(ABC):
    """Base for text games with exact rules. Subclasses keep all mutable game state in
    `self.state` (deep-copied by `snapshot`) and implement the hooks below."""

    invalid_reward: float = 0.0
    """Reward for a step whose action could not be applied."""

    def __init__(self, max_steps: int):
        self.max_steps = max_steps
        self.state: Any = None
        self._rng = np.random.default_rng(0)
        self._steps = 0
        self._done = False
        self._return = 0.0

    # -- hooks -------------------------------------------------------------------------------
    @abstractmethod
    def new_state(self, rng: np.random.Generator) -> Any:
        """The initial game state for an episode (may use `rng`, e.g. for random starts)."""

    @abstractmethod
    def parse_action(self, text: str) -> Any | None:
        """The move named by `text`, or None when `text` names no legal move now."""

    @abstractmethod
    def apply(self, move: Any, rng: np.random.Generator) -> tuple[float, bool]:
        """Apply a legal `move` to `self.state`; return ``(reward, terminated)``."""

    @abstractmethod
    def render(self) -> str:
        """The text observation of `self.state`."""

    @abstractmethod
    def admissible_actions(self) -> list[str]:
        """Action texts that are legal in the current state."""

    @abstractmethod
    def won(self) -> bool: ...

    def score(self) -> float:
        """The benchmark's native score of the episode so far (default: 1.0 if won)."""
        return float(self.won())

    @abstractmethod
    def state_key(self) -> str: ...

    # -- Env contract ------------------------------------------------------------------------
    def reset(self, *, seed: int) -> tuple[str, dict[str, Any]]:
        self._rng = np.random.default_rng(seed)
        self._steps, self._done, self._return = 0, False, 0.0
        self.state = self.new_state(self._rng)
        return self.render(), self._info(invalid=False)

    def step(self, action: str) -> StepResult:
        if self._done:
            raise HarnessError("step() called after the episode ended; call reset() first")
        move = self.parse_action(action) if isinstance(action, str) else None
        if move is None:
            reward, terminated, invalid = self.invalid_reward, False, True
        else:
            reward, terminated = self.apply(move, self._rng)
            invalid = False
        self._steps += 1
        self._return += reward
        truncated = not terminated and self._steps >= self.max_steps
        self._done = terminated or truncated
        observation = self.render()
        if invalid:
            observation = f"Invalid action: {str(action)[:80]!r}.\n{observation}"
        return StepResult(observation, float(reward), terminated, truncated, self._info(invalid))

    def _info(self, invalid: bool) -> dict[str, Any]:
        return {
            "won": bool(self.won()),
            "score": float(self.score()),
            "invalid": invalid,
            "admissible_actions": self.admissible_actions(),
            "steps": self._steps,
        }

    def snapshot(self) -> tuple:
        return (copy.deepcopy(self.state), self._steps, self._done, self._return,
                copy.deepcopy(self._rng.bit_generator.state))

    def restore(self, snapshot: tuple) -> None:
        state, self._steps, self._done, self._return, rng_state = snapshot
        self.state = copy.deepcopy(state)
        self._rng = np.random.default_rng()
        self._rng.bit_generator.state = copy.deepcopy(rng_state)
