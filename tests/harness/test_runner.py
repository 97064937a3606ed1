"""The async runner: plans, determinism, resume, errors, timeouts, error-rate stop."""

import asyncio
import os
import signal

import pytest

from harness.config import RunConfig
from harness.policies import Decision, make_policy
from harness.runner import RunAborted, RunInterrupted, run
from harness.store import Store, load_episodes


def _config(tmp_path, **overrides):
    values = dict(policies=("random", "oracle"), suites=("frozenlake@1",), n_tasks=4,
                  eval_seeds=(0, 1), db=str(tmp_path / "r.db"))
    values.update(overrides)
    return RunConfig(**values)


def test_plays_every_planned_episode_once(tmp_path):
    summary = run(_config(tmp_path, samples=2))
    assert (summary.planned, summary.played, summary.skipped, summary.errors) == (32, 32, 0, 0)
    frame = load_episodes(tmp_path / "r.db")
    assert len(frame) == 32
    assert not frame.duplicated(["policy", "suite", "task_id", "eval_seed", "sample"]).any()
    assert set(frame["sample"]) == {0, 1}
    oracle = frame[frame.policy == "oracle"]
    assert oracle.success.all(), "the oracle solves every deterministic frozenlake map"


def test_rerun_resumes_and_skips_everything(tmp_path):
    config = _config(tmp_path)
    first = run(config)
    second = run(config)
    assert second.run_id == first.run_id
    assert (second.played, second.skipped) == (0, first.planned)
    assert len(load_episodes(config.db)) == first.planned


def test_same_config_gives_same_results_in_a_fresh_store(tmp_path):
    a = run(_config(tmp_path, db=str(tmp_path / "a.db"), concurrency=1))
    b = run(_config(tmp_path, db=str(tmp_path / "b.db"), concurrency=5))
    columns = ["policy", "task_id", "eval_seed", "success", "n_steps", "total_reward"]
    frame_a = load_episodes(tmp_path / "a.db")[columns]
    frame_b = load_episodes(tmp_path / "b.db")[columns]
    assert a.run_id == b.run_id
    assert frame_a.equals(frame_b)
    with Store(tmp_path / "a.db") as sa, Store(tmp_path / "b.db") as sb:
        row = frame_a.iloc[0]
        from harness.records import EpisodeKey
        key = EpisodeKey(row.policy, "frozenlake@1", row.task_id, int(row.eval_seed), 0)
        assert sa.load_steps(a.run_id, key) == sb.load_steps(b.run_id, key)


def test_trajectory_matches_episode_totals(tmp_path):
    config = _config(tmp_path, policies=("random",), suites=("sokoban@1",), n_tasks=2)
    summary = run(config)
    with Store(config.db) as store:
        for _, row in store.load_episodes().iterrows():
            from harness.records import EpisodeKey
            steps = store.load_steps(summary.run_id, EpisodeKey(
                row.policy, row.suite, row.task_id, int(row.eval_seed), int(row["sample"])))
            assert len(steps) == row.n_steps
            assert sum(s.reward for s in steps) == pytest.approx(row.total_reward)
            assert [s.t for s in steps] == list(range(len(steps)))
            assert steps[-1].terminated or steps[-1].truncated


def test_max_steps_cap_truncates(tmp_path):
    run(_config(tmp_path, policies=("noop",), max_steps=3))
    frame = load_episodes(tmp_path / "r.db")
    assert (frame.n_steps <= 3).all() and frame[frame.n_steps == 3].truncated.all()


class _Flaky:
    """Raises on every other task; sleeps forever on task ids ending in 3 when asked."""

    train_seed = None
    provenance = {"kind": "test"}

    def __init__(self, id="flaky", hang=False, always_fail=False):
        self.id, self.hang, self.always_fail = id, hang, always_fail
        self.random = make_policy("random")

    async def act(self, context):
        index = int(context.task.id[-1])
        if self.always_fail or index % 2:
            raise ValueError(f"model output could not be decoded for {context.task.id}")
        if self.hang and index % 4 == 0:
            await asyncio.sleep(60)
        return await self.random.act(context)


