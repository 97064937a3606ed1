"""The episode core below the runner and the trainer: seeds, task selection, the episode
context a scaffold renders, and the one `EpisodeRecord` every episode ends as.

`harness.runner` plays one async episode at a time through it (policies decide); the
trainer's rollouts (`harness.train.rollout`) play lockstep batches through it (an engine
samples token ids). Both reset an env with `env_seed`, build prompts from the same
`EpisodeContext` with a registered scaffold (`harness.policies.scaffold`), parse replies
with that scaffold's parser, count steps with `EpisodeTally` and end with `finish_record`,
so an episode the trainer evaluates and one `harness run` plays are the same episode.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from harness.core import ConfigError, UnknownNameError, derive_seed, make_rng
from harness.policies.base import Decision, EpisodeContext
from harness.records import EpisodeKey, EpisodeRecord, StepRecord, TurnRecord
from tasks.base import Env, Suite, TaskSpec, suite_capability

__all__ = ["env_seed", "policy_rng", "rng_identity", "balanced_prefix", "select_tasks",
           "select_task_ids", "episode_context",
           "multiline_actions", "EpisodeTally", "turn_record", "episode_outcome", "finish_record",
           "failed_record"]


def env_seed(suite_id: str, task_id: str, eval_seed: int) -> int:
    """The seed passed to ``Env.reset``: shared by every sample of a (task, eval seed)."""
    return derive_seed(suite_id, task_id, eval_seed)


def policy_rng(suite_id: str, task_id: str, eval_seed: int, sample: int,
               policy_id: str) -> np.random.Generator:
    """The policy's RNG for one episode: differs across samples and policies. `policy_id`:
    the policy's `rng_identity`."""
    return make_rng(suite_id, task_id, eval_seed, sample, policy_id)


def rng_identity(policy: Any) -> str:
    """What a policy's episode RNG derives from: its ``rng_key`` when it has one (a model
    read from a directory: the id without the path, see `ModelPolicy.rng_key`), else its id."""
    return getattr(policy, "rng_key", None) or policy.id


def balanced_prefix(tasks: Sequence[TaskSpec], n: int) -> list[TaskSpec]:
    """The first `n` tasks taken round-robin across task types (each type in split order),
    so that a small run still covers every task type."""
    by_type: dict[str, list[TaskSpec]] = {}
    for task in tasks:
        by_type.setdefault(task.task_type, []).append(task)
    interleaved = [task for group in itertools.zip_longest(*by_type.values()) for task in group
                   if task is not None]
    return interleaved[:n]


def select_tasks(suite: Suite, split: str, *, task_types: Sequence[str] = (),
                 n_tasks: int | None = None) -> list[TaskSpec]:
    """The tasks a run plays: `split`'s tasks of `task_types` (all when empty), the first
    `n_tasks` round-robin across task types (all when None)."""
    tasks = suite.tasks(split)
    if task_types:
        tasks = [t for t in tasks if t.task_type in task_types]
    return tasks if n_tasks is None else balanced_prefix(tasks, n_tasks)


def select_task_ids(suites: Sequence[Suite], split: str, task_ids: Sequence[str]
                    ) -> list[tuple[Suite, list[TaskSpec]]]:
    """Exactly the tasks `task_ids` names, in its order, each from every one of `suites` whose
    `split` has it: ``(suite, tasks)`` groups, consecutive ids of one suite in one group. An
    id that no suite's `split` has is an `UnknownNameError` (with "did you mean"), or a
    `ConfigError` naming the split that has it."""
    by_suite = {suite.id: {task.id: task for task in suite.tasks(split)} for suite in suites}
    groups: list[tuple[Suite, list[TaskSpec]]] = []
    for task_id in task_ids:
        found = [(suite, by_suite[suite.id][task_id]) for suite in suites
                 if task_id in by_suite[suite.id]]
        if not found:
            raise _unknown_task_id(suites, split, task_id, by_suite)
        for suite, task in found:
            if groups and groups[-1][0] is suite:
                groups[-1][1].append(task)
            else:
                groups.append((suite, [task]))
    return groups


def _unknown_task_id(suites: Sequence[Suite], split: str, task_id: str,
                     by_suite: Mapping[str, Mapping[str, TaskSpec]]) -> Exception:
    for suite in suites:
        elsewhere = [t.split for t in suite.tasks() if t.id == task_id]
        if elsewhere:
            return ConfigError(f"task id {task_id!r} is in the {elsewhere[0]} split of "
                               f"{suite.id}, not the run's {split} split; set split = "
                               f"{elsewhere[0]!r} (--split {elsewhere[0]})")
    known = [known_id for tasks in by_suite.values() for known_id in tasks]
    where = ", ".join(suite.id for suite in suites)
    return UnknownNameError(f"{split} task of {where}", task_id, known)


