"""`harness study run|status` as library calls: the plan of train and eval jobs of a study,
its progress read back from the store and the checkpoint folder, and its execution.

Jobs. Every (arm, training seed) is one *train job*: `harness.train.trainer.Trainer` with
``resume=True``, done when the final checkpoint ``<out_dir>/<study>.<arm>/seed-<s>/
step-<updates>`` exists (an arm with ``updates = 0`` only builds its start: SFT or the
source model). Each trained model then has one *eval job* per decoding (greedy, sampled):
the checkpoint played through the runner exactly as ``harness run --policy checkpoint:PATH``
on the study's tasks and evaluation seeds, stored in run ``study-<study>-<arm>-seed<s>`` under
policy id ``<arm>`` (greedy) or ``<arm>/sampled``, with the training seed. Done when every
planned key is stored ``ok``.

Resume. Rerunning the same study skips finished jobs: a killed train job continues from its
latest checkpoint (``checkpoint_every`` in the recipe sets how much an interruption can
lose), a killed eval job plays only the keys not yet stored (the runner's resume), so every
(cell, seed, episode) ends up stored once. Each finished job's wall time and compute
provenance go to table ``study_jobs``.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from harness.config import RunConfig
from harness.core import HarnessError
from harness.runner import provenance, run_async
from harness.store import Store, TableSet, encode_json
from harness.study.config import Arm, StudyConfig
from harness.compute import compute_provenance

__all__ = ["TrainJob", "EvalJob", "plan_study", "study_status", "run_study", "run_id_of",
           "policy_id_of", "STUDY_TABLES", "load_study_jobs"]

STUDY_TABLES = TableSet("study_jobs", ("""
CREATE TABLE IF NOT EXISTS study_jobs (
    study TEXT NOT NULL, arm TEXT NOT NULL, train_seed INTEGER NOT NULL, job TEXT NOT NULL,
    run_id TEXT NOT NULL, wall_s REAL NOT NULL, compute TEXT NOT NULL, finished_at REAL NOT NULL,
    PRIMARY KEY (study, arm, train_seed, job))""",
    "ALTER TABLE study_jobs ADD COLUMN work TEXT;"))
"""Version 1: one row per finished job (``train``, ``greedy``, ``sampled``, ``graft``,
``merge``). Version 2: ``work``, the work of the job's last part, the one ``wall_s`` times
(JSON: ``updates`` and ``sft_steps`` of a training job, ``episodes`` of an evaluation; NULL
in rows written before it, which count the job's whole work)."""

MODES = ("greedy", "sampled")


def run_id_of(study: StudyConfig, arm: str, seed: int) -> str:
    return f"study-{study.name}-{arm}-seed{int(seed)}"


def policy_id_of(arm: str, mode: str) -> str:
    return arm if mode == "greedy" else f"{arm}/sampled"


@dataclass(frozen=True)
class TrainJob:
    arm: Arm
    seed: int

    @property
    def checkpoint(self) -> Path:
        r = self.arm.recipe
        return (Path(r.out_dir) / r.resolved_name() / f"seed-{self.seed}" /
                f"step-{r.updates:06d}")


@dataclass(frozen=True)
class EvalJob:
    arm: Arm
    seed: int
    mode: str
    run_id: str
    expected: int

    @property
    def policy_id(self) -> str:
        return policy_id_of(self.arm.name, self.mode)


def ordered_arms(study: StudyConfig) -> list[Arm]:
    """Baselines first (a partial study can already be analysed), then the rest in order, and
    grafts last (they are built from trained arms)."""
    arms = list(study.arms_resolved())
    bases = {a.baseline for a in arms}
    built = [a for a in arms if a.graft is not None or a.merge is not None]
    first = [a for a in arms if a.name in bases and a not in built]
    return first + [a for a in arms if a not in first and a not in built] + built


def plan_study(study: StudyConfig) -> tuple[list[TrainJob], list[EvalJob]]:
    """Every train job and eval job of the study, in execution order."""
    e = study.eval
    train, evals = [], []
    for arm in ordered_arms(study):
        for seed in arm.seeds:
            train.append(TrainJob(arm, seed))
            for mode in MODES:
                if (mode == "greedy" and not e.greedy) or (mode == "sampled" and not e.samples):
                    continue
                per_key = 1 if mode == "greedy" else e.samples
                evals.append(EvalJob(arm, seed, mode, run_id_of(study, arm.name, seed),
                                     e.n_tasks * len(e.eval_seeds) * per_key))
    return train, evals


def _stored_counts(store: Store, study: StudyConfig) -> dict[tuple[str, str], int]:
    rows = store.query(
        "SELECT run_id, policy_id, COUNT(*) FROM episodes WHERE run_id LIKE ? AND status = 'ok' "
        "GROUP BY run_id, policy_id", (f"study-{study.name}-%",))
    return {(r, p): int(n) for r, p, n in rows}


def _trained_step(job: TrainJob) -> int:
    from harness.train.checkpoint import latest_checkpoint, load_checkpoint_meta

    if job.arm.graft is not None or job.arm.merge is not None:  # built once, not trained
        return job.arm.recipe.updates if job.checkpoint.exists() else -1
    latest = latest_checkpoint(job.checkpoint.parent)
    return int(load_checkpoint_meta(latest)["step"]) if latest is not None else -1


def study_status(study: StudyConfig, store: Store) -> pd.DataFrame:
    """One row per (arm, seed): role, training progress (``step``/``updates``, -1 = not
    started), the recipe's SFT steps and stored/expected episodes per decoding."""
    train, evals = plan_study(study)
    counts = _stored_counts(store, study)
    rows = {(j.arm.name, j.seed): {"arm": j.arm.name, "role": j.arm.role, "seed": j.seed,
                                   "step": _trained_step(j), "updates": j.arm.recipe.updates,
                                   "sft_steps": j.arm.recipe.sft.steps
                                   if j.arm.graft is None and j.arm.merge is None else 0}
            for j in train}
    for j in evals:
        row = rows[(j.arm.name, j.seed)]
        row[f"{j.mode}_stored"] = min(counts.get((j.run_id, j.policy_id), 0), j.expected)
        row[f"{j.mode}_expected"] = j.expected
    return pd.DataFrame(list(rows.values()))


def _record(store: Store, study: StudyConfig, arm: Arm, seed: int, job: str, run_id: str,
            wall_s: float, work: dict[str, int] | None = None) -> None:
    """A finished job: `wall_s` of its last part (a resumed job's, after the interruption),
    which did `work` (None: the job's whole work)."""
    store.tables(STUDY_TABLES).execute(
        "INSERT OR REPLACE INTO study_jobs (study, arm, train_seed, job, run_id, wall_s, "
        "compute, finished_at, work) VALUES (?,?,?,?,?,?,?,?,?)",
        (study.name, arm.name, int(seed), job, run_id, float(wall_s),
         encode_json(compute_provenance(arm.recipe.model.threads)), time.time(),
         None if work is None else encode_json(work)))


def load_study_jobs(store: Store, study: StudyConfig) -> pd.DataFrame:
    """The finished jobs of ``study`` with wall time, compute provenance (JSON text) and the
    work the timed part did (JSON text; None: the whole job)."""
    db = store.tables(STUDY_TABLES)
    columns = ["arm", "train_seed", "job", "run_id", "wall_s", "compute", "finished_at",
               "work"]
    if db is None:
        return pd.DataFrame(columns=columns)
    rows = db.execute(f"SELECT {', '.join(columns)} FROM study_jobs WHERE study = ? "
                      "ORDER BY finished_at", (study.name,)).fetchall()
    return pd.DataFrame(rows, columns=columns)


def _train(job: TrainJob, store: Store, study: StudyConfig, say: Callable[[str], None]) -> None:
    from harness.train.metrics_table import write_train_metrics
    from harness.train.trainer import Trainer

    started = time.perf_counter()
    name = f"{job.arm.name} seed {job.seed}"
    trainer = Trainer(job.arm.recipe, job.seed, resume=True)
    trainer.prepare()
    work = {"updates": job.arm.recipe.updates - trainer.step,
            "sft_steps": len(trainer.sft_history)}  # SFT steps run by this prepare
    if trainer.step:
        say(f"{name}: resuming training at update {trainer.step}")
    metrics_run = f"study-{study.name}-{job.arm.name}"

    def on_update(result: Any) -> None:
        write_train_metrics(store, metrics_run, job.seed, result.step, result.metrics)
        say(f"{name}: update {result.step + 1}/{job.arm.recipe.updates} success "
            f"{result.metrics['success']:.3f}")

    trainer.run(on_update)
    _record(store, study, job.arm, job.seed, "train", metrics_run,
            time.perf_counter() - started, work)


def _graft(job: TrainJob, store: Store, study: StudyConfig, say: Callable[[str], None]) -> None:
    """Build a graft arm's model from its source's and target's checkpoints (same seed; a
    one-model target's only seed)."""
    from harness.study.weights import graft_checkpoint

    assert job.arm.graft is not None
    started = time.perf_counter()
    graft = job.arm.graft
    target = study.arm(graft.target)
    source = TrainJob(study.arm(graft.source), job.seed).checkpoint
    into = TrainJob(target, job.seed if job.seed in target.seeds else target.seeds[0]).checkpoint
    missing = [str(p) for p in (source, into) if not p.exists()]
    if missing:
        raise HarnessError(f"graft {job.arm.name!r} needs {' and '.join(missing)}; run arms "
                           f"{graft.source!r} and {graft.target!r} first")
    say(f"{job.arm.name} seed {job.seed}: grafting {', '.join(graft.groups)} of "
        f"{graft.source} into {graft.target}")
    graft_checkpoint(into, source, graft.groups, job.checkpoint)
    _record(store, study, job.arm, job.seed, "graft", f"study-{study.name}-{job.arm.name}",
            time.perf_counter() - started)


def _merge(job: TrainJob, store: Store, study: StudyConfig, say: Callable[[str], None]) -> None:
    """Build a merge arm's model from its sources' checkpoints of the same seed over its
    base arm's (a one-model base: its only seed)."""
    from harness.merge.methods import MergeParams
    from harness.merge.models import merge_models

    assert job.arm.merge is not None
    started = time.perf_counter()
    merge = job.arm.merge
    base = study.arm(merge.base)
    sources = [TrainJob(study.arm(name), job.seed).checkpoint for name in merge.sources]
    into = TrainJob(base, job.seed if job.seed in base.seeds else base.seeds[0]).checkpoint
    missing = [str(p) for p in (*sources, into) if not p.exists()]
    if missing:
        raise HarnessError(f"merge {job.arm.name!r} needs {', '.join(missing)}; run arms "
                           f"{', '.join(merge.sources)} and {merge.base!r} first")
    say(f"{job.arm.name} seed {job.seed}: merging {', '.join(merge.sources)} with "
        f"{merge.method}")
    params = MergeParams(weights=merge.weights or None, densities=merge.densities or None,
                         epsilon=merge.epsilon)
    merge_models(merge.method, sources, job.checkpoint, base=into, params=params)
    _record(store, study, job.arm, job.seed, "merge", f"study-{study.name}-{job.arm.name}",
            time.perf_counter() - started)


def _identity(study: StudyConfig, arm: Arm, seed: int) -> dict[str, Any]:
    return {"study": study.name, "arm": arm.name, "train_seed": int(seed),
            "recipe": arm.recipe.to_dict(), "eval": asdict(study.eval)}


def _evaluate(job: EvalJob, store: Store, study: StudyConfig, checkpoint: Path,
              stored: int) -> None:
    """Play `job`'s episodes (`stored` of them are in the store already)."""
    from harness.policies.checkpoint import make_checkpoint_policy
    from harness.policies.specs import parse_model_spec
    from harness.train.evaluation import EvalSpec, checkpoint_policy_spec

    started = time.perf_counter()
    r, e = job.arm.recipe, study.eval
    spec = EvalSpec(greedy=job.mode == "greedy", samples=e.samples,
                    max_new_tokens=r.rollout.max_new_tokens, temperature=r.rollout.temperature,
                    max_steps=r.rollout.max_steps, concurrency=e.concurrency,
                    threads=r.model.threads)
    policy_spec = checkpoint_policy_spec(checkpoint, spec)
    policy = make_checkpoint_policy(parse_model_spec(policy_spec), policy_id=job.policy_id,
                                    train_seed=job.seed)
    config = RunConfig(policies=(policy_spec,), suites=(r.suite,), split=e.split,
                       n_tasks=e.n_tasks, eval_seeds=tuple(e.eval_seeds),
                       samples=1 if spec.greedy else e.samples, max_steps=spec.max_steps,
                       concurrency=e.concurrency, db=study.db, run_id=job.run_id,
                       max_error_rate=0.0)
    asyncio.run(run_async(config, store=store, policies=[policy], begin=False))
    _record(store, study, job.arm, job.seed, job.mode, job.run_id, time.perf_counter() - started,
            {"episodes": job.expected - stored})


def run_study(study: StudyConfig, *, on_event: Callable[[str], None] | None = None,
              arms: tuple[str, ...] = ()) -> pd.DataFrame:
    """Run every unfinished job of ``study`` (only ``arms`` when given); returns the status.
    Each model is evaluated right after it is trained."""
    say = on_event or (lambda message: None)
    train, evals = plan_study(study)
    if arms:
        for name in arms:
            study.arm(name)  # an unknown name fails with "did you mean"
        train = [j for j in train if j.arm.name in arms]
    with Store(study.db) as store:
        for job in train:
            counts = _stored_counts(store, study)
            mine = [j for j in evals if (j.arm.name, j.seed) == (job.arm.name, job.seed)]
            pending = [j for j in mine if counts.get((j.run_id, j.policy_id), 0) < j.expected]
            if not pending:
                continue  # every episode of this model is stored
            if not job.checkpoint.exists() and job.arm.graft is not None:
                _graft(job, store, study, say)
            elif not job.checkpoint.exists() and job.arm.merge is not None:
                _merge(job, store, study, say)
            elif not job.checkpoint.exists():
                say(f"{job.arm.name} seed {job.seed}: training "
                    f"({job.arm.recipe.updates} updates)")
                _train(job, store, study, say)
            run_id = run_id_of(study, job.arm.name, job.seed)
            try:
                store.begin_run(run_id, _identity(study, job.arm, job.seed), provenance())
            except HarnessError as error:
                raise HarnessError(f"{error} (the study's recipe or eval plan changed; give the "
                                   "study a new name)") from None
            for j in pending:
                say(f"{j.arm.name} seed {j.seed}: evaluating {j.mode} ({j.expected} episodes)")
                _evaluate(j, store, study, job.checkpoint, counts.get((j.run_id, j.policy_id), 0))
        return study_status(study, store)
