"""One training run for one training seed: SFT warm start, RL updates, checkpoints, metrics
and held-out evaluation, all derived from ``(config, train_seed, step)``.

Every random choice of an update (its tasks, env seeds, sampling, minibatch order) is derived
from the train seed and the update's step, never from state carried between updates, so a
run resumed from a checkpoint reproduces the next update exactly.

Layout under ``out_dir/<name>/seed-<s>/``: ``sft/`` (the warm-start checkpoint),
``step-<step>/`` (see `harness.train.checkpoint`), ``transitions/update-<step>.jsonl.gz``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.core import UnknownNameError, derive_seed, make_rng
from harness.executors.ray_envs import rollout_suite
from harness.train.advantages import estimate, replace_inputs
from harness.train.checkpoint import (checkpoint_dir_name, is_checkpoint, latest_checkpoint,
                                      load_checkpoint_meta, load_trainer_state, save_checkpoint)
from harness.train.config import TrainConfig
from harness.train.learner import Learner
from harness.train.model import (LoadedModel, build_base, frozen_copy, load_model,
                                 make_value_head, reference_logits_context)
from harness.policies.scaffold import BareScaffold, make_scaffold
from harness.train.prompting import Tokenization
from harness.train.rollout import RolloutBatch, RolloutSpec, collect
from harness.train.samples import base_samples, rollout_metrics, step_values, with_advantages
from harness.train.transitions import save_transitions
from tasks import get_suite

log = logging.getLogger(__name__)

__all__ = ["Trainer", "UpdateResult", "trainer_history", "compaction_options",
           "EPISODE_HISTORY"]

EPISODE_HISTORY = 10_000
"""The scaffold's history window when the context is the whole episode (every step)."""


def trainer_history(config: TrainConfig) -> int:
    """History window of the trainer's ``bare@2`` scaffold: ``rollout.history`` step-wise,
    the whole episode with ``context = "episode"`` (so `harness run` shows every turn)."""
    r = config.rollout
    return r.history if r.context == "step" else EPISODE_HISTORY


def compaction_options(rollout: Any) -> dict[str, Any] | None:
    """The harness options that play a checkpoint with the compaction it was trained with
    (``layers=compaction&...`` of its policy spec); None when it was trained without."""
    if rollout.compact_budget is None:
        return None
    return {"layers": "compaction", "compact_budget": rollout.compact_budget,
            "compact_tokens": rollout.compact_tokens, "compact_prompt": rollout.compact_prompt}


@dataclass(frozen=True)
class UpdateResult:
    step: int
    metrics: dict[str, float]
    batch: RolloutBatch = field(repr=False)


