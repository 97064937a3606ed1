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

import asyncio
import logging
import os
import sys
import time
import zlib
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pandas as pd

from harness.config import RunConfig
from harness.core import HarnessError, MissingDependencyError
from harness.episodes import failed_record
from harness.executors.ray_envs import episode_workers, suite_resources
from harness.executors.spec import ExecutorSpec
from harness.policies import Policy, make_policy
from harness.policies.model import apply_suite_scaffolds
from harness.records import EpisodeKey, EpisodeRecord, StepRecord
from harness.runner import (MIN_EPISODES_FOR_ERROR_RATE, EpisodeJob, RunAborted, RunSummary,
                            plan_jobs, play_within, provenance)
from harness.episode_writer import EpisodeWriter
from harness.store import Store, TableSet
from tasks import get_suite
from tasks.base import Suite, TaskSpec

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


@dataclass(frozen=True)
class EpisodeTask:
    """One episode as it travels to a Ray worker: names and numbers, no live objects."""

    policy: str
    suite: str
    task_id: str
    split: str
    eval_seed: int
    sample: int
    max_steps: int | None
    timeout_s: float


_BUILT: dict[tuple[str, str], Any] = {}
"""Suites and policies a worker process built, by (kind, name): reused across episodes."""


def _built(kind: str, name: str, make: Callable[[str], Any]) -> Any:
    if (kind, name) not in _BUILT:
        _BUILT[kind, name] = make(name)
    return _BUILT[kind, name]


def _task_spec(suite: Suite, split: str, task_id: str) -> TaskSpec:
    tasks = _built("tasks", f"{suite.id}/{split}",
                   lambda _: {t.id: t for t in suite.tasks(split)})
    if task_id not in tasks:
        raise HarnessError(f"{suite.id} has no {split} task {task_id!r}")
    return tasks[task_id]


def play_episode(task: EpisodeTask, suite: Suite | None = None, policy: Policy | None = None
                 ) -> tuple[EpisodeRecord, list[StepRecord], str]:
    """Play one episode where this runs (a Ray worker): ``(record, steps, node id)``.
    The episode's own failures are records; only a broken worker raises. `suite`: the
    suite object to play (an env worker's), `policy`: the driver's own policy object
    (shipped when the caller passed live policies); built from their names when None."""
    import ray

    suite = suite if suite is not None else _built("suite", task.suite, get_suite)
    policy = policy if policy is not None else _built("policy", task.policy, make_policy)
    apply_suite_scaffolds([policy], [suite])  # as the driver did (run_on_ray)
    job = EpisodeJob(policy, suite, _task_spec(suite, task.split, task.task_id),
                     task.eval_seed, task.sample)
    record, steps = asyncio.run(play_within(job, timeout_s=task.timeout_s,
                                            max_steps=task.max_steps))
    node = ray.get_runtime_context().get_node_id() if ray.is_initialized() else ""
    return record, steps, node


LOOPBACK_ENV = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"
"""Ray's switch for single-machine mode: when "0", a node started here binds 127.0.0.1
instead of the host's routable address (read once, when ray is imported)."""


def _import_ray(spec: ExecutorSpec):
    if spec.address is None and "ray" not in sys.modules:  # a local instance: loopback only
        os.environ.setdefault(LOOPBACK_ENV, "0")
    try:
        import ray
    except ImportError as exc:
        raise MissingDependencyError("ray", "ray", "--executor ray") from exc
    return ray


def _connect(ray, spec: ExecutorSpec) -> bool:
    """Join the cluster (or start a local instance); True when this call started Ray."""
    if ray.is_initialized():
        return False
    options = {"include_dashboard": False, "log_to_driver": False,
               "configure_logging": False}
    if spec.address is None:  # a fresh local instance on loopback, never a cluster found
        ray.init(address="local", _node_ip_address="127.0.0.1", **options)
    else:
        ray.init(address=spec.address, **options)
    return True


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
    db = store.tables(EXECUTOR_TABLES)
    if db is None:
        return pd.DataFrame()
    sql, params = "SELECT * FROM executor_attempts", []
    if run_id is not None:
        sql, params = sql + " WHERE run_id=?", [run_id]
    return pd.read_sql_query(sql + " ORDER BY recorded_at", db, params=params)


def _task(job: EpisodeJob, policy_spec: str, config: RunConfig) -> EpisodeTask:
    return EpisodeTask(policy_spec, job.suite.id, job.task.id, job.task.split, job.eval_seed,
                       job.sample, config.max_steps, config.episode_timeout_s)


