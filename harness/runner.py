"""The runner: plays (policy x suite x task x eval_seed x sample) episodes and stores them.

Episodes run as asyncio tasks, at most `RunConfig.concurrency` at a time. Policies are awaited
(model calls overlap); environment work runs inline for cheap suites and in worker threads for
suites that declare ``blocking = True``. Each episode is written to the store as soon as it
finishes, in one transaction; keys already stored ``ok`` for the run are skipped, so rerunning
an interrupted command finishes the run with every episode stored exactly once. An exception
in an episode is stored as status ``error`` (or ``timeout``) with its traceback and never
counts as a success; a rerun plays such episodes again and replaces their record.
"""

from __future__ import annotations

import asyncio
import functools
import itertools
import logging
import platform
import subprocess
import time
import traceback
from collections.abc import Callable, Iterator
from concurrent.futures import Executor, ThreadPoolExecutor
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

from harness.config import RunConfig
from harness.core import HarnessError, derive_seed, make_rng
from harness.policies import EpisodeContext, Policy, make_policy
from harness.records import EpisodeKey, EpisodeRecord, StepRecord
from harness.store import EpisodeWriter, Store
from tasks import get_suite
from tasks.base import Suite, TaskSpec

log = logging.getLogger(__name__)

MIN_EPISODES_FOR_ERROR_RATE = 10


class RunAborted(HarnessError):
    """The run stopped early (too many errors); finished episodes are stored."""


@dataclass(frozen=True)
class EpisodeJob:
    policy: Policy
    suite: Suite
    task: TaskSpec
    eval_seed: int
    sample: int

    @property
    def key(self) -> EpisodeKey:
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


def env_seed(suite_id: str, task_id: str, eval_seed: int) -> int:
    """The seed passed to ``Env.reset``: shared by every sample of a (task, eval seed)."""
    return derive_seed(suite_id, task_id, eval_seed)


def policy_rng(suite_id: str, task_id: str, eval_seed: int, sample: int, policy_id: str):
    """The policy's RNG for one episode: differs across samples and policies."""
    return make_rng(suite_id, task_id, eval_seed, sample, policy_id)


async def run_episode(job: EpisodeJob, *, max_steps: int | None = None,
                      executor: Executor | None = None
                      ) -> tuple[EpisodeRecord, list[StepRecord]]:
    """Play one episode. Exceptions propagate; `run` turns them into error records.

    Env work of a blocking suite runs in `executor` (the loop's default pool when None).
    """
    suite, task, policy = job.suite, job.task, job.policy
    blocking = suite.blocking
    loop = asyncio.get_running_loop()
    started = time.perf_counter()
    if blocking:
        env = await loop.run_in_executor(executor, suite.make_env, task.id)
    else:
        env = suite.make_env(task.id)
    seed = env_seed(suite.id, task.id, job.eval_seed)
    if blocking:
        obs, info = await loop.run_in_executor(executor, functools.partial(env.reset, seed=seed))
    else:
        obs, info = env.reset(seed=seed)
    limit = env.max_steps if max_steps is None else min(max_steps, env.max_steps)
    context = EpisodeContext(suite.id, task, suite.trivial_actions, env,
                             policy_rng(suite.id, task.id, job.eval_seed, job.sample, policy.id),
                             obs, info, instructions=getattr(suite, "instructions", ""))
    steps: list[StepRecord] = []
    total_reward, n_invalid, prompt_tokens, completion_tokens = 0.0, 0, 0, 0
    retries, model_latency_s = 0, 0.0
    terminated = truncated = False
    history, act, step = context.history, policy.act, env.step
    while not (terminated or truncated):
        decision = await act(context)
        action = decision.action
        result = await loop.run_in_executor(executor, step, action) if blocking \
            else step(action)
        info = result.info
        terminated, truncated = result.terminated, result.truncated
        t = len(steps)
        if not terminated and t + 1 >= limit:
            truncated = True
        steps.append(StepRecord(t, obs, action, decision.raw_output, result.reward,
                                terminated, truncated, info))
        total_reward += result.reward
        n_invalid += info.get("invalid", False)
        prompt_tokens += decision.prompt_tokens
        completion_tokens += decision.completion_tokens
        retries += decision.retries
        model_latency_s += decision.latency_s
        history.append((obs, action))
        obs = result.observation
        context.observation, context.info, context.step = obs, info, t + 1
    record = EpisodeRecord(
        key=job.key, task_type=task.task_type, split=task.split, status="ok",
        success=bool(info.get("won", False)), score=float(info.get("score", 0.0)),
        total_reward=total_reward, n_steps=len(steps), n_invalid=int(n_invalid),
        terminated=terminated, truncated=truncated, prompt_tokens=prompt_tokens,
        completion_tokens=completion_tokens, retries=retries, model_latency_s=model_latency_s,
        wall_s=time.perf_counter() - started,
        train_seed=policy.train_seed, final_observation=obs,
        policy_provenance=dict(policy.provenance))
    return record, steps


def _last_line(text: str | None) -> str:
    lines = (text or "").strip().splitlines()
    return lines[-1] if lines else ""


