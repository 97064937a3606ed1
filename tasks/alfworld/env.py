"""The ALFWorld Env: the official text protocol over one game in the real engine.

Protocol (ALFWorld's ``AlfredTWEnv`` in evaluation mode, ``domain_randomization`` off):

- the first observation is the engine's intro (``-= Welcome to TextWorld, ALFRED! =-``, the
  room, ``Your task is to: ...``); each later observation is the engine's feedback;
- admissible actions are the engine's ``admissible_commands`` (sorted);
- a command is stripped and matched exactly against the admissible commands; anything else
  changes nothing, the engine answers ``Nothing happens.`` and ``info["invalid"]`` is True;
- reward 1.0 on the step that wins (TextWorld's score), else 0; the episode terminates when won
  and is truncated after `MAX_STEPS` steps (ALFWorld's ``max_nb_steps_per_episode``), invalid
  steps included; ``info["score"]`` is 1.0 once won, else 0.0 (ALFWorld's success).

The eval seed changes nothing: a game is deterministic. Capabilities: exact `snapshot`/
`restore`; `oracle_action`, the first command of a shortest plan from the current state (the
bundled planner, replanned, see `tasks.alfworld.planning`); `q_values`, exact for the
discount `GAMMA` ignoring the step limit: ``Q(s, a) = GAMMA ** L(s')`` with ``L(s')`` the
shortest plan length after ``a`` (so 1.0 for a winning command) and 0 when the goal becomes
unreachable; `state_key`, a digest of the engine's facts.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.core import HarnessError
from tasks.base import StepResult

__all__ = ["AlfworldEnv", "GAMMA", "MAX_STEPS", "INSTRUCTIONS", "FALLBACK_ACTION"]

log = logging.getLogger(__name__)

GAMMA = 0.99
MAX_STEPS = 50
"""ALFWorld's evaluation step limit (``max_nb_steps_per_episode: 50``)."""
FALLBACK_ACTION = "look"
"""What the oracle plays when the goal is unreachable (never the case in a fresh game)."""
INSTRUCTIONS = (
    "You are in a household and must complete the task stated in the first observation. "
    "Each turn, answer with exactly one command. Commands: look; inventory; go to "
    "(receptacle); open (receptacle); close (receptacle); take (object) from (receptacle); "
    "move (object) to (receptacle); examine (something); use (object); heat (object) with "
    "(receptacle); clean (object) with (receptacle); cool (object) with (receptacle). Objects "
    "and receptacles are named as the observations name them (e.g. 'apple 1', 'countertop 2'). "
    "A command that does not apply changes nothing and the answer is 'Nothing happens.'."
)


@dataclass(frozen=True)
class _EnvSnapshot:
    engine: Any
    steps: int
    done: bool
    observation: str


class AlfworldEnv:
    """One ALFWorld game behind the Env contract: a ``game.tw-pddl`` path, its JSON content, or
    a zero-argument callable returning either (resolved when the engine is first needed)."""

    def __init__(self, game: str | Path | dict | Callable[[], str | Path | dict], *,
                 max_steps: int = MAX_STEPS):
        self.game = game
        self.max_steps = max_steps
        self._engine = None
        self._steps = 0
        self._done = False
        self._observation = ""

    @property
    def engine(self):
        """The `tasks.alfworld.engine.Engine` (loaded on first use)."""
        if self._engine is None:
            from tasks.alfworld.engine import Engine

            game = self.game() if callable(self.game) else self.game
            self._engine = Engine(game)
        return self._engine

    def _info(self, invalid: bool) -> dict[str, Any]:
        engine = self.engine
        return {"won": engine.won, "score": 1.0 if engine.won else 0.0, "invalid": invalid,
                "admissible_actions": engine.admissible, "steps": self._steps}

    def reset(self, *, seed: int) -> tuple[str, dict[str, Any]]:
        engine = self.engine
        engine.reset()
        self._steps, self._done = 0, False
        self._observation = engine.feedback
        return self._observation, self._info(False)

    def step(self, action: str) -> StepResult:
        if self._done:
            raise HarnessError("step() called after the episode ended; call reset() first")
        engine = self.engine
        if isinstance(action, str):
            valid = engine.step(action)
            observation = engine.feedback
        else:
            valid, observation = False, "Nothing happens."
        self._steps += 1
        terminated = engine.won
        truncated = not terminated and self._steps >= self.max_steps
        self._done = terminated or truncated
        self._observation = observation
        reward = 1.0 if terminated else 0.0
        return StepResult(observation, reward, terminated, truncated, self._info(not valid))

    # -- capabilities --------------------------------------------------------------------------
    def snapshot(self) -> _EnvSnapshot:
        return _EnvSnapshot(self.engine.snapshot(), self._steps, self._done, self._observation)

    def restore(self, snapshot: _EnvSnapshot) -> None:
        self.engine.restore(snapshot.engine)
        self._steps, self._done = snapshot.steps, snapshot.done
        self._observation = snapshot.observation

    def oracle_action(self) -> str:
        """The first command of a shortest plan from the current state."""
        plan = self.engine.plan()
        if not plan:
            log.warning("ALFWorld oracle: no plan from the current state; playing %r",
                        FALLBACK_ACTION)
            return FALLBACK_ACTION
        return plan[0]

    def q_values(self) -> dict[str, float]:
        """Exact Q (discount `GAMMA`, step limit ignored) of every admissible command."""
        lengths = self.engine.successor_plan_lengths()
        return {command: 0.0 if length is None else GAMMA ** length
                for command, length in lengths.items()}

    def state_key(self) -> str:
        return self.engine.state_key()