def run_on_ray(config: RunConfig, spec: ExecutorSpec, *, store: Store,
               on_episode: Callable[[EpisodeRecord], None] | None = None,
               on_plan: Callable[[int, int], None] | None = None,
               policies: list[Policy] | None = None) -> RunSummary:
    """`harness.runner.run_async`'s contract with the episodes played on Ray (see the module
    docstring). Raises `RunAborted` past ``max_error_rate`` (in-flight tasks cancelled).
    `policies`: live policy objects to play instead of ``config.policies`` (as
    `harness.runner.run` takes them); they travel to the workers pickled."""
    ray = _import_ray(spec)
    started = time.perf_counter()
    suites = [get_suite(s) for s in config.suites]
    shipped = policies is not None
    policies = list(policies) if shipped else [make_policy(s) for s in config.policies]
    apply_suite_scaffolds(policies, suites)
    if not suites or not policies:
        raise HarnessError("a run needs at least one policy and one suite")
    specs = {p.id: p.id for p in policies} if shipped else \
        {p.id: s for p, s in zip(policies, config.policies, strict=True)}
    jobs = list(plan_jobs(config, policies, suites))
    if not jobs and config.n_tasks != 0:
        raise HarnessError(f"nothing to play: {', '.join(s.id for s in suites)} has no "
                           f"{config.split} task")
    from harness.runner import _scaffolds  # the run identity must match the local runner's

    run_id = config.resolved_run_id()
    scaffolds = _scaffolds(policies)
    store.begin_run(run_id, {**config.identity(), "scaffolds": scaffolds} if scaffolds
                    else config.identity(), provenance())
    db = store.tables(EXECUTOR_TABLES)
    with db:
        db.execute("INSERT INTO executor_runs VALUES (?,?,?,?)",
                   (run_id, spec.describe(), spec.max_retries, time.time()))
    done = store.stored_keys(run_id, statuses=("ok",))
    pending = deque((job, 0) for job in jobs if job.key not in done)
    skipped = len(jobs) - len(pending)
    if on_plan:
        on_plan(len(jobs), skipped)
    started_here = _connect(ray, spec)
    attempts = _Attempts(run_id)
    try:
        objects = {p.id: ray.put(p) for p in policies} if shipped else {}
        played, errors = _drive(ray, config, spec, pending, specs, store, attempts,
                                on_episode, objects)
    finally:
        attempts.flush(store)
        if started_here:
            ray.shutdown()
    log.info("run %s on %s: %d episodes, %d retried attempts", run_id, spec.describe(),
             played, attempts.retries)
    return RunSummary(run_id, store.path, len(jobs), skipped, played, errors,
                      time.perf_counter() - started)


def _drive(ray, config: RunConfig, spec: ExecutorSpec, pending: deque, specs: dict[str, str],
           store: Store, attempts: _Attempts,
           on_episode: Callable[[EpisodeRecord], None] | None,
           objects: dict[str, Any]) -> tuple[int, int]:
    """Keep a window of tasks in flight; store each result as it arrives; retry lost ones."""
    submit, actors = _submitter(ray, spec, {job.suite.id: job.suite for job, _ in pending})
    cpus = int(ray.cluster_resources().get("CPU", 1))
    window = max(config.concurrency, 2 * cpus)
    in_flight: dict[Any, tuple[EpisodeJob, int]] = {}
    played = errors = 0
    with EpisodeWriter(store.path, replace=True, turns=config.store_turns) as writer:
        try:
            while pending or in_flight:
                while pending and len(in_flight) < window:
                    job, attempt = pending.popleft()
                    task = _task(job, specs[job.policy.id], config)
                    in_flight[submit(task, objects.get(task.policy))] = (job, attempt)
                ready, _ = ray.wait(list(in_flight), num_returns=1)
                for ref in ready:
                    job, attempt = in_flight.pop(ref)
                    result = _result(ray, ref, job, attempt, spec, attempts, pending)
                    if result is None:
                        continue
                    record, steps = result
                    writer.submit(config.resolved_run_id(), record, steps)
                    played += 1
                    errors += record.status != "ok"
                    if on_episode:
                        on_episode(record)
                    if played >= MIN_EPISODES_FOR_ERROR_RATE and \
                            errors > config.max_error_rate * played:
                        raise RunAborted(f"stopped: {errors} of {played} episodes failed (more "
                                         f"than max_error_rate={config.max_error_rate}); "
                                         f"finished episodes are stored in {store.path}")
        finally:
            for ref in in_flight:
                ray.cancel(ref, force=not actors)  # an actor call cannot be force-cancelled
            for actor in actors:  # free the env workers' reservations now
                ray.kill(actor)
    if played and errors > config.max_error_rate * played:
        raise RunAborted(f"stopped: {errors} of {played} episodes failed (more than "
                         f"max_error_rate={config.max_error_rate}); finished episodes are "
                         f"stored in {store.path}")
    return played, errors


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
            declared = getattr(suite, "resources", None)
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
            attempts: _Attempts, pending: deque
            ) -> tuple[EpisodeRecord, list[StepRecord]] | None:
    """The finished task's record, or None when it was lost and goes round again."""
    try:
        record, steps, node = ray.get(ref)
    except ray.exceptions.RayTaskError:
        raise  # play_episode itself failed: a harness bug, not a lost worker
    except ray.exceptions.RayError as exc:
        reason = f"{type(exc).__name__}: {(str(exc).strip().splitlines() or [''])[0][:300]}"
        attempts.add(job.key, attempt, "lost", "", reason)
        if attempt < spec.max_retries:
            attempts.retries += 1
            pending.appendleft((job, attempt + 1))
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
