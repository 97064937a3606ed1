"""`harness bench ...`: performance figures, each next to a baseline measured in the same run."""

from __future__ import annotations

import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.config import RunConfig
from harness.core import ConfigError
from harness.policies.scripted import choose_uniform
from harness.episodes import env_seed, policy_rng
from harness.runner import plan_jobs, run
from harness.policies import make_policy
from tasks import get_suite


@dataclass(frozen=True)
class RunnerBench:
    """Episodes per second of the harness and of a bare loop over the same episodes."""

    episodes: int
    steps: int
    bare_eps: float
    harness_eps: float

    @property
    def ratio(self) -> float:
        return self.harness_eps / self.bare_eps


def _bench_config(n_eval_seeds: int, db: str, run_id: str) -> RunConfig:
    return RunConfig(policies=("random",), suites=("frozenlake@1",), split="test",
                     task_types=("8x8",), eval_seeds=tuple(range(n_eval_seeds)), db=db,
                     run_id=run_id)


def _bare_loop(config: RunConfig) -> tuple[float, int, int]:
    """The same episodes as the harness plays, as a plain reset/step loop: no store, no
    event loop. Returns (seconds, episodes, steps)."""
    policy = make_policy("random")
    suite = get_suite(config.suites[0])
    jobs = list(plan_jobs(config, [policy], [suite]))
    started, steps = time.perf_counter(), 0
    for job in jobs:
        env = suite.make_env(job.task.id)
        _, info = env.reset(seed=env_seed(suite.id, job.task.id, job.eval_seed))
        rng = policy_rng(suite.id, job.task.id, job.eval_seed, job.sample, policy.id)
        done = False
        while not done:
            result = env.step(choose_uniform(info["admissible_actions"], "", rng))
            info, steps = result.info, steps + 1
            done = result.terminated or result.truncated
    return time.perf_counter() - started, len(jobs), steps


RUNNER_REPEATS = 5
"""Runs of each side `harness bench runner` takes the best of (interleaved)."""


def bench_runner(n_eval_seeds: int = 40, repeats: int = RUNNER_REPEATS) -> RunnerBench:
    """Random policy on frozenlake@1 8x8 test tasks x `n_eval_seeds`, through `harness.runner`
    (every episode and step stored in a fresh SQLite file) and through a bare loop.
    Each side runs `repeats` times, interleaved; the best time of each is kept."""
    bare_best = harness_best = float("inf")
    episodes = steps = 0
    with tempfile.TemporaryDirectory() as tmp:
        for repeat in range(repeats):
            db = str(Path(tmp) / f"bench-{repeat}.db")
            config = _bench_config(n_eval_seeds, db, f"bench-{repeat}")
            seconds, episodes, steps = _bare_loop(config)
            bare_best = min(bare_best, seconds)
            started = time.perf_counter()
            summary = run(config)
            harness_best = min(harness_best, time.perf_counter() - started)
            assert summary.played == episodes, "the harness must play every planned episode"
    return RunnerBench(episodes, steps, episodes / bare_best, episodes / harness_best)


def runner_report(args: Any) -> list[str]:
    """Lines of `harness bench runner`."""
    n_eval_seeds = getattr(args, "eval_seeds", None) or 40
    if n_eval_seeds < 1:
        raise ConfigError(f"--eval-seeds must be >= 1, got {n_eval_seeds}")
    result = bench_runner(n_eval_seeds=n_eval_seeds)
    return [f"frozenlake@1 8x8, random policy, {result.episodes} episodes ({result.steps} "
            f"steps), best of {RUNNER_REPEATS} each, interleaved",
            f"  bare reset/step loop : {result.bare_eps:10.1f} episodes/s",
            f"  harness runner+store : {result.harness_eps:10.1f} episodes/s",
            f"  ratio harness/bare   : {result.ratio:10.2f}  (target >= 0.70)"]


def stats_report(args: Any) -> list[str]:
    """Lines of `harness bench stats`: the hierarchical bootstrap (10,000 resamples, 20
    policies x 3 training seeds x 500 tasks x 5 eval seeds) next to `scipy.stats.bootstrap`."""
    import numpy as np

    from harness.stats.benchmark import bench_hierarchical_bootstrap

    result = bench_hierarchical_bootstrap(np.random.default_rng(0))
    return [result.note,
            f"  harness hierarchical bootstrap      : {result.harness_seconds:8.3f} s "
            "(target < 3 s)",
            f"  scipy.stats.bootstrap, per policy   : {result.scipy_seconds:8.3f} s   "
            f"ratio {result.ratio:6.1f}x (target >= 10x)",
            f"  scipy, one call on per-task means   : {result.scipy_reduced_seconds:8.3f} s   "
            f"ratio {result.reduced_ratio:6.1f}x (scipy's best case on reduced data)",
            f"  largest interval-endpoint gap       : {result.max_endpoint_gap:8.4f}"]
