"""The Policy protocol and the values it exchanges with the runner."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import numpy as np

from tasks.base import Env, TaskSpec


LAYERS_INFO_KEY = "layers"
"""The key of a stored step's info under which the policy's harness layers log that turn
(`Decision.layers`)."""


@dataclass(frozen=True)
class Decision:
    """What a policy decided in one turn.

    `action` is the text sent to the env; `raw_output` the model's full output; `logprobs`
    the per-token log-probabilities of the output when the backend gives them (shape
    ``(completion_tokens,)``); `parsed` is False when no action could be read from the output
    (the action then is whatever the scaffold falls back to).
    """

    action: str
    raw_output: str = ""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    logprobs: tuple[float, ...] | None = None
    latency_s: float = 0.0
    parsed: bool = True
    retries: int = 0
    """Request retries (rate limits, server errors, timeouts) this decision needed."""
    messages: Sequence[Mapping[str, str]] | None = None
    """The chat messages sent to the model for this turn (as the scaffold rendered and
    trimmed them); None for a decision without a model turn (scripted policies). The runner
    stores them with `raw_output` as the episode's turns (`harness.records.TurnRecord`)."""
    layers: Mapping[str, Mapping[str, Any]] | None = None
    """Per harness layer of the policy (`harness.policies.layers`), what it did this turn:
    ``{name: {"fired": bool, "tokens": int, "detail": str}}``; None for a policy without
    layers. The runner stores it in the step's info under `LAYERS_INFO_KEY`."""


@dataclass
class EpisodeContext:
    """What a policy sees when it acts. Mutable: the runner updates it in place each turn.

    `history` holds ``(observation, action)`` pairs of earlier turns. `env` is exposed for
    scripted policies that read privileged state (the oracle); model-backed policies must not
    use it. `rng` is this episode's policy RNG (derived from suite, task, eval seed, sample).
    `instructions` is the suite's rules and action format (for prompts);
    `multiline_actions` whether the suite takes actions that span lines (its
    ``multiline_actions`` attribute), which the scaffold's parser honours.
    `step_limit` is the episode's step limit (the env's, or the run's ``max_steps`` when
    lower). `notes` are this turn's notes from the policy's harness layers (a regulation
    warning, a rejected action's reason); scaffolds show them after the observation.
    `layer_state` is the per-episode memory of those layers.
    """

    suite_id: str
    task: TaskSpec
    trivial_actions: Mapping[str, str]
    env: Env
    rng: np.random.Generator
    observation: str = ""
    info: dict[str, Any] = field(default_factory=dict)
    history: list[tuple[str, str]] = field(default_factory=list)
    step: int = 0
    instructions: str = ""
    multiline_actions: bool = False
    step_limit: int | None = None
    notes: tuple[str, ...] = ()
    layer_state: dict[str, Any] = field(default_factory=dict)


@runtime_checkable
class Policy(Protocol):
    """Anything that maps an episode context to a decision."""

    id: str
    train_seed: int | None
    provenance: Mapping[str, Any]

    async def act(self, context: EpisodeContext) -> Decision: ...


def admissible(info: Mapping[str, Any]) -> Sequence[str]:
    return info.get("admissible_actions") or ()
