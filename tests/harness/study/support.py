"""Study test helpers: a tiny study file and scripted episodes written straight to the store."""

from __future__ import annotations

import numpy as np

from harness.records import EpisodeKey, EpisodeRecord
from harness.store import Store
from harness.study.config import StudyConfig
from harness.study.run import plan_study

TINY_MODEL = """
[base.model]
hidden = 32
layers = 2
heads = 2
kv_heads = 1
intermediate = 64
chat_template = "compact"
threads = 1
[base.rollout]
tasks_per_update = 2
group_size = 3
max_steps = 3
[base.algorithm]
name = "grpo"
kl_coef = 0.0
"""


def write_study(tmp_path, *, body: str = "", factors: str | None = None,
                eval_section: str | None = None, analysis: str = "") -> str:
    factors = factors if factors is not None else '"optim.lr" = [1e-4, 3e-4]\n' \
                                                  '"algorithm.kl_coef" = [0.0, 0.04]'
    eval_section = eval_section if eval_section is not None else (
        "n_tasks = 6\neval_seeds = [0, 1, 2, 3]\nsamples = 2")
    text = f"""
name = "t"
seeds = [0, 1, 2]
out_dir = "{tmp_path / 'out'}"
db = "{tmp_path / 'h.db'}"
report_dir = "{tmp_path / 'report'}"
{body}
[base]
suite = "frozenlake-random@1"
updates = 2
{TINY_MODEL}
[factors]
{factors}

[[arms]]
name = "start"
seeds = [0]
recipe = {{ updates = 0 }}

[eval]
{eval_section}

[analysis]
baseline = "start"
margin = 0.1
headroom_k = 2
{analysis}
"""
    path = tmp_path / "study.toml"
    path.write_text(text)
    return str(path)


def write_scripted_episodes(study: StudyConfig, rates: dict[str, float],
                            rng: np.random.Generator, *, task_rates=None,
                            arms: tuple[str, ...] | None = None) -> None:
    """Store every planned eval episode of `study` with success drawn from `rates[arm]` (+ a
    per-task offset), common random numbers per (task, eval seed, sample) across arms."""
    _, evals = plan_study(study)
    e = study.eval
    n = e.n_tasks
    offsets = np.zeros(n) if task_rates is None else np.asarray(task_rates)
    shared = rng.random((n, len(e.eval_seeds), max(e.samples, 1)))
    with Store(study.db) as store:
        for job in evals:
            if arms is not None and job.arm.name not in arms:
                continue
            store.begin_run(job.run_id, {"study": study.name, "arm": job.arm.name,
                                         "seed": job.seed}, {})
            seed_shift = rng.normal(0, 0.02)
            batch = []
            per_key = 1 if job.mode == "greedy" else e.samples
            for t in range(n):
                for j, eval_seed in enumerate(e.eval_seeds):
                    for sample in range(per_key):
                        u = shared[t, j, sample] if rng.random() < 0.5 else rng.random()
                        p = rates[job.arm.name] + offsets[t] + seed_shift
                        if job.mode == "sampled":
                            p += 0.05 if job.arm.name == "start" else 0.0
                        success = bool(u < p)
                        key = EpisodeKey(job.policy_id, job.arm.recipe.suite, f"task-{t}",
                                         eval_seed, sample)
                        batch.append((job.run_id, EpisodeRecord(
                            key, "lake", e.split, "ok", success, float(success),
                            float(success), 3, 0, True, False, train_seed=job.seed), ()))
            store.write_episodes(batch)
