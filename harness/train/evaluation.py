"""Held-out evaluation of a policy being trained: checkpoints played by `harness run`.

The trainer evaluates a checkpoint exactly as ``harness run --policy checkpoint:PATH`` does:
the runner (`harness.runner.run_async`) plays it through the episode core with the
``checkpoint`` policy (the scaffold stored in the checkpoint, the env seeds and policy RNGs of
`harness.episodes`, `select_tasks`'s round-robin task choice), and the episodes go to the
store under the trainer's policy ids and training seed, so the leaderboard, `harness
compare` and the audit read them like any other run. Greedy: one episode per task
(``temperature=0``); sampled: `samples` episodes per task at the rollout temperature.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from harness.config import RunConfig
from harness.episodes import select_tasks
from harness.policies.checkpoint import make_checkpoint_policy
from harness.policies.layered import LayeredPolicy, split_layered_spec
from harness.policies.scaffold import ScaffoldSpec
from harness.policies.specs import BACKEND_OPTIONS, parse_model_spec
from harness.runner import RunSummary, run_async
from harness.store import Store, load_episodes
from tasks.base import Suite, TaskSpec

__all__ = ["EvalSpec", "eval_tasks", "checkpoint_policy_spec", "evaluate_checkpoint"]


@dataclass(frozen=True)
class EvalSpec:
    """What to evaluate: greedy (one episode per task) or sampled (`samples` per task)."""

    greedy: bool
    samples: int = 1
    eval_seed: int = 0
    max_new_tokens: int = 8
    temperature: float = 1.0
    max_steps: int | None = None
    concurrency: int = 256
    """Episodes in flight, also the model's batch size."""
    threads: int = 0
    """torch CPU threads (0: leave torch's setting)."""
    compaction: Mapping[str, Any] | None = None
    """Harness options of context compaction (`harness.train.trainer.compaction_options`):
    the checkpoint plays through the ``compaction`` layer, as it was trained."""


def eval_tasks(suite: Suite, split: str, n_tasks: int) -> list[TaskSpec]:
    """The first `n_tasks` of `split`, round-robin across task types (as `harness run`)."""
    return select_tasks(suite, split, n_tasks=n_tasks)


def checkpoint_policy_spec(path: str | Path, spec: EvalSpec,
                           scaffold: ScaffoldSpec | None = None) -> str:
    """The ``checkpoint:PATH?...`` spec `harness run` evaluates `path` with under `spec`
    (`scaffold` overrides the stored one; a differing one is recorded as a warning)."""
    options: dict[str, Any] = {
        "temperature": 0 if spec.greedy else spec.temperature,
        "max_tokens": spec.max_new_tokens, "max_batch": spec.concurrency,
        "batch_wait_ms": 1}
    if spec.threads:
        options["threads"] = spec.threads
    if scaffold is not None:
        options.update(scaffold=scaffold.id, history=scaffold.history,
                       max_action_chars=scaffold.max_action_chars)
    options.update(spec.compaction or {})
    return f"checkpoint:{path}?{urlencode(options)}"


def evaluate_checkpoint(path: str | Path, suite_id: str, split: str, n_tasks: int,
                        spec: EvalSpec, *, db: str | Path, run_id: str,
                        policy_id: str | None = None, train_seed: int | None = None,
                        scaffold: ScaffoldSpec | None = None, begin: bool = False
                        ) -> tuple[RunSummary, float]:
    """Play the checkpoint at `path` on the first `n_tasks` of `split` through the runner,
    storing the episodes in `db` under `run_id` (recorded already unless `begin`), policy id
    `policy_id` (the spec string when None) and `train_seed` (the checkpoint's when None).
    Returns the run summary and the success rate of the policy's stored episodes."""
    policy_spec = checkpoint_policy_spec(path, spec, scaffold)
    layered = split_layered_spec(policy_spec, BACKEND_OPTIONS)
    policy: Any = make_checkpoint_policy(
        parse_model_spec(layered.inner if layered else policy_spec), policy_id=policy_id,
        train_seed=train_seed)
    if layered is not None:  # context compaction, as the checkpoint was trained
        policy = LayeredPolicy(policy_id or policy_spec, policy, layered.options)
    config = RunConfig(policies=(policy_spec,), suites=(suite_id,), split=split,
                       n_tasks=n_tasks, eval_seeds=(spec.eval_seed,),
                       samples=1 if spec.greedy else spec.samples, max_steps=spec.max_steps,
                       concurrency=spec.concurrency, db=str(db), run_id=run_id,
                       max_error_rate=0.0)
    with Store(db) as store:
        summary = asyncio.run(run_async(config, store=store, policies=[policy], begin=begin))
    frame = load_episodes(db, run_id=run_id, policy=policy.id)
    return summary, float(frame["success"].mean()) if len(frame) else 0.0
