"""One episode as Ray carries it (`EpisodeTask`: names and numbers, no live objects) and
`play_episode`, which plays it where it lands (a Ray task or an env-worker actor) with the
runner's `play_within`: the same seeds and the same record as a local episode."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from harness.core import HarnessError
from harness.orchestrator import EpisodeJob
from harness.policies import Policy, make_policy
from harness.policies.model import apply_suite_scaffolds
from harness.records import EpisodeRecord, StepRecord
from harness.runner import play_within
from tasks import get_suite
from tasks.base import Suite, TaskSpec

__all__ = ["EpisodeTask", "play_episode"]


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
