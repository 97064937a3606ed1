"""Held-out evaluation of a policy being trained, stored as ordinary episodes.

The same rollout code, env seeds and scaffold as training play each held-out task (greedy:
one episode; sampled: `samples` episodes, sample index 0..k-1) with the runner's env seeds
(`harness.runner.env_seed`), and the episodes go to the store under the policy id and its
training seed, so the leaderboard, `harness compare` and the audit read them like any other.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from harness.core import derive_seed
from harness.records import EpisodeKey, EpisodeRecord
from harness.runner import balanced_prefix, env_seed
from harness.train.engine import Engine
from harness.train.prompting import BareScaffold, Tokenization
from harness.train.rollout import EpisodeResult, RolloutSpec, collect
from tasks.base import Suite, TaskSpec

__all__ = ["EvalSpec", "eval_tasks", "evaluate", "episode_records", "success_rate"]


@dataclass(frozen=True)
class EvalSpec:
    """What to evaluate: greedy (one episode per task) or sampled (`samples` per task)."""

    greedy: bool
    samples: int = 1
    eval_seed: int = 0
    max_new_tokens: int = 8
    temperature: float = 1.0
    max_steps: int | None = None
    context: str = "step"


def eval_tasks(suite: Suite, split: str, n_tasks: int) -> list[TaskSpec]:
    """The first `n_tasks` of `split`, round-robin across task types (as `harness run`)."""
    return balanced_prefix(suite.tasks(split), n_tasks)


def evaluate(suite: Suite, tasks: Sequence[TaskSpec], spec: EvalSpec, *, engine: Engine,
             tokenization: Tokenization, scaffold: BareScaffold, policy_id: str,
             record_steps: bool = True) -> list[EpisodeResult]:
    """Play every task once (greedy) or `spec.samples` times (sampled)."""
    seeds = [env_seed(suite.id, task.id, spec.eval_seed) for task in tasks]
    rollout = RolloutSpec(context=spec.context, max_new_tokens=spec.max_new_tokens,
                          temperature=spec.temperature, greedy=spec.greedy,
                          max_steps=spec.max_steps, record_steps=record_steps)
    batch = collect(suite, tasks, seeds, group_size=1 if spec.greedy else spec.samples,
                    engine=engine, tokenization=tokenization, scaffold=scaffold, spec=rollout,
                    seed=derive_seed("evaluate", policy_id, spec.eval_seed))
    return batch.episodes


def episode_records(results: Sequence[EpisodeResult], *, policy_id: str, suite_id: str,
                    eval_seed: int, train_seed: int | None,
                    provenance: dict[str, Any]) -> list[tuple[EpisodeRecord, tuple]]:
    """``(EpisodeRecord, steps)`` pairs ready for `Store.write_episodes`."""
    out = []
    for r in results:
        key = EpisodeKey(policy_id, suite_id, r.task.id, eval_seed, r.sample)
        record = EpisodeRecord(
            key=key, task_type=r.task.task_type, split=r.task.split, status="ok",
            success=r.success, score=r.score, total_reward=r.total_reward, n_steps=r.n_steps,
            n_invalid=r.n_invalid, terminated=r.terminated, truncated=r.truncated,
            prompt_tokens=r.prompt_tokens, completion_tokens=r.completion_tokens,
            train_seed=train_seed, final_observation=r.final_observation,
            policy_provenance=dict(provenance))
        out.append((record, r.steps))
    return out


def success_rate(results: Sequence[EpisodeResult]) -> float:
    return sum(r.success for r in results) / max(len(results), 1)
