"""Episodes of `harness run` as Ray tasks: ``--executor ray`` (a local Ray instance) or
``--executor ray:ADDRESS`` (an existing cluster, ``ray.init(address=ADDRESS)``).

The driver plans the episodes exactly as the local runner does (`harness.runner.plan_jobs`,
the same run identity, the same resume: keys stored ``ok`` are skipped), sends each pending
episode to the cluster as a Ray task that carries names only (policy spec, suite id, task
id, seeds), and hands every record that comes back to the one `EpisodeWriter` on the driver
as it arrives, so ``on_plan``/``on_episode`` (the progress bar) and ``max_error_rate``
behave as with the local executor.

With ``ExecutorSpec.env_workers`` (``--env-workers N``) episodes go instead to N
environment-worker actors per suite (`harness.executors.ray_envs.EpisodeWorker`), each
reserving the suite's declared resources and reusing its Env across a task's episodes.
Live policy objects (``policies=``, as `harness audit` passes them) travel pickled.

A worker builds each suite and policy from its name once per process and plays the episode
with the runner's `play_within` (same seeds, same record); an exception inside an episode is
an ``error`` record and a deadline overrun a ``timeout`` record, as locally. A task lost with
its worker or node (a Ray system error, not an episode's exception) is submitted again, at
most `ExecutorSpec.max_retries` more times, then stored as an ``error``. The store's
``executor`` tables (`EXECUTOR_TABLES`) record the run's executor and retry bound
(``executor_runs``) and every attempt with its node and outcome (``executor_attempts``);
the writer replaces by episode key, so an episode is stored once however many attempts it
took.
"""

from __future__ import annotations

import logging
import time
import zlib
from collections import deque
from collections.abc import Callable
from typing import Any

import pandas as pd

from harness.config import RunConfig
from harness.core import HarnessError
from harness.episodes import failed_record
from harness.executors.ray_cluster import (HEALTH_TIMEOUT_S, RayNodeDied, check_cluster,
                                           connect, import_ray, lost_node)
from harness.executors.ray_envs import episode_workers, suite_resources
from harness.executors.remote_episode import EpisodeTask, play_episode
from harness.executors.spec import ExecutorSpec
from harness.policies import Policy
from harness.records import EpisodeKey, EpisodeRecord, StepRecord
from harness.orchestrator import POLL_S, EpisodeJob, Orchestrator, RunSummary
from harness.store import Store, TableSet
from tasks.base import Suite, suite_capability

__all__ = ["EXECUTOR_TABLES", "EpisodeTask", "play_episode", "run_on_ray", "load_attempts"]

log = logging.getLogger(__name__)

EXECUTOR_TABLES = TableSet("executor", ("""
-- how a run was executed (one row per start of the run) and every attempt of its episodes
CREATE TABLE IF NOT EXISTS executor_runs (
    run_id TEXT NOT NULL, executor TEXT NOT NULL, max_retries INTEGER NOT NULL,
    started_at REAL NOT NULL, PRIMARY KEY (run_id, started_at));
CREATE TABLE IF NOT EXISTS executor_attempts (
    run_id TEXT NOT NULL, policy_id TEXT NOT NULL, suite TEXT NOT NULL, task_id TEXT NOT NULL,
    eval_seed INTEGER NOT NULL, sample INTEGER NOT NULL, attempt INTEGER NOT NULL,
    outcome TEXT NOT NULL, node TEXT, error TEXT, recorded_at REAL NOT NULL,
    PRIMARY KEY (run_id, policy_id, suite, task_id, eval_seed, sample, attempt))""",))


def _key_row(key: EpisodeKey) -> tuple:
    return (key.policy_id, key.suite, key.task_id, key.eval_seed, key.sample)


class _Attempts:
    """Attempt log rows, written to the store in one transaction at the end of the run."""

    def __init__(self, run_id: str):
        self.run_id, self.rows, self.retries = run_id, [], 0

    def add(self, key: EpisodeKey, attempt: int, outcome: str, node: str,
            error: str | None) -> None:
        self.rows.append((self.run_id, *_key_row(key), attempt, outcome, node, error,
                          time.time()))

    def flush(self, store: Store) -> None:
        db = store.tables(EXECUTOR_TABLES)
        with db:
            db.executemany("INSERT OR REPLACE INTO executor_attempts VALUES "
                           "(?,?,?,?,?,?,?,?,?,?,?)", self.rows)
        self.rows = []


