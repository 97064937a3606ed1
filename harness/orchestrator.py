"""The orchestrator: what every executor of `harness run` shares, written once.

plan (every episode the config asks for, `plan_jobs`) -> identity (the run id and the
config stored with it) -> resume (keys stored ``ok`` are skipped) -> claims (concurrent
invocations of one run split the rest, `harness.claims`) -> error budget
(``max_error_rate``) -> progress (``on_plan``/``on_episode``) -> writer (the one
`EpisodeWriter`). Executors only play the episodes they are handed: the local asyncio
runner (`harness.runner`) through `Orchestrator.next_job`, the Ray driver
(`harness.executors.ray_executor`) through `Orchestrator.take`; both hand every record back
through `Orchestrator.record`.
"""

from __future__ import annotations

import asyncio
import copy
import functools
import hashlib
import json
import platform
import subprocess
import sys
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

from harness.claims import Claims
from harness.config import RunConfig
from harness.core import HarnessError, last_line
from harness.episode_writer import EpisodeWriter
from harness.episodes import select_task_ids, select_tasks
from harness.policies import Policy, make_policy
from harness.policies.model import apply_suite_scaffolds
from harness.records import EpisodeKey, EpisodeRecord, StepRecord
from harness.store import Store
from tasks import get_suite
from tasks.base import Suite, TaskSpec, suite_capability

__all__ = ["EpisodeJob", "RunSummary", "RunAborted", "RunPlan", "Orchestrator", "plan_jobs",
           "plan_run", "provenance", "MIN_EPISODES_FOR_ERROR_RATE"]

MIN_EPISODES_FOR_ERROR_RATE = 10
MAX_CHUNK = 1024
"""Most episodes claimed in one transaction (the chunk doubles while episodes are quick)."""
POLL_S = 0.5
"""How often an owner with nothing left but keys a live owner holds looks again."""


class RunAborted(HarnessError):
    """The run stopped early (too many errors); finished episodes are stored."""


@dataclass(frozen=True)
class EpisodeJob:
    policy: Policy
    suite: Suite
    task: TaskSpec
    eval_seed: int
    sample: int

    @functools.cached_property
    def key(self) -> EpisodeKey:  # made once: the plan and the record both ask for it
        return EpisodeKey(self.policy.id, self.suite.id, self.task.id, self.eval_seed, self.sample)


@dataclass(frozen=True)
class RunSummary:
    run_id: str
    db: Path
    planned: int
    skipped: int
    played: int
    errors: int
    wall_s: float
    by_others: int = 0
    """Episodes a concurrent invocation of the same run played while this one ran."""


@dataclass(frozen=True)
class RunPlan:
    """A run's identity and every episode it asks for (policies and suites built)."""

    run_id: str
    identity: dict[str, Any]
    suites: list[Suite]
    policies: list[Policy]
    jobs: list[EpisodeJob]


def plan_jobs(config: RunConfig, policies: list[Policy], suites: list[Suite]
              ) -> Iterator[EpisodeJob]:
    """Every episode the config asks for, in a stable order (``task_ids``: in its order).
    An id of ``task_ids`` that no suite has is a `HarnessError` (before anything is played)."""
    if config.task_ids:
        chosen = select_task_ids(suites, config.split, config.task_ids)
    else:
        chosen = [(suite, select_tasks(suite, config.split, task_types=config.task_types,
                                       n_tasks=config.n_tasks)) for suite in suites]
    for suite, tasks in chosen:
        for policy in policies:
            for task in tasks:
                for eval_seed in config.eval_seeds:
                    for sample in range(config.samples):
                        yield EpisodeJob(policy, suite, task, eval_seed, sample)