class Trainer:
    """Training of one seed. Call `prepare()` once, then `update(step)` per step (or `run`)."""

    def __init__(self, config: TrainConfig, train_seed: int, *, resume: bool = False,
                 work_dir: str | Path | None = None):
        self.config, self.train_seed, self.resume = config, int(train_seed), resume
        self.name = config.resolved_name()
        root = Path(work_dir) if work_dir is not None else Path(config.out_dir) / self.name
        self.root = root
        self.seed_dir = root / f"seed-{self.train_seed}"
        self.suite = get_suite(config.suite)
        self.scaffold: BareScaffold = make_scaffold(  # type: ignore[assignment]
            "bare@2", history=trainer_history(config), chat_template=config.model.chat_template)
        self.step = 0
        self.init_path: Path | None = None
        self.loaded: LoadedModel | None = None
        self.sft_history: list[dict[str, float]] = []
        self.last_metrics: dict[str, float] = {}
        self.train = self.train_tasks()  # an unknown task type fails here, before any work

    # -- setup ------------------------------------------------------------------------------
    def prepare(self, on_sft_step: Callable[[int, dict], None] | None = None) -> None:
        """Load (or resume) the model, run the SFT warm start if configured, build the
        learner and the rollout engine."""
        c = self.config
        resume_from = latest_checkpoint(self.seed_dir) if self.resume else None
        if resume_from is not None:
            meta = load_checkpoint_meta(resume_from)
            self.init_path, self.step = Path(meta["init"]), int(meta["step"])
            adapter = resume_from / "adapter" if c.model.lora_rank else None
            weights = self.init_path if adapter is not None else resume_from
            self.loaded = load_model(c.model, weights, chat_template=c.model.chat_template,
                                     adapter=adapter)
        else:
            source = build_base(c.model, self.root.parent / "_base", c.model.chat_template)
            self.init_path = source
            if c.sft.steps:
                self.init_path = self._warm_start(source, on_sft_step)
            self.loaded = load_model(c.model, self.init_path, chat_template=c.model.chat_template)
        self.tokenization = Tokenization(self.loaded.tokenizer)
        self.learner = self._make_learner()
        if resume_from is not None:
            self.learner.load_state_dict(load_trainer_state(resume_from))
        self.engine = self._make_engine()
        self.rollout_suite = rollout_suite(self.suite, c.rollout.executor,
                                           c.rollout.env_workers)

    def _warm_start(self, source: Path, on_step: Callable | None) -> Path:
        from harness.episodes import env_seed
        from harness.train.sft import (demonstration_samples, oracle_demonstrations,
                                       sft_train, stored_demonstrations)

        c = self.config
        target = self.seed_dir / "sft"
        if is_checkpoint(target):
            return target
        loaded = load_model(c.model, source, chat_template=c.model.chat_template)
        tasks = self.train[:c.sft.max_tasks]  # a specialist's demonstrations: its task types
        if c.sft.source == "oracle":
            demos = oracle_demonstrations(self.suite, tasks, max_steps=c.rollout.max_steps,
                                          seed_of=lambda t: env_seed(self.suite.id, t.id, 0),
                                          noise=c.sft.noise, rollins=c.sft.rollins,
                                          seed=self.train_seed)
        else:
            demos = stored_demonstrations(
                c.db, c.sft.store_policy, self.suite.id,
                task_ids={t.id for t in tasks} if c.rollout.task_types else None)
        tokenization = Tokenization(loaded.tokenizer)
        samples = demonstration_samples(self.suite.instructions, demos,
                                        tokenization=tokenization, scaffold=self.scaffold,
                                        context=c.rollout.context)

        def after_step(step: int, metrics: dict[str, float]) -> None:
            if step + 1 in c.sft.save_at:
                meta = self._meta(step=0, metrics={**metrics, "sft_step": step + 1},
                                  init=str(source), stage="sft")
                save_checkpoint(self.seed_dir / f"sft-{step + 1:06d}", model=loaded.model,
                                tokenizer=loaded.tokenizer, meta=meta, lora=loaded.lora)
            if on_step:
                on_step(step, metrics)

        self.sft_history = sft_train(loaded.model, samples, c.sft, pad_id=tokenization.pad_id,
                                     seed=derive_seed("sft", self.train_seed),
                                     on_step=after_step)
        meta = self._meta(step=0, metrics=self.sft_history[-1] if self.sft_history else {},
                          init=str(source), stage="sft")
        return save_checkpoint(target, model=loaded.model, tokenizer=loaded.tokenizer, meta=meta,
                               lora=loaded.lora)

    def _make_learner(self) -> Learner:
        c, loaded = self.config, self.loaded
        value_head = make_value_head(loaded.model) if c.algorithm.estimator == "gae" else None
        reference, context = None, None
        if c.algorithm.kl_coef:
            if loaded.lora:
                context = lambda: reference_logits_context(loaded, None)  # noqa: E731
            else:
                frozen = frozen_copy(load_model(c.model, self.init_path,
                                                chat_template=c.model.chat_template).model)
                reference = frozen
                context = lambda: reference_logits_context(loaded, frozen)  # noqa: E731
        budget = c.rollout.max_new_tokens  # Dr. GRPO's constant: the generation budget
        if c.rollout.context == "episode":
            steps = c.rollout.max_steps or self.suite.make_env(
                self.suite.tasks("train")[0].id).max_steps
            budget *= steps
        return Learner(loaded.model, algorithm=c.algorithm, optim=c.optim,
                       total_updates=c.updates, pad_id=self.tokenization.pad_id,
                       temperature=c.rollout.temperature, max_tokens=budget,
                       train_seed=self.train_seed, value_head=value_head, reference=reference,
                       reference_context=context)

    def _make_engine(self) -> Any:
        c = self.config
        if c.rollout.engine == "vllm":
            from harness.train.vllm_engine import VLLMRollout

            return VLLMRollout(self.init_path, eos_id=self.tokenization.eos_id,
                              gpu_memory_utilization=c.rollout.gpu_memory_utilization,
                              model=self.loaded.model)
        from harness.train.engine import HFEngine

        return HFEngine(self.loaded.model, eos_id=self.tokenization.eos_id,
                        pad_id=self.tokenization.pad_id, batch=c.rollout.generation_batch)

    # -- one update -------------------------------------------------------------------------
    def train_tasks(self) -> list:
        """The train split's tasks this recipe samples from (`rollout.task_types`)."""
        train = self.suite.tasks("train")
        wanted = self.config.rollout.task_types
        if not wanted:
            return train
        known = sorted({t.task_type for t in train})
        for name in wanted:
            if name not in known:
                raise UnknownNameError(f"task type of {self.suite.id}'s train split", name,
                                       known)
        return [t for t in train if t.task_type in wanted]

    def _rollout(self, step: int) -> RolloutBatch:
        r = self.config.rollout
        train = self.train
        rng = make_rng(self.train_seed, "tasks", step)
        picks = rng.choice(len(train), size=min(r.tasks_per_update, len(train)), replace=False)
        tasks = [train[int(i)] for i in picks]
        seeds = [derive_seed(self.suite.id, t.id, "train", self.train_seed, step) for t in tasks]
        spec = RolloutSpec(context=r.context, max_new_tokens=r.max_new_tokens,
                           temperature=r.temperature, max_steps=r.max_steps,
                           branches=r.branches, branch_steps=tuple(r.branch_steps),
                           compact_budget=r.compact_budget, compact_tokens=r.compact_tokens,
                           compact_prompt=r.compact_prompt)
        return collect(self.rollout_suite, tasks, seeds, group_size=r.group_size,
                       engine=self.engine,
                       tokenization=self.tokenization, scaffold=self.scaffold, spec=spec,
                       seed=derive_seed("train-rollout", self.train_seed, step), update=step,
                       policy_version=step, policy_id=self.name)

    def _sync_checks(self, batch: RolloutBatch, *, before: bool) -> dict[str, float]:
        """The vLLM engine's agreement with the learner (`rollout.sync_tolerance`)."""
        r = self.config.rollout
        if r.engine != "vllm" or not r.sync_tolerance:
            return {}
        from harness.train.vllm_engine import sync_checks

        return sync_checks(self.engine, self.loaded.model, batch.transitions,
                           temperature=r.temperature, tolerance=r.sync_tolerance, before=before)

    def update(self, step: int | None = None) -> UpdateResult:
        """Roll out, estimate advantages, update the learner; returns the update's metrics."""
        step = self.step if step is None else step
        c = self.config
        started = time.perf_counter()
        batch = self._rollout(step)
        samples = base_samples(batch)
        values = None
        inputs = batch.inputs
        if c.algorithm.estimator == "gae":
            values = self.learner.values(samples)
            inputs = replace_inputs(inputs, value=step_values(batch, values))
        advantages = estimate(c.algorithm.estimator, inputs, **c.algorithm.estimator_params())
        samples = with_advantages(batch, samples, advantages, values)
        metrics = rollout_metrics(batch, advantages)
        metrics.update(self._sync_checks(batch, before=True))
        metrics.update(self.learner.update(samples, step=step))
        self.engine.sync(self.loaded.model)
        metrics.update(self._sync_checks(batch, before=False))
        elapsed = time.perf_counter() - started
        tokens = metrics.get("train_tokens", 0.0) + sum(
            len(t.prompt_ids) + len(t.response_ids) for t in batch.transitions)
        metrics.update(update_s=elapsed, tokens_per_s=tokens / max(elapsed, 1e-9))
        if c.transitions_every and step % c.transitions_every == 0:
            save_transitions(batch.transitions,
                             self.seed_dir / "transitions" / f"update-{step:06d}.jsonl.gz")
        self.step = step + 1
        self.last_metrics = metrics
        if c.checkpoint_every and self.step % c.checkpoint_every == 0:
            self.save()
        return UpdateResult(step, metrics, batch)

    def run(self, on_update: Callable[[UpdateResult], None] | None = None) -> Path:
        """All remaining updates, then a final checkpoint; returns its path."""
        try:
            while self.step < self.config.updates:
                result = self.update()
                if on_update:
                    on_update(result)
            return self.save()
        finally:
            close = getattr(self.engine, "close", None)  # a vLLM worker process
            if close is not None:
                close()

    # -- checkpoints ------------------------------------------------------------------------
    def _meta(self, *, step: int, metrics: dict[str, float], init: str,
              stage: str = "rl") -> dict[str, Any]:
        c = self.config
        return {"policy_id": self.name, "suite": self.suite.id, "train_seed": self.train_seed,
                "step": step, "stage": stage, "algorithm": c.algorithm.name,
                "metrics": metrics, "scaffold": self.scaffold.spec.to_dict(),
                "decoding": {"temperature": c.rollout.temperature,
                             "max_new_tokens": c.rollout.max_new_tokens,
                             "context": c.rollout.context,
                             "compaction": compaction_options(c.rollout)},
                "init": init, "train_config": c.to_dict()}

    def save(self) -> Path:
        """Checkpoint the current step (resumable)."""
        path = self.seed_dir / checkpoint_dir_name(self.step)
        if is_checkpoint(path):
            return path
        meta = self._meta(step=self.step, metrics=self.last_metrics, init=str(self.init_path))
        return save_checkpoint(path, model=self.loaded.model, tokenizer=self.loaded.tokenizer,
                               meta=meta, trainer_state=self.learner.state_dict(),
                               lora=self.loaded.lora)
