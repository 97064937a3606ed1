"""`harness train` as a library call: several training seeds of one recipe, metrics per
update and held-out evaluations in the store, before/after comparisons by the stats layer.

Store layout: the evaluation episodes of each training seed form one run, run id
``train-<name>-seed<s>`` (an episode key holds no training seed, so the seeds of one policy
live in separate runs); the per-update metrics of all seeds go to table ``train_metrics``
under the recipe's run id ``train-<name>``, one row per (seed, update);
the evaluation episodes of the trained policy are stored under policy id ``<name>`` (greedy)
and ``<name>/sampled`` (temperature sampling), those of the initial policy under
``<name>@start`` and ``<name>@start/sampled``, each with its ``train_seed``, so the
leaderboard shows one policy with training-seed variance and `harness compare` pairs a
trained policy with its starting point seed by seed.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from harness.core import ConfigError, make_rng
from harness.store import Store
from harness.train.metrics_table import write_train_metrics
from harness.train.config import TrainConfig
from harness.train.checkpoint import is_checkpoint
from harness.train.evaluation import EvalSpec, evaluate_checkpoint
from harness.train.trainer import Trainer, UpdateResult, compaction_options

__all__ = ["SeedSummary", "run_training", "evaluate_trainer", "run_id_of", "metrics_run_id",
           "policy_ids", "start_is_final", "compare_before_after", "headroom_of"]


def metrics_run_id(config: TrainConfig) -> str:
    """The ``train_metrics`` run id of a recipe (all its seeds)."""
    return f"train-{config.resolved_name()}"


def run_id_of(config: TrainConfig, seed: int) -> str:
    """The store run of one training seed."""
    return f"train-{config.resolved_name()}-seed{int(seed)}"


def policy_ids(config: TrainConfig) -> dict[str, str]:
    name = config.resolved_name()
    return {"greedy": name, "sampled": f"{name}/sampled", "start": f"{name}@start",
            "start_sampled": f"{name}@start/sampled"}


def start_is_final(config: TrainConfig) -> bool:
    """A recipe without RL updates (SFT only): its start is its final policy, so it is
    evaluated once, under the final ids (`policy_ids` ``greedy``/``sampled``), with samples
    enough for the headroom, and has no before/after comparison."""
    return config.updates == 0


def _identity(config: TrainConfig) -> dict[str, Any]:
    data = config.to_dict()
    for key in ("seeds", "out_dir", "db", "updates", "checkpoint_every", "transitions_every",
                "eval"):
        data.pop(key)
    return data


@dataclass(frozen=True)
class SeedSummary:
    """What one training seed produced: its final checkpoint, greedy and sampled success
    before and after training on the evaluation tasks, and the run's wall time."""

    train_seed: int
    checkpoint: Path
    updates: int
    start_greedy: float | None
    start_sampled: float | None
    final_greedy: float | None
    final_sampled: float | None
    wall_s: float


def evaluate_trainer(trainer: Trainer, run_id: str, *, policy_id: str, greedy: bool,
                     samples: int, checkpoint: str | Path) -> float:
    """Evaluate `checkpoint` on the configured held-out tasks through the runner, exactly as
    ``harness run --policy checkpoint:PATH`` would (the trainer's scaffold, policy id and
    training seed), store the episodes under `run_id`, and return the success rate."""
    c = trainer.config
    spec = EvalSpec(greedy=greedy, samples=samples, max_new_tokens=c.rollout.max_new_tokens,
                    temperature=c.rollout.temperature, max_steps=c.rollout.max_steps,
                    threads=c.model.threads, compaction=compaction_options(c.rollout))
    _, rate = evaluate_checkpoint(checkpoint, trainer.suite.id, c.eval.split, c.eval.n_tasks,
                                  spec, db=c.db, run_id=run_id, policy_id=policy_id,
                                  train_seed=trainer.train_seed,
                                  scaffold=trainer.scaffold.spec)
    return rate


def _evaluate_both(trainer: Trainer, run_id: str, greedy_id: str, sampled_id: str,
                   checkpoint: str | Path, samples: int) -> tuple[float, float | None]:
    greedy = evaluate_trainer(trainer, run_id, policy_id=greedy_id, greedy=True, samples=1,
                              checkpoint=checkpoint)
    sampled = None
    if samples:
        sampled = evaluate_trainer(trainer, run_id, policy_id=sampled_id, greedy=False,
                                   samples=samples, checkpoint=checkpoint)
    return greedy, sampled


