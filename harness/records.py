"""The record types every run produces and the store keeps: one step, one model turn, one
episode."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple


class EpisodeKey(NamedTuple):
    """What makes an episode unique within a run (the store's primary key)."""

    policy_id: str
    suite: str
    task_id: str
    eval_seed: int
    sample: int


class StepRecord(NamedTuple):
    """One environment step: what the agent saw, what it did, what came back.

    `observation` is the observation the action was chosen from; `info` is the env's info
    after the step. (A NamedTuple rather than a frozen dataclass: one is built per step.)
    """

    t: int
    observation: str
    action: str
    raw_output: str
    reward: float
    terminated: bool
    truncated: bool
    info: dict[str, Any]


@dataclass(frozen=True)
class TurnRecord:
    """One model turn: the chat messages the policy rendered and sent, and the model's raw
    reply, with the turn's token counts and latency (a policy's `Decision` that carries
    ``messages``; scripted policies have no model turn). `t` is the step the turn chose the
    action of."""

    t: int
    messages: Sequence[Mapping[str, str]]
    raw_output: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0
    parsed: bool = True
    """False when no action could be read from the reply (the scaffold fell back)."""


@dataclass(frozen=True)
class EpisodeRecord:
    """One finished (or failed) episode. `status` is ``ok``, ``error`` or ``timeout``;
    episodes that did not finish ``ok`` never count as successes."""

    key: EpisodeKey
    task_type: str
    split: str
    status: str
    success: bool
    score: float
    total_reward: float
    n_steps: int
    n_invalid: int
    terminated: bool
    truncated: bool
    prompt_tokens: int = 0
    completion_tokens: int = 0
    retries: int = 0
    """Model requests retried (429, 5xx, timeouts, dropped connections) over the episode."""
    model_latency_s: float = 0.0
    """Seconds spent waiting on the policy (model calls), summed over the turns."""
    wall_s: float = 0.0
    train_seed: int | None = None
    error: str | None = None
    final_observation: str = ""
    policy_provenance: dict[str, Any] = field(default_factory=dict)
    turns: tuple[TurnRecord, ...] = field(default=(), repr=False)
    """The episode's model turns, in order (empty for scripted policies); stored in the
    ``turns`` table unless the run skips them (``store_turns = false``). An episode that
    errored keeps the turns it played, so its failure can be read back."""
    answerable: bool | None = None
    """The task's declared answerability (`tasks.base.Answerability`); None where the suite
    declares none (then `abstained` and `correct` are None too)."""
    abstained: bool | None = None
    """The episode declined the task (the env's ``abstained`` on its last step)."""
    correct: bool | None = None
    """The episode answered and was right (answered and won)."""

    @property
    def answered(self) -> bool | None:
        """The episode acted on the task: not abstained (an episode that errored, timed out
        or ran out of steps without abstaining counts as answered, and not correct)."""
        return None if self.abstained is None else not self.abstained