def plan_run(config: RunConfig, policies: list[Policy] | None = None) -> RunPlan:
    """Build the suites and policies of `config` (`policies`: already-built objects instead
    of ``config.policies``), decide each policy's scaffold for its suites (the one place:
    `apply_suite_scaffolds`), and plan every episode. A config that selects nothing is a
    `HarnessError`."""
    suites = [get_suite(spec) for spec in config.suites]
    policies = list(policies) if policies is not None else \
        [make_policy(spec) for spec in config.policies]
    apply_suite_scaffolds(policies, suites)  # e.g. terminal@1 on terminal suites
    if not suites or not policies:
        raise HarnessError("a run needs at least one policy and one suite")
    jobs = list(plan_jobs(config, policies, suites))
    if not jobs and config.n_tasks != 0:
        types = f" of task type {', '.join(config.task_types)}" if config.task_types else ""
        raise HarnessError(f"nothing to play: {', '.join(s.id for s in suites)} has no "
                           f"{config.split} task{types}")
    scaffolds = scaffold_specs(policies)
    identity = {**config.identity(), "scaffolds": scaffolds} if scaffolds else config.identity()
    settings = {s.id: dict(suite_capability(s, "settings")) for s in suites
                if suite_capability(s, "settings")}
    run_id = config.resolved_run_id()
    if settings:  # e.g. τ-bench's user simulator: another user, another run
        identity["suite_settings"] = settings
        if not config.run_id:
            digest = hashlib.blake2b(json.dumps(settings, sort_keys=True).encode(),
                                     digest_size=4).hexdigest()
            run_id = f"{run_id}-{digest}"
    return RunPlan(run_id, identity, suites, policies, jobs)


def scaffold_specs(policies: list[Policy]) -> dict[str, Any]:
    """The scaffold spec of every model policy (stored with the run's config)."""
    out = {}
    for policy in policies:
        scaffold = getattr(policy, "scaffold", None)
        spec = getattr(scaffold, "spec", None)
        if spec is not None and hasattr(spec, "to_dict"):
            out[policy.id] = spec.to_dict()
    return out


def provenance() -> dict[str, Any]:
    """Code version, package versions, host and compute (`harness.compute`: CPU model and
    flags, torch and BLAS) under ``packages["compute"]``, stored with every run (read once per
    process: a git call and nine package lookups cost ~50 ms, a run of cheap episodes less);
    and, when a suite of the run has loaded the sandbox, what contains its commands (user
    namespace, seccomp profile version, limits: `tasks.sandbox.containment`), stored with the
    package versions under ``sandbox``."""
    found = copy.deepcopy(_provenance())
    sandbox = sys.modules.get("tasks.sandbox")
    if sandbox is not None:
        found["packages"]["sandbox"] = "; ".join(sandbox.containment().values())
    return found


