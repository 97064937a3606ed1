"""The async runner: plans, determinism, resume, errors, timeouts, error-rate stop."""

import asyncio
import functools
import json
import os
import signal

import pytest

from harness.config import RunConfig
from harness.policies import Decision, make_policy
from harness.runner import RunAborted, RunInterrupted, run
from harness.store import Store, load_episodes, load_turns


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


class _ScriptedChat:
    """A `ChatBackend` that answers without a model (the runner under test, not a model):
    a move chosen by the request's sampling seed (or always `move`), in think@1's format; from
    call `fail_on` on, the server is gone (ConnectionError)."""

    context_tokens = None

    def __init__(self, fail_on=None, move=None):
        self.calls, self.fail_on, self.move, self.sent = 0, fail_on, move, []

    async def chat(self, messages, sampling):
        from harness.policies.model import ChatResult, Completion

        self.calls += 1
        self.sent.append(messages)
        if self.fail_on is not None and self.calls >= self.fail_on:
            raise ConnectionError("the model server went away")
        move = self.move or ("Left", "Down", "Right", "Up")[sampling.seed % 4]
        text = f"<think>call {self.calls}</think><action>{move}</action>"
        prompt = sum(len(m["content"]) for m in messages)
        return ChatResult((Completion(text),), prompt_tokens=prompt, completion_tokens=len(text))

    def count_tokens(self, messages):
        return None

    def describe(self):
        return {"model": "scripted-chat"}


def _model_policy(backend):
    from harness.policies.model import ModelPolicy
    from harness.policies.specs import ModelOptions

    return ModelPolicy("chat:scripted", backend, ModelOptions(), scaffold_pinned=True)


def _keys(frame):
    from harness.records import EpisodeKey

    return [EpisodeKey(r.policy, r.suite, r.task_id, int(r.eval_seed), int(r.sample))
            for r in frame.itertuples()]


def test_every_model_turn_is_stored_with_its_messages_reply_tokens_and_latency(tmp_path):
    config = _config(tmp_path, policies=("chat:scripted",), n_tasks=3, eval_seeds=(0,),
                     concurrency=1)
    backend = _ScriptedChat()
    summary = run(config, policies=[_model_policy(backend)])
    frame = load_episodes(config.db)
    assert len(frame) == 3 and frame.n_steps.sum() == backend.calls
    stored = []
    with Store(config.db, readonly=True) as store:
        for row, key in zip(frame.itertuples(), _keys(frame)):
            turns, steps = store.load_turns(summary.run_id, key), store.load_steps(
                summary.run_id, key)
            assert [t.t for t in turns] == list(range(row.n_steps))
            assert [t.raw_output for t in turns] == [s.raw_output for s in steps]
            assert all(t.raw_output.startswith("<think>call ") and t.parsed for t in turns)
            assert sum(t.prompt_tokens for t in turns) == row.prompt_tokens
            assert sum(t.completion_tokens for t in turns) == row.completion_tokens
            assert sum(t.latency_s for t in turns) == pytest.approx(row.model_latency_s)
            for turn, step in zip(turns, steps):
                assert turn.messages[-1]["role"] == "user"
                assert step.observation in turn.messages[-1]["content"]
            stored += [t.messages for t in turns]
    as_text = functools.partial(json.dumps, sort_keys=True)
    assert sorted(map(as_text, stored)) == sorted(map(as_text, backend.sent))


def test_scripted_policies_and_runs_without_turns_store_none(tmp_path):
    scripted = run(_config(tmp_path, n_tasks=2))
    config = _config(tmp_path, policies=("chat:scripted",), n_tasks=2, eval_seeds=(0,),
                     store_turns=False)
    model = run(config, policies=[_model_policy(_ScriptedChat())])
    assert scripted.run_id != model.run_id
    assert model.run_id == _config(tmp_path, policies=("chat:scripted",), n_tasks=2,
                                   eval_seeds=(0,)).resolved_run_id()  # not in the identity
    with Store(config.db, readonly=True) as store:
        assert store.query("SELECT COUNT(*) FROM turns") == [(0,)]
        for run_id, frame in store.load_episodes().groupby("run_id"):
            assert all(store.load_turns(run_id, key) == [] for key in _keys(frame))
        assert (store.load_episodes(run_id=model.run_id).prompt_tokens > 0).all()


def test_an_episode_that_fails_mid_way_keeps_the_turns_it_played(tmp_path):
    config = _config(tmp_path, policies=("chat:scripted",), n_tasks=1, eval_seeds=(0,),
                     max_error_rate=1.0)
    backend = _ScriptedChat(fail_on=3, move="Up")  # the start is on the top row: no move
    summary = run(config, policies=[_model_policy(backend)])
    frame = load_episodes(config.db)
    assert list(frame.status) == ["error"] and "server went away" in frame.error.iloc[0]
    turns = load_turns(config.db, summary.run_id, _keys(frame)[0])
    assert [t.t for t in turns] == [0, 1]  # the third call raised: no reply to keep


def test_task_ids_plan_exactly_those_tasks_in_the_order_given(tmp_path):
    from harness.runner import plan_jobs
    from tasks import get_suite

    ids = ("8x8-0270", "4x4-0252", "6x6-b1-0231", "4x4-0250")
    config = _config(tmp_path, n_tasks=None, task_ids=ids, eval_seeds=(0,))
    suites = [get_suite("frozenlake@1"), get_suite("sokoban@1")]
    jobs = list(plan_jobs(config, [make_policy("random")], suites))
    assert [(job.suite.id, job.task.id) for job in jobs] == [
        ("frozenlake@1", "8x8-0270"), ("frozenlake@1", "4x4-0252"), ("sokoban@1", "6x6-b1-0231"),
        ("frozenlake@1", "4x4-0250")]


def test_provenance_names_the_sandbox_containment_once_a_suite_loaded_it():
    import importlib
    import sys

    from harness.runner import provenance

    loaded = "tasks.sandbox" in sys.modules
    sandbox = importlib.import_module("tasks.sandbox")
    label = provenance()["packages"]["sandbox"]
    assert sandbox.load_profile().label in label and " -> host " in label
    if not loaded:
        del sys.modules["tasks.sandbox"]
        assert "sandbox" not in provenance()["packages"]
        sys.modules["tasks.sandbox"] = sandbox
