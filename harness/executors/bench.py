"""`harness bench ray`: episodes per second of the local executor and of Ray with 1 and 2
worker processes, on the same episodes in the same run, on a suite whose step is costly
(``terminal-lite@2``'s oracle: every command runs in the bubblewrap sandbox), both as one
Ray task per episode and in environment-worker actors (``--env-workers``).

Scaling model. With ``t`` the seconds one episode takes on the local executor (one at a
time) and ``o`` the seconds the Ray path adds per episode (task submission, pickling the
record and its steps, the object store, the driver's bookkeeping; measured on no-op
episodes, whose own cost is microseconds, as ``1/eps(ray, 1 worker) - 1/eps(local)``),
``n`` worker processes give ``eps(n) ~= n / (t + o)`` while the driver keeps up; the
driver (one process, one SQLite writer) caps the total at ``C``, the most no-op episodes/s
measured on the Ray path. A 16-node cluster with ``c`` CPUs per node follows
``min(16 c / (t + o), C)``.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.config import RunConfig
from harness.executors.spec import ExecutorSpec
from harness.store import Store

__all__ = ["RayBench", "bench_ray", "ray_report"]

BENCH_SUITE = "terminal-lite@2"
BENCH_POLICY = "oracle"


@dataclass(frozen=True)
class RayBench:
    suite: str
    policy: str
    episodes: int
    local_eps: float
    ray_eps: dict[int, float]
    """Episodes/s with ``n`` worker processes (Ray CPUs), one Ray task per episode."""
    actor_eps: dict[int, float] = field(default_factory=dict)
    """Episodes/s with ``n`` environment-worker actors (``--env-workers n``)."""
    driver_s: float = 0.0
    """Seconds per episode of the local runner on a no-op episode (frozenlake, ``noop``):
    the driver's bookkeeping and store write."""
    noop_ray_eps: dict[int, float] = field(default_factory=dict)
    """Episodes/s of the same no-op episodes as Ray tasks with ``n`` workers."""

    def overhead_s(self) -> float:
        """Seconds per episode the Ray path adds (no-op episodes, 1 worker, minus the local
        runner's cost of the same episodes): what every episode pays, whatever its suite."""
        return 1 / self.noop_ray_eps[1] - self.driver_s

    def cap_eps(self) -> float:
        """The most episodes/s measured on the Ray path (no-op episodes): the driver's
        bound."""
        return max(self.noop_ray_eps.values())

    def predicted_eps(self, workers: int) -> float:
        """The scaling model's episodes/s for `workers` worker processes."""
        return min(workers / (1 / self.local_eps + self.overhead_s()), self.cap_eps())


def _config(suite: str, policy: str, n_tasks: int, eval_seeds: int, db: str,
            run_id: str) -> RunConfig:
    return RunConfig(policies=(policy,), suites=(suite,), split="test", n_tasks=n_tasks,
                     eval_seeds=tuple(range(eval_seeds)), db=db, run_id=run_id, concurrency=1)


def _timed(play: Callable[[], Any]) -> tuple[float, int]:
    """``(episodes/s, episodes)`` of one run."""
    started = time.perf_counter()
    played = play().played
    return played / (time.perf_counter() - started), played


def _noop(db: str, run_id: str) -> RunConfig:
    """No-op episodes (frozenlake's ``noop`` policy: steps cost microseconds)."""
    return _config("frozenlake@1", "noop", 40, 5, db, run_id)


def bench_ray(suite: str = BENCH_SUITE, policy: str = BENCH_POLICY, n_tasks: int = 8,
              eval_seeds: int = 2, workers: tuple[int, ...] = (1, 2)) -> RayBench:
    """`policy` on ``n_tasks`` test tasks x ``eval_seeds`` of `suite`: the local runner
    (concurrency 1), then per worker count a fresh local Ray instance with that many CPUs,
    timing Ray tasks and then env-worker actors. Each timed run follows a short warm-up run
    (imports, suite caches, the sandbox's rootfs, Ray worker start-up are not timed)."""
    from harness.executors.ray_cluster import import_ray
    from harness.executors.ray_executor import run_on_ray
    from harness.runner import run

    ray = import_ray(ExecutorSpec("ray"))
    with tempfile.TemporaryDirectory() as tmp:
        db = str(Path(tmp) / "bench.db")

        def config(run_id: str, warm: bool = False) -> RunConfig:
            return _config(suite, policy, 2 if warm else n_tasks, 1 if warm else eval_seeds,
                           db, run_id)

        run(config("warm-local", warm=True))
        local, episodes = _timed(lambda: run(config("local")))
        run(_noop(db, "noop-warm"))
        driver = 1 / _timed(lambda: run(_noop(db, "noop-local")))[0]
        rates, actors, noop = {}, {}, {}
        for n in workers:
            ray.init(address="local", _node_ip_address="127.0.0.1", num_cpus=n,
                     include_dashboard=False, log_to_driver=False, configure_logging=False)
            try:
                with Store(db) as store:
                    run_on_ray(_noop(db, f"noop-warm-{n}"), ExecutorSpec("ray"), store=store)
                    noop[n] = _timed(lambda: run_on_ray(_noop(db, f"noop-{n}"),
                                                        ExecutorSpec("ray"), store=store))[0]
                    for label, spec, out in (("task", ExecutorSpec("ray"), rates),
                                             ("actor", ExecutorSpec("ray", env_workers=n),
                                              actors)):
                        run_on_ray(config(f"warm-{label}-{n}", warm=True), spec, store=store)
                        out[n] = _timed(lambda: run_on_ray(config(f"{label}-{n}"), spec,
                                                           store=store))[0]
            finally:
                ray.shutdown()
    return RayBench(suite, policy, episodes, local, rates, actors, driver, noop)


def ray_report(args: Any) -> list[str]:
    """Lines of `harness bench ray`."""
    r = bench_ray(eval_seeds=getattr(args, "eval_seeds", None) or 2)
    lines = [f"{r.suite}, {r.policy} policy, {r.episodes} episodes per executor (each timed "
             "after a warm-up run; local runner at concurrency 1)",
             f"  local executor             : {r.local_eps:7.2f} episodes/s"]
    for n in sorted(r.ray_eps):
        lines.append(f"  ray, {n} worker(s), tasks    : {r.ray_eps[n]:7.2f} episodes/s  "
                     f"(ratio to local {r.ray_eps[n] / r.local_eps:5.2f})")
        if n in r.actor_eps:
            lines.append(f"  ray, {n} env-worker actor(s): {r.actor_eps[n]:7.2f} episodes/s  "
                         f"(ratio to local {r.actor_eps[n] / r.local_eps:5.2f})")
    t, o = 1 / r.local_eps, r.overhead_s()
    noop = ", ".join(f"{n} worker(s) {rate:.0f}" for n, rate in sorted(r.noop_ray_eps.items()))
    lines += [f"  no-op episodes (frozenlake@1, noop): local {1 / r.driver_s:.0f} episodes/s, "
              f"ray {noop} episodes/s",
              f"  per episode: t = {1000 * t:.0f} ms locally, Ray overhead o = {1000 * o:.1f} ms "
              f"(no-op episodes, 1 worker, minus local), driver cap C = {r.cap_eps():.0f} "
              "episodes/s",
              f"  model: eps(n) ~= min(n / (t + o), C); predicted n=2: "
              f"{r.predicted_eps(2):.2f}, a 16-node x 16-CPU cluster (n=256): "
              f"{r.predicted_eps(256):.1f} episodes/s"]
    return lines
