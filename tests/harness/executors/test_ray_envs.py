"""Environment workers on Ray: Env proxies (`RaySuite`) that step, key, snapshot and
restore exactly as local Envs; suites' declared resources; `harness run --executor ray
--env-workers N` storing the same episodes as the local runner with the Env reused."""

from __future__ import annotations

import os
from dataclasses import replace

import pytest

os.environ.update({"RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0", "RAY_AUTH_MODE": "disabled"})

import ray  # noqa: E402 - the ray extra (in dev) is required here

from harness.config import make_run_config  # noqa: E402
from harness.core import ConfigError, HarnessError  # noqa: E402
from harness.executors import parse_executor  # noqa: E402
from harness.executors.ray_envs import (EnvWorkerPool, RaySuite, SuiteResources,  # noqa: E402
                                        _OneEnvSuite, episode_workers, suite_resources)
from harness.executors.ray_executor import (EpisodeTask, load_attempts,  # noqa: E402
                                            play_episode, run_on_ray)
from harness.runner import run  # noqa: E402
from harness.store import Store, load_episodes  # noqa: E402
from tasks import get_suite  # noqa: E402
from tasks.base import HasStateKey, Snapshotable  # noqa: E402
from tasks.frozenlake import FrozenLakeSuite  # noqa: E402

pytestmark = pytest.mark.xdist_group("ray")  # one worker: its Ray instances never overlap


class _Declared(FrozenLakeSuite):
    resources = {"num_cpus": 0.5, "memory": 2 ** 20, "sandbox": True}


def test_suite_resources_default_declared_and_bad():
    assert suite_resources(get_suite("frozenlake@1")) == SuiteResources(1.0, 0, False)
    declared = suite_resources(_Declared())
    assert declared == SuiteResources(0.5, 2 ** 20, True)
    assert declared.actor_options() == {"num_cpus": 0.5, "memory": 2 ** 20,
                                        "resources": {"sandbox": 1}}
    assert SuiteResources().actor_options() == {"num_cpus": 1.0}
    bad = _Declared()
    bad.resources = 3
    with pytest.raises(HarnessError, match="resources must be"):
        suite_resources(bad)
    with pytest.raises(ConfigError, match="--env-workers needs"):
        parse_executor("local", env_workers=2)


def _trajectory(env, seed, actions):
    out = [env.reset(seed=seed)]
    for action in actions:
        key = env.state_key() if isinstance(env, HasStateKey) else None
        result = env.step(action)
        out.append((key, result.observation, result.reward, result.terminated, result.info))
        if result.terminated:
            break
    return out


def test_remote_envs_step_key_snapshot_and_restore_like_local_ones(ray_instance):
    suite = get_suite("frozenlake-random@1")
    remote = RaySuite(suite, EnvWorkerPool(ray, suite, 2))
    task = suite.tasks("train")[0].id
    actions = ["Right", "Down", "Down", "Right", "bogus", "Left"]
    local_env, remote_env = suite.make_env(task), remote.make_env(task)
    assert isinstance(remote_env, HasStateKey) and isinstance(remote_env, Snapshotable)
    assert remote_env.max_steps == local_env.max_steps
    assert _trajectory(remote_env, 3, actions) == _trajectory(local_env, 3, actions)
    # snapshot on one worker, restore into an Env on the other: the same continuation
    remote_env.reset(seed=4), local_env.reset(seed=4)
    remote_env.step("bogus"), local_env.step("bogus")
    copy = remote.make_env(task)
    assert copy.worker != remote_env.worker
    copy.restore(remote_env.snapshot())
    assert copy.state_key() == local_env.state_key()
    assert copy.step("Right").observation == local_env.step("Right").observation
    # step_all: one round trip per worker; each proxy's step returns its result
    envs = [remote.make_env(t.id) for t in suite.tasks("train")[:4]]
    locals_ = [suite.make_env(t.id) for t in suite.tasks("train")[:4]]
    for env in envs + locals_:
        env.reset(seed=1)
    remote.step_all(envs, ["Down"] * 4)
    before = [env.state_key() for env in envs]  # still the state the action was taken from
    assert before == [env.state_key() for env in locals_]
    assert [env.step("Down").observation for env in envs] == \
        [env.step("Down").observation for env in locals_]
    assert [env.state_key() for env in envs] == [env.state_key() for env in locals_]
    envs[0].reset(seed=1)
    remote.step_all(envs[:1], ["Up"])
    with pytest.raises(HarnessError, match="then asked for"):
        envs[0].step("Left")
    remote._pool.close()


def test_one_env_suite_reuses_the_env_of_the_same_task():
    suite = _OneEnvSuite(get_suite("frozenlake@1"))
    a, b = suite.tasks("test")[:2]
    first = suite.make_env(a.id)
    assert suite.make_env(a.id) is first and suite.make_env(b.id) is not first
    assert (suite.made, suite.reused, suite.id) == (2, 1, "frozenlake@1")


def test_episode_worker_reuses_its_env_and_plays_the_local_episode(ray_instance):
    suite = get_suite("sokoban@1")
    task = suite.tasks("test")[0]
    [worker] = episode_workers(ray, suite, 1, max_restarts=0)
    episodes = [EpisodeTask("random", suite.id, task.id, task.split, seed, 0, None, 60.0)
                for seed in (0, 1, 0)]
    played = [ray.get(worker.play.remote(e)) for e in episodes]
    assert ray.get(worker.env_counts.remote()) == (1, 2)
    here = [play_episode(e) for e in episodes]
    for (record, steps, _), (local_record, local_steps, _) in zip(played, here):
        assert replace(record, wall_s=0.0) == replace(local_record, wall_s=0.0)
        assert steps == local_steps and record.n_steps > 0
    assert replace(played[0][0], wall_s=0.0) == replace(played[2][0], wall_s=0.0)
    assert played[0][1] != played[1][1]  # another eval seed: another episode
    ray.kill(worker)


TIMING = ["wall_s", "model_latency_s", "run_id"]


def test_env_workers_store_the_same_episodes_as_local(tmp_path, ray_instance):
    values = {"policies": ["oracle", "random"], "suites": ["frozenlake@1", "sokoban@1"],
              "n_tasks": 2, "eval_seeds": 2, "samples": 2, "run_id": "same"}
    run(make_run_config({**values, "db": str(tmp_path / "local.db")}))
    config = make_run_config({**values, "db": str(tmp_path / "ray.db")})
    with Store(config.db) as store:
        with pytest.raises(HarnessError, match="needs CPU 6 .cluster: 2."):
            run_on_ray(config, parse_executor("ray", env_workers=3), store=store)
        summary = run_on_ray(config, parse_executor("ray", env_workers=1), store=store)
        attempts = load_attempts(store, "same")
    assert (summary.played, summary.errors) == (32, 0)
    order = ["policy", "suite", "task_id", "eval_seed", "sample"]
    local = load_episodes(tmp_path / "local.db").drop(columns=TIMING).sort_values(order)
    on_ray = load_episodes(tmp_path / "ray.db").drop(columns=TIMING).sort_values(order)
    assert local.reset_index(drop=True).equals(on_ray.reset_index(drop=True))
    assert len(attempts) == 32 and set(attempts["outcome"]) == {"ok"}