def load_attempts(store: Store, run_id: str | None = None) -> pd.DataFrame:
    """Logged attempts (columns of ``executor_attempts``), in the order they finished."""
    return store.table_frame(EXECUTOR_TABLES, "executor_attempts", run_id=run_id,
                             order_by="recorded_at")


def _task(job: EpisodeJob, policy_spec: str, config: RunConfig) -> EpisodeTask:
    return EpisodeTask(policy_spec, job.suite.id, job.task.id, job.task.split, job.eval_seed,
                       job.sample, config.max_steps, config.episode_timeout_s)


def run_on_ray(config: RunConfig, spec: ExecutorSpec, *, store: Store,
               on_episode: Callable[[EpisodeRecord], None] | None = None,
               on_plan: Callable[[int, int], None] | None = None,
               policies: list[Policy] | None = None) -> RunSummary:
    """`harness.runner.run_async`'s contract with the episodes played on Ray (see the module
    docstring): the same `Orchestrator` plans, resumes, claims, budgets errors and writes.
    Raises `RunAborted` past ``max_error_rate`` (in-flight tasks cancelled), `RayNodeDied`
    when a node the run used died. `policies`: live policy objects to play instead of
    ``config.policies``; they travel to the workers pickled."""
    ray = import_ray(spec)
    orchestrator = Orchestrator(config, store, policies=policies, on_plan=on_plan,
                                on_episode=on_episode)
    shipped = policies is not None
    specs = {p.id: p.id for p in orchestrator.plan.policies} if shipped else \
        {p.id: s for p, s in zip(orchestrator.plan.policies, config.policies, strict=True)}
    with orchestrator:
        db = store.tables(EXECUTOR_TABLES)
        with db:
            db.execute("INSERT INTO executor_runs VALUES (?,?,?,?)",
                       (orchestrator.run_id, spec.describe(), spec.max_retries, time.time()))
        started_here = connect(ray, spec)
        attempts = _Attempts(orchestrator.run_id)
        try:
            objects = {p.id: ray.put(p) for p in orchestrator.plan.policies} if shipped else {}
            _drive(ray, orchestrator, spec, specs, attempts, objects)
        finally:
            attempts.flush(store)
            if started_here:
                ray.shutdown()
    log.info("run %s on %s: %d episodes, %d retried attempts", orchestrator.run_id,
             spec.describe(), orchestrator.played, attempts.retries)
    return orchestrator.summary()


def _drive(ray, orchestrator: Orchestrator, spec: ExecutorSpec, specs: dict[str, str],
           attempts: _Attempts, objects: dict[str, Any]) -> None:
    """Keep a window of tasks in flight; hand each result back as it arrives; retry lost
    ones (on another node: a node that died is never sent more work)."""
    config = orchestrator.config
    submit, actors = _submitter(ray, spec, {s.id: s for s in orchestrator.plan.suites})
    window = max(config.concurrency, 2 * int(ray.cluster_resources().get("CPU", 1)))
    in_flight: dict[Any, tuple[EpisodeJob, int]] = {}
    retry: deque[tuple[EpisodeJob, int]] = deque()
    try:
        while True:
            room = window - len(in_flight)
            batch = [retry.popleft() for _ in range(min(room, len(retry)))]
            if len(batch) < room:
                batch += [(job, 0) for job in orchestrator.take(room - len(batch))]
            for job, attempt in batch:
                task = _task(job, specs[job.policy.id], config)
                in_flight[submit(task, objects.get(task.policy))] = (job, attempt)
            if not in_flight:
                if not orchestrator.waiting:
                    return
                time.sleep(POLL_S)  # a concurrent invocation holds what is left
                continue
            ready, _ = ray.wait(list(in_flight), num_returns=1, timeout=HEALTH_TIMEOUT_S)
            if not ready:  # a long episode, or a cluster gone with its control service
                check_cluster(ray)
            for ref in ready:
                job, attempt = in_flight.pop(ref)
                result = _result(ray, ref, job, attempt, spec, attempts, retry)
                if result is not None:
                    orchestrator.record(*result)
    except RayNodeDied as exc:
        raise RayNodeDied(
            f"{exc}: stopped after {orchestrator.played} episodes; every played one is stored "
            f"once in {orchestrator.store.path} under run {orchestrator.run_id}; rerun the same "
            "command to resume") from None
    finally:
        for ref in in_flight:
            ray.cancel(ref, force=not actors)  # an actor call cannot be force-cancelled
        for actor in actors:  # free the env workers' reservations now
            ray.kill(actor)