def run_training(config: TrainConfig, seeds: Sequence[int] | None = None, *,
                 resume: bool = False, evaluate_policies: bool = True,
                 on_event: Callable[[str], None] | None = None) -> list[SeedSummary]:
    """Train `config` once per seed (``config.seeds`` when `seeds` is None)."""
    seeds = tuple(config.seeds if seeds is None else seeds)
    if not seeds:
        raise ConfigError("give at least one training seed")
    say = on_event or (lambda message: None)
    ids = policy_ids(config)
    summaries = []
    with Store(config.db) as store:
        for seed in seeds:
            run_id = run_id_of(config, seed)
            try:
                store.begin_run(run_id, {**_identity(config), "train_seed": int(seed)},
                                _provenance())
            except ConfigError:
                raise ConfigError(f"{config.db} already holds training run {run_id!r} with a "
                                  "different recipe; set a new `name` in the config") from None
            summaries.append(_train_one(config, seed, store, run_id, ids, resume,
                                        evaluate_policies, say))
    return summaries


def _train_one(config: TrainConfig, seed: int, store: Store, run_id: str, ids: dict[str, str],
               resume: bool, evaluate_policies: bool, say: Callable[[str], None]) -> SeedSummary:
    started = time.perf_counter()
    trainer = Trainer(config, seed, resume=resume)
    trainer.prepare(on_sft_step=lambda step, m: (step + 1) % 100 == 0 and say(
        f"seed {seed} sft step {step + 1}/{config.sft.steps} loss {m['sft_loss']:.4f}"))
    e = config.eval
    no_updates = start_is_final(config)
    start = (None, None)
    if evaluate_policies and e.at_start and trainer.step == 0 and e.n_tasks and not no_updates:
        samples = max(e.samples, e.headroom_k)
        initial = trainer.init_path if is_checkpoint(trainer.init_path) else trainer.save()
        start = _evaluate_both(trainer, run_id, ids["start"], ids["start_sampled"], initial,
                               samples)
        say(f"seed {seed} start: greedy {start[0]:.3f}" + (
            f", sampled {start[1]:.3f}" if start[1] is not None else ""))

    def on_update(result: UpdateResult) -> None:
        write_train_metrics(store, metrics_run_id(config), seed, result.step, result.metrics)
        m = result.metrics
        say(f"seed {seed} update {result.step + 1}/{config.updates}: success "
            f"{m['success']:.3f} reward {m['mean_reward']:.3f} zero-var "
            f"{m.get('zero_variance_groups', 0.0):.2f} {m['tokens_per_s']:.0f} tok/s")

    checkpoint = trainer.run(on_update)
    final = (None, None)
    if evaluate_policies and e.n_tasks:
        samples = max(e.samples, e.headroom_k) if no_updates else e.samples
        final = _evaluate_both(trainer, run_id, ids["greedy"], ids["sampled"], checkpoint,
                               samples)
        say(f"seed {seed} final: greedy {final[0]:.3f}" + (
            f", sampled {final[1]:.3f}" if final[1] is not None else ""))
    return SeedSummary(seed, checkpoint, trainer.step, start[0], start[1], final[0], final[1],
                       time.perf_counter() - started)


def _provenance() -> dict[str, Any]:
    from harness.runner import provenance

    return provenance()


def compare_before_after(db: str | Path, config: TrainConfig, seeds: Sequence[int], *,
                         sampled: bool = False, rng: np.random.Generator | None = None):
    """The stats layer's paired comparison of the trained policy with its starting point
    (`harness.stats.compare.compare_policies`), paired seed by seed over `seeds`."""
    from harness.stats.compare import compare_policies
    from harness.store import load_episodes

    ids = policy_ids(config)
    a, b = (ids["sampled"], ids["start_sampled"]) if sampled else (ids["greedy"], ids["start"])
    frame = load_episodes(db, run_id=[run_id_of(config, s) for s in seeds], policy=[a, b])
    return compare_policies(frame, a, b, rng=rng or make_rng("compare", a, b))


def headroom_of(db: str | Path, config: TrainConfig, *, k: int, seed: int):
    """The audit's sampling headroom (pass@k - greedy, `harness.audit.learnability.
    headroom_by_type`) of the initial policy of one seed: a table per task type plus an
    ``"all"`` row."""
    from harness.audit.learnability import headroom_by_type
    from harness.store import load_episodes

    ids = policy_ids(config)
    greedy_id, sampled_id = ((ids["greedy"], ids["sampled"]) if start_is_final(config)
                             else (ids["start"], ids["start_sampled"]))
    frame = load_episodes(db, run_id=run_id_of(config, seed), policy=[greedy_id, sampled_id])
    greedy = frame[frame["policy"] == greedy_id]
    return headroom_by_type(frame[frame["policy"] == sampled_id], sampled_id, k, greedy=greedy,
                            greedy_policy=greedy_id)
