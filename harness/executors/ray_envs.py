"""Environment workers on Ray: Envs live in Ray actors, the driver holds proxies.

An `EnvWorker` actor builds its suite from the suite id (``get_suite`` in the worker
process, so only names travel) and holds any number of that suite's Envs by handle; it is
reused across episodes and updates. `RemoteEnv` is the driver-side proxy: it satisfies the
`tasks.base.Env` protocol (and `HasStateKey` / `Snapshotable` exactly when the worker's Env
does), so code written against local Envs, such as the trainer's lockstep rollouts
(`harness.train.rollout.collect`), runs unchanged on it.

`RaySuite` wraps a suite: every attribute is the suite's own except ``make_env``, which
places the new Env on the pool's workers round-robin and returns its proxy, and
``step_all``, which steps many proxies at once (one round trip per worker, all workers in
parallel) so that a lockstep round costs one cluster round trip rather than one per
episode. Results equal the local ones: each Env is reset with the same seed and sees the
same actions; which worker holds it does not matter.

Used by training (``[rollout] executor = "ray"``, `rollout_suite`) and by `harness run
--executor ray` with env workers (`harness.executors.ray_executor`).
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from harness.core import HarnessError
from harness.executors.remote_episode import play_episode
from harness.executors.spec import ExecutorSpec, parse_executor
from tasks import get_suite
from tasks.base import (Closable, HasStateKey, Snapshotable, StepResult, Suite,
                        suite_capability)

__all__ = ["SuiteResources", "suite_resources", "EnvWorker", "EnvWorkerPool", "RemoteEnv",
           "RaySuite", "rollout_suite", "EpisodeWorker", "episode_workers"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class SuiteResources:
    """What one environment worker of a suite reserves on a Ray node: CPUs, memory (bytes,
    0 = no reservation) and whether its Env runs commands in the bubblewrap sandbox (then
    the worker asks for the custom resource ``sandbox``, which nodes that can run it
    declare: ``ray start --resources '{"sandbox": 8}'``)."""

    num_cpus: float = 1.0
    memory: int = 0
    sandbox: bool = False

    def actor_options(self) -> dict[str, Any]:
        options: dict[str, Any] = {"num_cpus": self.num_cpus}
        if self.memory:
            options["memory"] = self.memory
        if self.sandbox:
            options["resources"] = {"sandbox": 1}
        return options


def suite_resources(suite: Suite) -> SuiteResources:
    """The suite's declared ``resources`` (a `SuiteResources`, or a mapping of its fields);
    one CPU, no memory reservation and no sandbox when it declares none."""
    declared = suite_capability(suite, "resources")
    if declared is None:
        return SuiteResources()
    if isinstance(declared, SuiteResources):
        return declared
    if isinstance(declared, dict):
        return SuiteResources(**declared)
    raise HarnessError(f"{suite.id}.resources must be a SuiteResources or a dict, "
                       f"got {type(declared).__name__}")


class EnvWorker:
    """One suite's Envs in one process (a Ray actor: ``ray.remote(EnvWorker)``)."""

    def __init__(self, suite_id: str):
        self.suite = get_suite(suite_id)
        self.envs: dict[int, Any] = {}

    def _key(self, handle: int) -> str | None:
        env = self.envs[handle]
        return env.state_key() if isinstance(env, HasStateKey) else None

    def make(self, handle: int, task_id: str) -> dict[str, Any]:
        """Build an Env of `task_id` under `handle`; returns its capabilities."""
        env = self.envs[handle] = self.suite.make_env(task_id)
        return {"max_steps": env.max_steps, "state_key": isinstance(env, HasStateKey),
                "snapshot": isinstance(env, Snapshotable)}

    def reset(self, handle: int, seed: int) -> tuple[str, dict[str, Any], str | None]:
        obs, info = self.envs[handle].reset(seed=seed)
        return obs, info, self._key(handle)

    def step_many(self, items: Sequence[tuple[int, str]]
                  ) -> list[tuple[StepResult, str | None]]:
        """Step each ``(handle, action)``; each result with the Env's new state key."""
        out = []
        for handle, action in items:
            result = self.envs[handle].step(action)
            out.append((result, self._key(handle)))
        return out

    def snapshot(self, handle: int) -> Any:
        return self.envs[handle].snapshot()

    def restore(self, handle: int, snapshot: Any) -> str | None:
        self.envs[handle].restore(snapshot)
        return self._key(handle)

    def close(self, handles: Sequence[int]) -> None:
        for handle in handles:
            env = self.envs.pop(handle, None)
            if isinstance(env, Closable):
                env.close()

    def node(self) -> str:
        import ray

        return ray.get_runtime_context().get_node_id()