def multiline_actions(suite: Suite) -> bool:
    """Whether `suite` takes actions that span lines (its ``multiline_actions``)."""
    return bool(suite_capability(suite, "multiline_actions"))


def episode_context(suite: Suite, task: TaskSpec, env: Env, observation: str,
                    info: dict[str, Any], *, eval_seed: int, sample: int,
                    policy_id: str) -> EpisodeContext:
    """The context a policy (or the trainer's scaffold) sees at the start of an episode."""
    return EpisodeContext(suite.id, task, suite.trivial_actions, env,
                          policy_rng(suite.id, task.id, eval_seed, sample, policy_id),
                          observation, info, instructions=getattr(suite, "instructions", ""),
                          multiline_actions=multiline_actions(suite))


@dataclass
class EpisodeTally:
    """Running totals of one episode (mutable; one per episode)."""

    total_reward: float = 0.0
    n_steps: int = 0
    n_invalid: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    retries: int = 0
    model_latency_s: float = 0.0

    def add(self, reward: float, info: Mapping[str, Any], *, prompt_tokens: int = 0,
            completion_tokens: int = 0, retries: int = 0, latency_s: float = 0.0) -> None:
        self.total_reward += reward
        self.n_steps += 1
        self.n_invalid += bool(info.get("invalid", False))
        self.prompt_tokens += prompt_tokens
        self.completion_tokens += completion_tokens
        self.retries += retries
        self.model_latency_s += latency_s


def step_record(t: int, observation: str, action: str, raw_output: str, result: Any,
                truncated: bool) -> StepRecord:
    """The stored step of `result` (an `Env.step` result) taken from `observation`."""
    return StepRecord(t, observation, action, raw_output, result.reward, result.terminated,
                      truncated, result.info)


def turn_record(t: int, decision: Decision) -> TurnRecord:
    """The stored model turn of `decision` (one that carries ``messages``) at step `t`."""
    return TurnRecord(t, decision.messages, decision.raw_output, decision.prompt_tokens,
                      decision.completion_tokens, decision.latency_s, decision.parsed)


def episode_outcome(task: TaskSpec, info: Mapping[str, Any], last_action: str = "", *,
                    finished: bool = True) -> dict[str, bool | None]:
    """``answerable``, ``abstained`` and ``correct`` of an episode of `task` whose last info
    is `info` and last action `last_action` (all None when the task declares no
    answerability). ``abstained``: the env's ``info["abstained"]`` where it gives one, else
    whether `last_action` is the declared abstain action; ``correct``: answered and won. An
    episode that did not finish (`finished` False: error, timeout) neither abstained nor was
    correct."""
    declared = task.answerability
    if declared is None:
        return {"answerable": None, "abstained": None, "correct": None}
    said = info.get("abstained")
    abstained = finished and (bool(said) if said is not None
                              else last_action.strip() == declared.abstain_action)
    return {"answerable": declared.answerable, "abstained": abstained,
            "correct": finished and not abstained and bool(info.get("won", False))}


def finish_record(key: EpisodeKey, task: TaskSpec, tally: EpisodeTally, *,
                  info: Mapping[str, Any], terminated: bool, truncated: bool,
                  final_observation: str, wall_s: float, train_seed: int | None,
                  provenance: Mapping[str, Any],
                  turns: Sequence[TurnRecord] = (), last_action: str = "") -> EpisodeRecord:
    """The record of an episode that finished: success and score from the last info, its
    outcome class from the last info and `last_action` (`episode_outcome`)."""
    return EpisodeRecord(
        key=key, task_type=task.task_type, split=task.split, status="ok",
        success=bool(info.get("won", False)), score=float(info.get("score", 0.0)),
        total_reward=tally.total_reward, n_steps=tally.n_steps, n_invalid=tally.n_invalid,
        terminated=terminated, truncated=truncated, prompt_tokens=tally.prompt_tokens,
        completion_tokens=tally.completion_tokens, retries=tally.retries,
        model_latency_s=tally.model_latency_s, wall_s=wall_s, train_seed=train_seed,
        final_observation=final_observation, policy_provenance=dict(provenance),
        turns=tuple(turns), **episode_outcome(task, info, last_action))


def failed_record(key: EpisodeKey, task: TaskSpec, status: str, error: str, wall_s: float, *,
                  train_seed: int | None, provenance: Mapping[str, Any],
                  turns: Sequence[TurnRecord] = ()) -> EpisodeRecord:
    """The record of an episode that raised (``error``) or ran out of time (``timeout``),
    with the model turns it played before (`turns`)."""
    return EpisodeRecord(
        key=key, task_type=task.task_type, split=task.split, status=status, success=False,
        score=float("nan"), total_reward=0.0, n_steps=0, n_invalid=0, terminated=False,
        truncated=False, wall_s=wall_s, train_seed=train_seed, error=error,
        policy_provenance=dict(provenance), turns=tuple(turns),
        **episode_outcome(task, {}, finished=False))
