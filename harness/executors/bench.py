"""`harness bench ray`: episodes per second of the local executor and of Ray with 1 and 2
worker processes, on the same episodes in the same run, and the per-episode overhead of the
Ray path that a larger cluster's throughput follows:
``episodes/s(n workers) ~= n / (t_episode + overhead)`` while the driver keeps up
(its own cost per stored episode bounds the total at ``1 / driver_s``)."""

from __future__ import annotations

import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.config import RunConfig
from harness.executors.spec import ExecutorSpec
from harness.store import Store

__all__ = ["RayBench", "bench_ray", "ray_report"]


@dataclass(frozen=True)
class RayBench:
    suite: str
    episodes: int
    local_eps: float
    ray_eps: dict[int, float]
    """Episodes/s with ``n`` worker processes (Ray CPUs), timed after the cluster is up."""

    def overhead_s(self) -> float:
        """Seconds per episode the Ray path adds over the local executor (1 worker)."""
        return 1 / self.ray_eps[1] - 1 / self.local_eps


def _config(suite: str, n_tasks: int, eval_seeds: int, db: str, run_id: str) -> RunConfig:
    return RunConfig(policies=("random",), suites=(suite,), split="test", n_tasks=n_tasks,
                     eval_seeds=tuple(range(eval_seeds)), db=db, run_id=run_id, concurrency=1)


def bench_ray(suite: str = "sokoban@1", n_tasks: int = 20, eval_seeds: int = 4,
              workers: tuple[int, ...] = (1, 2)) -> RayBench:
    """Random policy on ``n_tasks`` test tasks x ``eval_seeds`` of ``suite``: the local
    runner (concurrency 1), then a fresh local Ray instance per worker count. Every timed
    run follows a warm-up run of the same episodes (suite caches, imports, Ray worker
    start-up are not timed)."""
    from harness.executors.ray_executor import _import_ray, run_on_ray
    from harness.runner import run

    spec = ExecutorSpec("ray")
    ray = _import_ray(spec)
    with tempfile.TemporaryDirectory() as tmp:
        db = str(Path(tmp) / "bench.db")
        run(_config(suite, n_tasks, eval_seeds, db, "warm-local"))  # suite caches, imports
        started = time.perf_counter()
        summary = run(_config(suite, n_tasks, eval_seeds, db, "local"))
        local = summary.played / (time.perf_counter() - started)
        rates = {}
        for n in workers:
            ray.init(address="local", num_cpus=n, include_dashboard=False,
                     log_to_driver=False, configure_logging=False)
            try:
                with Store(db) as store:
                    run_on_ray(_config(suite, n_tasks, eval_seeds, db, f"warm-{n}"), spec,
                               store=store)
                    started = time.perf_counter()
                    played = run_on_ray(_config(suite, n_tasks, eval_seeds, db, f"ray-{n}"),
                                        spec, store=store).played
                    rates[n] = played / (time.perf_counter() - started)
            finally:
                ray.shutdown()
    return RayBench(suite, summary.played, local, rates)


def ray_report(args: Any) -> list[str]:
    """Lines of `harness bench ray`."""
    result = bench_ray(eval_seeds=getattr(args, "eval_seeds", None) or 4)
    lines = [f"{result.suite}, random policy, {result.episodes} episodes per executor "
             "(each timed after a warm-up run of the same episodes)",
             f"  local executor       : {result.local_eps:8.1f} episodes/s"]
    for n, rate in sorted(result.ray_eps.items()):
        lines.append(f"  ray, {n} worker(s)     : {rate:8.1f} episodes/s  "
                     f"(ratio to local {rate / result.local_eps:5.2f})")
    lines.append(f"  Ray overhead per episode: {1000 * result.overhead_s():.1f} ms; n workers "
                 f"give about n / (t_episode + overhead) episodes/s until the driver saturates")
    return lines