class EnvWorkerPool:
    """`n` `EnvWorker` actors of one suite, each reserving the suite's `SuiteResources`."""

    def __init__(self, ray: Any, suite: Suite, n: int):
        if n < 1:
            raise HarnessError(f"an env worker pool needs at least one worker, got {n}")
        self.ray, self.suite_id = ray, suite.id
        options = suite_resources(suite).actor_options()
        actor = ray.remote(EnvWorker).options(**options, max_restarts=0)
        self.workers = [actor.remote(suite.id) for _ in range(n)]
        self._next = itertools.cycle(range(n))
        self._handles = itertools.count()
        self.closed: dict[int, list[int]] = {}

    def place(self) -> tuple[int, int]:
        """``(worker index, new handle)`` for the next Env (round-robin)."""
        return next(self._next), next(self._handles)

    def release(self, worker: int, handle: int) -> None:
        """Mark an Env dropped; closed in batches on the next `flush_closed`."""
        self.closed.setdefault(worker, []).append(handle)

    def close(self) -> None:
        """End the worker actors (their Envs with them) and free their reservations."""
        for worker in self.workers:
            self.ray.kill(worker)
        self.workers, self.closed = [], {}

    def flush_closed(self) -> None:
        for worker, handles in self.closed.items():
            self.workers[worker].close.remote(handles)
        self.closed = {}


class RemoteEnv:
    """Driver-side proxy of one Env in an `EnvWorker` (base: ``reset``/``step``)."""

    def __init__(self, pool: EnvWorkerPool, worker: int, handle: int, max_steps: int):
        self.pool, self.worker, self.handle, self.max_steps = pool, worker, handle, max_steps
        self._key: str | None = None
        self._ready: tuple[str, StepResult, str | None] | None = None
        """A step `RaySuite.step_all` took: (action, result, new state key)."""

    @property
    def actor(self) -> Any:
        return self.pool.workers[self.worker]

    def reset(self, *, seed: int) -> tuple[str, dict[str, Any]]:
        obs, info, self._key = self.pool.ray.get(self.actor.reset.remote(self.handle, seed))
        self._ready = None
        return obs, info

    def step(self, action: str) -> StepResult:
        if self._ready is not None:  # already stepped by `RaySuite.step_all`
            (expected, result, key), self._ready = self._ready, None
            if expected != action:
                raise HarnessError(f"env stepped with {expected!r}, then asked for {action!r}")
            self._key = key
            return result
        result, self._key = self.pool.ray.get(
            self.actor.step_many.remote([(self.handle, action)]))[0]
        return result

    def __del__(self) -> None:
        try:
            self.pool.release(self.worker, self.handle)
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass


class _KeyedRemoteEnv(RemoteEnv):
    def state_key(self) -> str:
        return self._key  # type: ignore[return-value]


class _SnapshotRemoteEnv(RemoteEnv):
    def snapshot(self) -> Any:
        return self.pool.ray.get(self.actor.snapshot.remote(self.handle))

    def restore(self, snapshot: Any) -> None:
        self._key = self.pool.ray.get(self.actor.restore.remote(self.handle, snapshot))
        self._ready = None


class _KeyedSnapshotRemoteEnv(_SnapshotRemoteEnv, _KeyedRemoteEnv):
    pass


_PROXIES = {(False, False): RemoteEnv, (True, False): _KeyedRemoteEnv,
            (False, True): _SnapshotRemoteEnv, (True, True): _KeyedSnapshotRemoteEnv}


