"""The runner: plays (policy x suite x task x eval_seed x sample) episodes and stores them.

Episodes run as asyncio tasks, at most `RunConfig.concurrency` at a time. Policies are awaited
(model calls overlap); environment work runs inline for cheap suites and in worker threads for
suites that declare ``blocking = True``. Each finished episode goes to the `EpisodeWriter`'s
process, which commits it within milliseconds, whole (one transaction with the others that
finished beside it); keys already stored ``ok`` for the run are skipped, so rerunning
an interrupted command finishes the run with every episode stored exactly once. An exception
in an episode is stored as status ``error`` (or ``timeout``) with its traceback and never
counts as a success; a rerun plays such episodes again and replaces their record.

Episodes of inline suites yield to the event loop whenever `YIELD_EVERY_S` seconds have
passed since the run's last yield (checked at each episode's start and after every step; a
`Pacer` shared by the run's workers), so concurrent episodes interleave, ``--timeout`` holds
(the deadline is also checked after every step, exactly) and SIGINT/SIGTERM stop the run: the
first signal cancels the episodes in flight, keeps every finished one, and `run` raises
`RunInterrupted`; rerunning the same command completes the run. A run whose error rate
exceeds ``max_error_rate`` raises `RunAborted`; a config that selects no episode at all is a
`HarnessError`. Seeds, task selection, the episode context and the record come from the
episode core, `harness.episodes`.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import gc
import logging
import signal
import time
import traceback
from collections.abc import Callable, Iterator
from concurrent.futures import Executor, ThreadPoolExecutor
from typing import Any

from harness.config import RunConfig
from harness.core import HarnessError
from harness.episodes import (EpisodeTally, episode_context, env_seed, failed_record,
                              finish_record, rng_identity, turn_record)
from harness.orchestrator import (MIN_EPISODES_FOR_ERROR_RATE, EpisodeJob, Orchestrator,
                                  RunAborted, RunSummary, plan_jobs, provenance)
from harness.policies import Policy
from harness.policies.base import LAYERS_INFO_KEY, Decision
from harness.records import EpisodeRecord, StepRecord, TurnRecord
from harness.store import Store

__all__ = ["EpisodeJob", "MIN_EPISODES_FOR_ERROR_RATE", "Pacer", "RunAborted", "RunInterrupted",
           "RunSummary", "play_within", "plan_jobs", "provenance", "run", "run_async",
           "run_episode"]

log = logging.getLogger(__name__)

YIELD_EVERY_S = 0.01
"""Longest stretch the inline episodes of a run go without yielding to the event loop
(yielding after every step would cost a third of the runner's speed on the games)."""


class Pacer:
    """When inline episodes yield to the event loop: once `every_s` seconds have passed since
    the last yield of any episode sharing this pacer (a run's workers share one)."""

    __slots__ = ("every_s", "last")

    def __init__(self, every_s: float = YIELD_EVERY_S):
        self.every_s = every_s
        self.last = time.monotonic()


class _Deadline:
    """An episode's wall-clock limit: at `when` (``loop.time()``) it cancels the worker task,
    and `expired` tells the worker that the cancellation was the limit's (then
    ``task.uncancel()``, as `asyncio.timeout` does). One timer handle per episode: a fifth of
    `asyncio.timeout`'s cost, which is measurable for episodes of a few milliseconds."""

    __slots__ = ("task", "expired", "handle")

    def __init__(self, loop: asyncio.AbstractEventLoop, when: float):
        self.task = asyncio.current_task()
        self.expired = False
        self.handle = loop.call_at(when, self._expire)

    def _expire(self) -> None:
        self.expired = True
        self.task.cancel()

    def timed_out(self) -> bool:
        """After a `CancelledError`: whether the limit caused it alone (no other cancellation,
        e.g. a signal's, is pending), so the episode is a timeout rather than cancelled."""
        return self.expired and self.task.uncancel() == 0


class RunInterrupted(HarnessError):
    """SIGINT or SIGTERM stopped the run; finished episodes are stored."""

    def __init__(self, message: str, signal_number: int):
        super().__init__(message)
        self.signal_number = signal_number


async def _reset(job: EpisodeJob, loop: asyncio.AbstractEventLoop, executor: Executor | None,
                 pacer: Pacer) -> tuple[Any, str, dict]:
    """Make the episode's env and reset it with the episode's seed: in `executor` for a
    blocking suite, inline otherwise (after yielding to the loop when `pacer` says so)."""
    suite, task = job.suite, job.task
    if suite.blocking:
        env = await loop.run_in_executor(executor, suite.make_env, task.id)
        obs, info = await loop.run_in_executor(executor, functools.partial(
            env.reset, seed=env_seed(suite.id, task.id, job.eval_seed)))
        return env, obs, info
    if loop.time() - pacer.last >= pacer.every_s:  # let other episodes, signals in
        await asyncio.sleep(0)
        pacer.last = loop.time()
    env = suite.make_env(task.id)
    obs, info = env.reset(seed=env_seed(suite.id, task.id, job.eval_seed))
    return env, obs, info


def _with_layers(info: dict[str, Any], decision: Decision) -> dict[str, Any]:
    """The step's info as stored: the env's, with the policy's harness-layer log of the turn
    under `LAYERS_INFO_KEY` when it has layers."""
    return info if decision.layers is None else {**info, LAYERS_INFO_KEY: decision.layers}


async def run_episode(job: EpisodeJob, *, max_steps: int | None = None,
                      executor: Executor | None = None, deadline: float | None = None,
                      pacer: Pacer | None = None, turns: list[TurnRecord] | None = None
                      ) -> tuple[EpisodeRecord, list[StepRecord]]:
    """Play one episode (exceptions propagate; `play_within` makes them records). Env work of
    a blocking suite runs in `executor` (the loop's default pool when None). `deadline`
    (``loop.time()``) is checked after every step: past it, `TimeoutError`. Inline episodes
    yield when `pacer` says so. Each model turn is appended to `turns` as it is made, so a
    caller keeps the turns of an episode that raises; the record holds them all."""
    pacer = pacer if pacer is not None else Pacer()
    turns = turns if turns is not None else []
    suite, task, policy, blocking = job.suite, job.task, job.policy, job.suite.blocking
    loop, started = asyncio.get_running_loop(), time.perf_counter()
    env, obs, info = await _reset(job, loop, executor, pacer)
    limit = env.max_steps if max_steps is None else min(max_steps, env.max_steps)
    context = episode_context(suite, task, env, obs, info, eval_seed=job.eval_seed,
                              sample=job.sample, policy_id=rng_identity(policy))
    steps: list[StepRecord] = []
    total_reward, n_invalid, prompt_tokens, completion_tokens = 0.0, 0, 0, 0
    retries, model_latency_s = 0, 0.0  # summed inline (hot loop), then one EpisodeTally
    terminated = truncated = False
    history, act, step, context.step_limit = context.history, policy.act, env.step, limit
    clock, every = loop.time, pacer.every_s
    while not (terminated or truncated):
        decision = await act(context)
        action = decision.action
        if decision.messages is not None:  # a model turn (scripted policies have none)
            turns.append(turn_record(len(steps), decision))
        result = await loop.run_in_executor(executor, step, action) if blocking \
            else step(action)
        info = result.info
        terminated, truncated = result.terminated, result.truncated
        t = len(steps)
        if not terminated and t + 1 >= limit:
            truncated = True
        steps.append(StepRecord(t, obs, action, decision.raw_output, result.reward,
                                terminated, truncated, _with_layers(info, decision)))
        total_reward += result.reward
        n_invalid += info.get("invalid", False)
        prompt_tokens += decision.prompt_tokens
        completion_tokens += decision.completion_tokens
        retries += decision.retries
        model_latency_s += decision.latency_s
        history.append((obs, action))
        obs = result.observation
        context.observation, context.info, context.step = obs, info, t + 1
        now = clock()
        if deadline is not None and now >= deadline:
            raise TimeoutError
        if now - pacer.last >= every:
            await asyncio.sleep(0)
            pacer.last = clock()
    tally = EpisodeTally(total_reward, len(steps), int(n_invalid), prompt_tokens,
                         completion_tokens, retries, model_latency_s)
    record = finish_record(job.key, task, tally, info=info, terminated=terminated,
                           truncated=truncated, final_observation=obs,
                           wall_s=time.perf_counter() - started, train_seed=policy.train_seed,
                           provenance=policy.provenance, turns=turns,
                           last_action=steps[-1].action if steps else "")
    return record, steps


async def play_within(job: EpisodeJob, *, timeout_s: float, max_steps: int | None = None,
                      executor: Executor | None = None, pacer: Pacer | None = None
                      ) -> tuple[EpisodeRecord, list[StepRecord]]:
    """`run_episode` within `timeout_s` seconds of wall clock, never raising for the episode's
    own sake: an exception becomes an ``error`` record (with its traceback), running past the
    limit a ``timeout`` record, both without steps but with the model turns played before.
    Any other cancellation (a signal's) propagates. The local runner's workers and the Ray
    executor's both play through this."""
    started, loop = time.perf_counter(), asyncio.get_running_loop()
    limit = _Deadline(loop, loop.time() + timeout_s)
    turns: list[TurnRecord] = []
    try:
        return await run_episode(job, max_steps=max_steps, executor=executor,
                                 deadline=limit.handle.when(), pacer=pacer, turns=turns)
    except asyncio.CancelledError:
        if not limit.timed_out():
            raise
        status, error = "timeout", f"episode exceeded {timeout_s}s"
    except TimeoutError:
        status, error = "timeout", f"episode exceeded {timeout_s}s"
    except Exception:  # noqa: BLE001 - stored with its traceback, never a success
        status, error = "error", traceback.format_exc()
    finally:
        limit.handle.cancel()
    return _failed(job, status, error, time.perf_counter() - started, turns), []


def _failed(job: EpisodeJob, status: str, error: str, wall_s: float,
            turns: list[TurnRecord]) -> EpisodeRecord:
    return failed_record(job.key, job.task, status, error, wall_s,
                         train_seed=job.policy.train_seed, provenance=job.policy.provenance,
                         turns=turns)


class _Signals:
    """SIGINT/SIGTERM handlers for the duration of a run: the first signal cancels the
    workers (finished episodes are already with the writer). `remove` puts back the handlers
    that were there before (e.g. the CLI's, which close sandboxes), not the defaults."""

    def __init__(self, loop: asyncio.AbstractEventLoop, workers: list[asyncio.Task]):
        self.loop, self.workers = loop, workers
        self.received: list[int] = []
        self.installed: list[tuple[int, Any]] = []
        for number in (signal.SIGINT, signal.SIGTERM):
            try:
                previous = signal.getsignal(number)
                loop.add_signal_handler(number, self._on_signal, number)
                self.installed.append((number, previous))
            except (NotImplementedError, RuntimeError, ValueError):  # not the main thread
                continue

    def _on_signal(self, number: int) -> None:
        self.received.append(number)
        for task in self.workers:
            task.cancel()

    def remove(self) -> None:
        for number, previous in self.installed:
            self.loop.remove_signal_handler(number)
            if previous is not None:  # None: set outside Python
                signal.signal(number, previous)


async def _play_all(workers: list[asyncio.Task]) -> BaseException | None:
    """Wait for the workers; on the first failure cancel the others. Returns the failure."""
    if not workers:
        return None
    done, pending = await asyncio.wait(workers, return_when=asyncio.FIRST_EXCEPTION)
    for task in pending:
        task.cancel()
    await asyncio.gather(*pending, return_exceptions=True)
    failures = [task.exception() for task in done if not task.cancelled()]  # all retrieved
    return next((failure for failure in failures if failure is not None), None)


async def run_async(config: RunConfig, *, store: Store,
                    on_episode: Callable[[EpisodeRecord], None] | None = None,
                    on_plan: Callable[[int, int], None] | None = None,
                    policies: list[Policy] | None = None, begin: bool = True) -> RunSummary:
    """Play every episode of `config` not yet stored under its run id (and not claimed by a
    concurrent invocation of the same run), through the `Orchestrator`.

    `on_plan(total, skipped)` is called once before the first episode; `on_episode` after
    each stored episode. `policies` overrides ``config.policies`` (already-built objects).
    ``begin=False``: the caller has recorded the run already (the trainer's evaluation adds
    its episodes to the training seed's run).
    Raises `RunAborted` when the error rate exceeds ``config.max_error_rate`` (checked from
    `MIN_EPISODES_FOR_ERROR_RATE` episodes on, and at the end), `RunInterrupted` on
    SIGINT/SIGTERM, and `HarnessError` when the config selects no episode.
    """
    orchestrator = Orchestrator(config, store, policies=policies, begin=begin,
                                on_plan=on_plan, on_episode=on_episode)
    blocking = any(suite.blocking for suite in orchestrator.plan.suites)
    executor = ThreadPoolExecutor(config.concurrency, "env") if blocking else None
    pacer = Pacer()

    async def worker() -> None:
        while (job := await orchestrator.next_job()) is not None:
            record, steps = await play_within(job, timeout_s=config.episode_timeout_s,
                                              max_steps=config.max_steps, executor=executor,
                                              pacer=pacer)
            orchestrator.record(record, steps)

    try:
        with orchestrator:
            workers = [asyncio.create_task(worker())
                       for _ in range(min(config.concurrency, orchestrator.pending))]
            signals = _Signals(asyncio.get_running_loop(), workers)
            try:
                with _older_objects_frozen():
                    failure = await _play_all(workers)
            finally:
                signals.remove()
    finally:
        if executor is not None:  # a timed-out env call may still run: do not wait for it
            executor.shutdown(wait=False, cancel_futures=True)
    if signals.received:
        name = signal.Signals(signals.received[0]).name
        raise RunInterrupted(
            f"{name}: stopped after {orchestrator.played} episodes; finished episodes are "
            f"stored in {store.path} under run {orchestrator.run_id}; rerun the same command "
            "to resume", signals.received[0])
    if failure is not None:
        raise failure
    return orchestrator.summary()


@contextlib.contextmanager
def _older_objects_frozen() -> Iterator[None]:
    """Leave the objects alive before the episodes start (imported modules, the plan) out of
    the cyclic garbage collector's passes while they play (`gc.freeze`): its full passes then
    scan what the run makes, not the whole heap. Everything is handed back afterwards."""
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


def run(config: RunConfig, **kwargs: Any) -> RunSummary:
    """Synchronous entry point: opens the store at ``config.db`` and runs `run_async`."""
    with Store(config.db) as store:
        return asyncio.run(run_async(config, store=store, **kwargs))