def test_exceptions_become_error_records_never_successes(tmp_path):
    config = _config(tmp_path, policies=("flaky",), n_tasks=6, max_error_rate=1.0)
    summary = run(config, policies=[_Flaky()])
    frame = load_episodes(config.db)
    errors = frame[frame.status == "error"]
    assert summary.errors == len(errors) > 0
    assert not errors.success.any()
    assert errors.error.str.contains("ValueError: model output could not be decoded").all()


def test_wall_clock_timeout_is_recorded(tmp_path):
    config = _config(tmp_path, policies=("slow",), n_tasks=6, eval_seeds=(0,),
                     episode_timeout_s=0.2, max_error_rate=1.0)
    run(config, policies=[_Flaky("slow", hang=True)])
    frame = load_episodes(config.db)
    timeouts = frame[frame.status == "timeout"]
    assert len(timeouts) >= 1 and not timeouts.success.any()
    assert timeouts.error.str.contains("exceeded 0.2s").all()


class _HangsThenSignals:
    """Every episode hangs; the first one sends this process SIGINT after 0.3 s."""

    id, train_seed, provenance = "hangs", None, {"kind": "test"}

    def __init__(self):
        self.sent = False

    async def act(self, context):
        if not self.sent:
            self.sent = True
            asyncio.get_running_loop().call_later(0.3, os.kill, os.getpid(), signal.SIGINT)
        await asyncio.sleep(60)


def test_a_signal_during_an_episode_is_an_interruption_not_a_timeout(tmp_path):
    config = _config(tmp_path, policies=("hangs",), n_tasks=4, eval_seeds=(0,),
                     episode_timeout_s=30.0, concurrency=2)
    with pytest.raises(RunInterrupted, match="SIGINT: stopped after 0 episodes"):
        run(config, policies=[_HangsThenSignals()])
    assert load_episodes(config.db).empty


def test_run_stops_when_error_rate_exceeded_and_keeps_finished(tmp_path):
    config = _config(tmp_path, policies=("broken",), n_tasks=30, concurrency=2,
                     max_error_rate=0.2)
    with pytest.raises(RunAborted, match="episodes failed"):
        run(config, policies=[_Flaky("broken", always_fail=True)])
    frame = load_episodes(config.db)
    assert 10 <= len(frame) < 60


def test_run_needs_policies_and_suites(tmp_path):
    from harness.core import HarnessError

    with pytest.raises(HarnessError, match="at least one policy"):
        run(_config(tmp_path, policies=()))


def test_rerun_plays_failed_episodes_again_and_replaces_them(tmp_path):
    config = _config(tmp_path, policies=("flaky",), n_tasks=6, max_error_rate=1.0)
    first = run(config, policies=[_Flaky()])
    assert first.errors > 0
    healed = _Flaky()
    healed.always_fail, healed.act = False, healed.random.act  # the same policy id, now healthy
    second = run(config, policies=[healed])
    assert (second.played, second.skipped) == (first.errors, first.planned - first.errors)
    frame = load_episodes(config.db)
    assert len(frame) == first.planned and (frame.status == "ok").all()


class _Counting:
    """A random policy whose every decision reports one retry and 10 ms of model latency."""

    train_seed = None
    provenance = {"kind": "test"}
    id = "counting"

    def __init__(self):
        self.random = make_policy("random")

    async def act(self, context):
        decision = await self.random.act(context)
        return Decision(decision.action, decision.raw_output, prompt_tokens=3,
                        completion_tokens=2, latency_s=0.01, retries=1)


def test_token_counts_retries_and_latency_are_summed_per_episode(tmp_path):
    config = _config(tmp_path, policies=("counting",), n_tasks=3, eval_seeds=(0,))
    run(config, policies=[_Counting()])
    frame = load_episodes(config.db)
    assert (frame.retries == frame.n_steps).all()
    assert (frame.prompt_tokens == 3 * frame.n_steps).all()
    assert (frame.completion_tokens == 2 * frame.n_steps).all()
    assert frame.model_latency_s.to_numpy() == pytest.approx(0.01 * frame.n_steps.to_numpy())