class RaySuite:
    """`suite` with its Envs in an `EnvWorkerPool` (see the module docstring)."""

    def __init__(self, suite: Suite, pool: EnvWorkerPool):
        self._suite, self._pool = suite, pool

    def __getattr__(self, name: str) -> Any:
        return getattr(self._suite, name)

    @property
    def id(self) -> str:
        return self._suite.id

    def make_env(self, task_id: str) -> RemoteEnv:
        pool = self._pool
        pool.flush_closed()
        worker, handle = pool.place()
        caps = pool.ray.get(pool.workers[worker].make.remote(handle, task_id))
        proxy = _PROXIES[caps["state_key"], caps["snapshot"]]
        return proxy(pool, worker, handle, caps["max_steps"])

    def step_all(self, envs: Sequence[RemoteEnv], actions: Sequence[str]) -> None:
        """Step every proxy with its action at once; each proxy's next ``step(action)``
        returns its result without another round trip."""
        by_worker: dict[int, list[int]] = {}
        for i, env in enumerate(envs):
            by_worker.setdefault(env.worker, []).append(i)
        refs = {w: self._pool.workers[w].step_many.remote(
            [(envs[i].handle, actions[i]) for i in rows]) for w, rows in by_worker.items()}
        results = dict(zip(refs, self._pool.ray.get(list(refs.values()))))
        for w, rows in by_worker.items():
            for i, (result, key) in zip(rows, results[w]):
                envs[i]._ready = (actions[i], result, key)


def rollout_suite(suite: Suite, executor: str, env_workers: int) -> Suite:
    """The suite the trainer's rollouts play: `suite` itself for ``local``; for ``ray`` or
    ``ray:ADDRESS``, `suite` with its Envs in `env_workers` Ray actors (joining the
    cluster, or starting a local Ray instance on loopback when none is running)."""
    spec: ExecutorSpec = parse_executor(executor)
    if spec.kind == "local":
        return suite
    from harness.executors.ray_cluster import connect, import_ray

    ray = import_ray(spec)
    connect(ray, spec)
    log.info("rollouts of %s on %d Ray env workers (%s)", suite.id, env_workers,
             spec.describe())
    return RaySuite(suite, EnvWorkerPool(ray, suite, env_workers))  # type: ignore[return-value]


class _OneEnvSuite:
    """`suite` whose ``make_env`` hands back the Env it made last when asked for the same
    task again (reset then starts the next episode: the Env contract's determinism is over
    reset with a seed, so a reused Env plays the same episode as a fresh one)."""

    def __init__(self, suite: Suite):
        self._suite = suite
        self._task: str | None = None
        self._env: Any = None
        self.made = self.reused = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._suite, name)

    @property
    def id(self) -> str:
        return self._suite.id

    def make_env(self, task_id: str) -> Any:
        if self._env is not None and self._task == task_id:
            self.reused += 1
            return self._env
        if isinstance(self._env, Closable):
            self._env.close()
        self._env, self._task = self._suite.make_env(task_id), task_id
        self.made += 1
        return self._env


class EpisodeWorker:
    """An environment-worker actor of `harness run --executor ray` with env workers: holds
    one suite and one Env of it (reused across consecutive episodes of the same task; the
    driver sends a task's episodes to the same worker), plays episodes end to end with the
    runner's `run_episode` (`harness.executors.ray_executor.play_episode`)."""

    def __init__(self, suite_id: str):
        self.suite = _OneEnvSuite(get_suite(suite_id))

    def play(self, task: Any, policy: Any = None) -> tuple:
        return play_episode(task, suite=self.suite, policy=policy)

    def env_counts(self) -> tuple[int, int]:
        """``(Envs made, episodes that reused the held Env)``."""
        return self.suite.made, self.suite.reused


def episode_workers(ray: Any, suite: Suite, n: int, max_restarts: int) -> list[Any]:
    """`n` `EpisodeWorker` actors of `suite`, each reserving the suite's `SuiteResources`;
    an actor lost with its node is restarted up to `max_restarts` times (its in-flight
    episode fails and is retried by the driver)."""
    options = suite_resources(suite).actor_options()
    actor = ray.remote(EpisodeWorker).options(**options, max_restarts=max_restarts,
                                              max_task_retries=0)
    return [actor.remote(suite.id) for _ in range(n)]