def _failed(job: EpisodeJob, status: str, error: str, wall_s: float) -> EpisodeRecord:
    return EpisodeRecord(
        key=job.key, task_type=job.task.task_type, split=job.task.split, status=status,
        success=False, score=float("nan"), total_reward=0.0, n_steps=0, n_invalid=0,
        terminated=False, truncated=False, wall_s=wall_s, train_seed=job.policy.train_seed,
        error=error, policy_provenance=dict(job.policy.provenance))


def balanced_prefix(tasks: list[TaskSpec], n: int) -> list[TaskSpec]:
    """The first `n` tasks taken round-robin across task types (each type in split order),
    so that a small run still covers every task type."""
    by_type: dict[str, list[TaskSpec]] = {}
    for task in tasks:
        by_type.setdefault(task.task_type, []).append(task)
    interleaved = [task for group in itertools.zip_longest(*by_type.values()) for task in group
                   if task is not None]
    return interleaved[:n]


def plan_jobs(config: RunConfig, policies: list[Policy], suites: list[Suite]
              ) -> Iterator[EpisodeJob]:
    """Every episode the config asks for, in a stable order."""
    for suite in suites:
        tasks = suite.tasks(config.split)
        if config.task_types:
            tasks = [t for t in tasks if t.task_type in config.task_types]
        if config.n_tasks is not None:
            tasks = balanced_prefix(tasks, config.n_tasks)
        for policy in policies:
            for task in tasks:
                for eval_seed in config.eval_seeds:
                    for sample in range(config.samples):
                        yield EpisodeJob(policy, suite, task, eval_seed, sample)


def provenance() -> dict[str, Any]:
    """Code version, package versions and host, stored with every run."""
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
    return {"code_version": code or packages.get("agent-rl-harness", "unknown"),
            "packages": packages, "host": platform.node(), "python": platform.python_version()}


async def run_async(config: RunConfig, *, store: Store,
                    on_episode: Callable[[EpisodeRecord], None] | None = None,
                    on_plan: Callable[[int, int], None] | None = None,
                    policies: list[Policy] | None = None) -> RunSummary:
    """Play every episode of `config` not yet stored under its run id.

    `on_plan(total, skipped)` is called once before the first episode; `on_episode` after
    each stored episode. `policies` overrides ``config.policies`` (already-built objects).
    """
    started = time.perf_counter()
    suites = [get_suite(spec) for spec in config.suites]
    policies = policies if policies is not None else [make_policy(s) for s in config.policies]
    if not suites or not policies:
        raise HarnessError("a run needs at least one policy and one suite")
    run_id = config.resolved_run_id()
    store.begin_run(run_id, config.identity(), provenance())
    done = store.stored_keys(run_id, statuses=("ok",))
    jobs = list(plan_jobs(config, policies, suites))
    pending = [job for job in jobs if job.key not in done]
    if on_plan:
        on_plan(len(jobs), len(jobs) - len(pending))
    counts = {"played": 0, "errors": 0}
    queue: asyncio.Queue[EpisodeJob] = asyncio.Queue()
    for job in pending:
        queue.put_nowait(job)

    async def worker() -> None:
        while not queue.empty():
            job = queue.get_nowait()
            t0 = time.perf_counter()
            try:
                async with asyncio.timeout(config.episode_timeout_s):
                    record, steps = await run_episode(job, max_steps=config.max_steps,
                                                      executor=executor)
            except asyncio.TimeoutError:
                record, steps = _failed(job, "timeout", f"episode exceeded "
                                        f"{config.episode_timeout_s}s", time.perf_counter() - t0), []
            except Exception:  # noqa: BLE001 - stored with its traceback, never a success
                record, steps = _failed(job, "error", traceback.format_exc(),
                                        time.perf_counter() - t0), []
            writer.submit(run_id, record, steps)
            counts["played"] += 1
            counts["errors"] += record.status != "ok"
            if on_episode:
                on_episode(record)
            if (counts["played"] >= MIN_EPISODES_FOR_ERROR_RATE
                    and counts["errors"] > config.max_error_rate * counts["played"]):
                raise RunAborted(
                    f"stopped: {counts['errors']} of {counts['played']} episodes failed (more "
                    f"than max_error_rate={config.max_error_rate}); last error: "
                    f"{_last_line(record.error)}; finished episodes are "
                    f"stored in {store.path} under run {run_id}")

    blocking = any(suite.blocking for suite in suites)
    executor = ThreadPoolExecutor(config.concurrency, "env") if blocking else None
    try:
        with EpisodeWriter(store.path, replace=True) as writer:
            workers = [asyncio.create_task(worker())
                       for _ in range(min(config.concurrency, len(pending)))]
            try:
                await asyncio.gather(*workers)
            finally:
                for task in workers:
                    task.cancel()
    finally:
        if executor is not None:  # a timed-out env call may still run: do not wait for it
            executor.shutdown(wait=False, cancel_futures=True)
    return RunSummary(run_id, store.path, len(jobs), len(jobs) - len(pending), counts["played"],
                      counts["errors"], time.perf_counter() - started)


def run(config: RunConfig, **kwargs: Any) -> RunSummary:
    """Synchronous entry point: opens the store at ``config.db`` and runs `run_async`."""
    with Store(config.db) as store:
        return asyncio.run(run_async(config, store=store, **kwargs))