@functools.cache
def _provenance() -> dict[str, Any]:
    try:
        code = subprocess.run(["git", "describe", "--always", "--dirty"], capture_output=True,
                              text=True, timeout=5, cwd=Path(__file__).parent).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        code = ""
    packages = {}
    for name in ("agent-rl-harness", "numpy", "scipy", "pandas", "statsmodels", "torch",
                 "transformers", "vllm", "openai"):
        try:
            packages[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    from harness.compute import compute_provenance, describe_compute

    packages["compute"] = describe_compute(compute_provenance())
    return {"code_version": code or packages.get("agent-rl-harness", "unknown"),
            "packages": packages, "host": platform.node(), "python": platform.python_version()}


class Orchestrator:
    """One invocation of a run, for any executor. Use as a context manager: entering records
    the run (``begin=False``: the caller did), works out what is left, reports the plan,
    opens the writer and registers this invocation's claims; leaving commits every record
    handed back and releases the claims. `summary` gives the `RunSummary`."""

    def __init__(self, config: RunConfig, store: Store, *, policies: list[Policy] | None = None,
                 begin: bool = True, on_plan: Callable[[int, int], None] | None = None,
                 on_episode: Callable[[EpisodeRecord], None] | None = None):
        self.started = time.perf_counter()
        self.config, self.store, self.begin = config, store, begin
        self.plan = plan_run(config, policies)
        self.run_id = self.plan.run_id
        self.on_plan, self.on_episode = on_plan, on_episode
        self.played = self.errors = self.by_others = 0
        self.skipped = 0
        self.waiting = False
        self.last_failure: EpisodeRecord | None = None
        self._queue: dict[EpisodeKey, EpisodeJob] = {}
        self._ready: deque[EpisodeJob] = deque()
        self._chunk, self._last_take = max(1, config.concurrency), 0.0
        self.writer: EpisodeWriter | None = None
        self.claims: Claims | None = None

    def __enter__(self) -> Orchestrator:
        plan = self.plan
        if self.begin:
            self.store.begin_run(self.run_id, plan.identity, provenance())
        self.claims = Claims(self.store, self.run_id).__enter__()  # before reading what is done
        done = self.store.stored_keys(self.run_id, statuses=("ok",))
        self._queue = {job.key: job for job in plan.jobs if job.key not in done}
        self.skipped = len(plan.jobs) - len(self._queue)
        if self.on_plan:
            self.on_plan(len(plan.jobs), self.skipped)
        try:
            self.writer = EpisodeWriter(self.store.path, replace=True,
                                        turns=self.config.store_turns).__enter__()
        except BaseException:
            self.claims.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, *exc: Any) -> None:
        try:
            if self.writer is not None:
                self.writer.close()  # every record handed back is committed before release
        finally:
            if self.claims is not None:
                self.claims.__exit__(*exc)

    @property
    def pending(self) -> int:
        """Episodes not yet handed to an executor (some may be held by a concurrent run)."""
        return len(self._queue) + len(self._ready)

    # -- handing out episodes ----------------------------------------------------------------
    def take(self, limit: int) -> list[EpisodeJob]:
        """Claim up to `limit` episodes for an executor. An empty list with `waiting` set:
        a live concurrent invocation holds what is left (ask again after `POLL_S`)."""
        if self._ready:
            return [self._ready.popleft() for _ in range(min(limit, len(self._ready)))]
        if not self._queue:
            self.waiting = False
            return []
        taken = self.claims.take(self._queue.keys(), limit)
        for key in taken.dropped:
            del self._queue[key]
        self.by_others += len(taken.dropped)
        jobs = [self._queue.pop(key) for key in taken.keys]
        self.waiting = taken.waiting
        return jobs

    async def next_job(self) -> EpisodeJob | None:
        """The next episode for a local worker, or None when none is left to this invocation
        (claims are taken in chunks that double while episodes go quickly)."""
        while True:
            if self._ready:
                return self._ready.popleft()
            now = time.monotonic()
            if now - self._last_take < 0.25:
                self._chunk = min(MAX_CHUNK, self._chunk * 2)
            self._last_take = now
            self.writer.flush()  # records before claims are marked done
            self._ready.extend(self.take(self._chunk))
            if self._ready:
                continue
            if not self.waiting:
                return None
            await asyncio.sleep(POLL_S)

    # -- taking records back -----------------------------------------------------------------
    def record(self, record: EpisodeRecord, steps: list[StepRecord]) -> None:
        """Store one played episode, count it, report it, and raise `RunAborted` when the
        error rate passes ``max_error_rate`` (from `MIN_EPISODES_FOR_ERROR_RATE` episodes)."""
        self.writer.submit(self.run_id, record, steps)
        self.claims.finish(record)
        self.played += 1
        if record.status != "ok":
            self.errors += 1
            self.last_failure = record
        if self.on_episode:
            self.on_episode(record)
        if self._over_budget(MIN_EPISODES_FOR_ERROR_RATE):
            raise self._aborted()

    def _over_budget(self, minimum: int) -> bool:
        return self.played >= minimum and self.errors > self.config.max_error_rate * self.played

    def _aborted(self) -> RunAborted:
        last = last_line(self.last_failure.error) if self.last_failure else ""
        return RunAborted(
            f"stopped: {self.errors} of {self.played} episodes failed (more than "
            f"max_error_rate={self.config.max_error_rate}); last error: {last}; finished "
            f"episodes are stored in {self.store.path} under run {self.run_id}")

    def summary(self) -> RunSummary:
        """The invocation's counts; `RunAborted` when its errors end above the budget."""
        if self.last_failure is not None and self._over_budget(1):
            raise self._aborted()
        return RunSummary(self.run_id, self.store.path, len(self.plan.jobs), self.skipped,
                          self.played, self.errors, time.perf_counter() - self.started,
                          self.by_others)