def _submitter(ray, spec: ExecutorSpec, suites: dict[str, Suite]
               ) -> tuple[Callable[[EpisodeTask, Any], Any], list[Any]]:
    """How an episode goes to the cluster, and the actors made for it: a Ray task
    reserving its suite's resources (`suite_resources`; ``spec.num_cpus`` CPUs when the
    suite declares none), or with ``spec.env_workers`` a call on one of the suite's
    `EpisodeWorker` actors, the same actor for every episode of a task (so that it reuses
    the Env it holds). Actors hold their reservation for the whole run, so a cluster
    without room for all of them is an error rather than a run that waits forever."""
    if not spec.env_workers:
        remotes = {}
        for suite in suites.values():
            declared = suite_capability(suite, "resources")
            options = suite_resources(suite).actor_options() if declared is not None else \
                {"num_cpus": spec.num_cpus}
            remotes[suite.id] = ray.remote(play_episode).options(
                **options, max_retries=0, scheduling_strategy="SPREAD")
        return (lambda task, policy: remotes[task.suite].remote(task, None, policy)), []
    _check_room(ray, spec, list(suites.values()))
    workers = {suite.id: episode_workers(ray, suite, spec.env_workers, spec.max_retries)
               for suite in suites.values()}

    def submit(task: EpisodeTask, policy: Any) -> Any:
        actors = workers[task.suite]
        return actors[zlib.crc32(task.task_id.encode()) % len(actors)].play.remote(task, policy)
    return submit, [actor for actors in workers.values() for actor in actors]


def _check_room(ray, spec: ExecutorSpec, suites: list[Suite]) -> None:
    """Raise when the cluster's resources cannot hold every env worker at once."""
    need: dict[str, float] = {}
    for suite in suites:
        options = suite_resources(suite).actor_options()
        for name, amount in [("CPU", options["num_cpus"]), ("memory", options.get("memory", 0)),
                             *options.get("resources", {}).items()]:
            need[name] = need.get(name, 0.0) + amount * spec.env_workers
    have = ray.cluster_resources()
    short = [f"{name} {amount:g} (cluster: {have.get(name, 0):g})"
             for name, amount in need.items() if amount > have.get(name, 0) + 1e-9]
    if short:
        raise HarnessError(f"--env-workers {spec.env_workers} for {len(suites)} suite(s) "
                           f"needs {', '.join(short)}; lower --env-workers or add nodes")


def _result(ray, ref, job: EpisodeJob, attempt: int, spec: ExecutorSpec,
            attempts: _Attempts, retry: deque
            ) -> tuple[EpisodeRecord, list[StepRecord]] | None:
    """The finished task's record, or None when it was lost and goes round again."""
    try:
        record, steps, node = ray.get(ref)
    except ray.exceptions.RayTaskError:
        raise  # play_episode itself failed: a harness bug, not a lost worker
    except ray.exceptions.RayError as exc:
        died = lost_node(exc)
        if died is not None:  # retried only where a node is left (never on the dead one)
            check_cluster(ray, died=died)
        reason = f"{type(exc).__name__}: {(str(exc).strip().splitlines() or [''])[0][:300]}"
        attempts.add(job.key, attempt, "lost", "", reason)
        if attempt < spec.max_retries:
            attempts.retries += 1
            retry.append((job, attempt + 1))
            log.warning("episode %s lost with its worker (%s); retry %d of %d", job.key,
                        reason, attempt + 1, spec.max_retries)
            return None
        policy = job.policy
        record = failed_record(job.key, job.task, "error",
                               f"lost with its worker {attempt + 1} times; last: {reason}", 0.0,
                               train_seed=policy.train_seed, provenance=policy.provenance)
        attempts.add(job.key, attempt + 1, record.status, "", None)
        return record, []
    attempts.add(job.key, attempt, record.status, node, None)
    return record, steps
