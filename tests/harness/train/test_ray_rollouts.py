"""Training rollouts on Ray env workers (``[rollout] executor = "ray"``): for a fixed seed,
the same transitions, per-step advantage inputs, advantages (GiGPO, tree) and losses as
local rollouts, over several updates, on a tiny model."""

from __future__ import annotations

import os

import numpy as np
import pytest

os.environ.update({"RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0", "RAY_AUTH_MODE": "disabled"})

import ray  # noqa: E402 - the ray extra (in dev) is required here

from harness.executors.ray_envs import RaySuite  # noqa: E402
from harness.train.advantages import estimate  # noqa: E402
from harness.train.config import make_train_config  # noqa: E402
from harness.train.trainer import Trainer  # noqa: E402

pytestmark = pytest.mark.xdist_group("ray")  # one worker: its Ray instances never overlap

LOSSES = ("loss", "pg_loss", "kl", "entropy", "grad_norm", "mean_reward",
          "advantage_abs_mean", "nonzero_advantage_fraction")


@pytest.fixture(scope="module")
def work_dir(tmp_path_factory):
    """One work folder for every trainer here: the SFT warm start (which makes the tiny
    model reach the goal sometimes, so that advantages are not all zero) runs once."""
    return tmp_path_factory.mktemp("ray-rollouts")


def _config(tmp_path, tiny_shape, executor: str, algorithm: dict, rollout: dict):
    return make_train_config({
        "name": "t", "suite": "frozenlake-random@1", "updates": 2, "checkpoint_every": 0,
        "transitions_every": 0, "out_dir": str(tmp_path / "out"), "db": str(tmp_path / "h.db"),
        "model": tiny_shape, "sft": {"steps": 120, "batch_size": 16, "lr": 2e-2, "save_at": []},
        "rollout": {"tasks_per_update": 3, "group_size": 4, "max_steps": 10,
                    "executor": executor, "env_workers": 2, **rollout},
        "algorithm": {"kl_coef": 0.05, "entropy_coef": 0.01, **algorithm},
        "optim": {"lr": 1e-2, "micro_batch": 8}})


def _updates(tmp_path, tiny_shape, executor, algorithm, rollout):
    config = _config(tmp_path, tiny_shape, executor, algorithm, rollout)
    trainer = Trainer(config, 5, work_dir=tmp_path)
    trainer.prepare()
    out = []
    for _ in range(config.updates):
        result = trainer.update()
        batch = result.batch
        advantages = estimate(config.algorithm.estimator, batch.inputs,
                              **config.algorithm.estimator_params())
        out.append((result.metrics, batch, advantages))
    return trainer, out


@pytest.mark.parametrize("algorithm, rollout", [
    ({"name": "gigpo"}, {}),
    ({"name": "tree"}, {"branches": 2, "branch_steps": [1]})], ids=["gigpo", "tree"])
def test_ray_env_workers_give_the_same_advantages_and_losses(work_dir, tiny_shape,
                                                             ray_instance, algorithm, rollout):
    _, local = _updates(work_dir, tiny_shape, "local", algorithm, rollout)
    trainer, remote = _updates(work_dir, tiny_shape, "ray", algorithm, rollout)
    assert isinstance(trainer.rollout_suite, RaySuite)
    assert len(trainer.rollout_suite._pool.workers) == 2
    for (m_local, b_local, a_local), (m_ray, b_ray, a_ray) in zip(local, remote, strict=True):
        assert b_ray.transitions == b_local.transitions
        for name in ("episode", "group", "reward", "state_key", "node", "parent"):
            np.testing.assert_array_equal(getattr(b_ray.inputs, name),
                                          getattr(b_local.inputs, name), err_msg=name)
        np.testing.assert_array_equal(a_ray.advantages, a_local.advantages)
        assert [(r.key, r.total_reward, r.n_steps, r.final_observation)
                for r in b_ray.episodes] == [(r.key, r.total_reward, r.n_steps,
                                              r.final_observation) for r in b_local.episodes]
        for key in LOSSES:
            assert m_ray[key] == m_local[key], key
    assert len(local) == 2 and local[0][0]["loss"] != local[1][0]["loss"]
    assert any(np.abs(a.advantages).sum() > 0 for _, _, a in local)  # a real signal


def test_rollout_executor_settings_are_checked(tmp_path, tiny_shape):
    from harness.core import ConfigError

    for rollout, message in (({"executor": "dask"}, "must be local, ray or ray:ADDRESS"),
                             ({"executor": "ray", "env_workers": 0}, "rollout.env_workers")):
        with pytest.raises(ConfigError, match=message):
            _config(tmp_path, tiny_shape, "local", {"name": "gigpo"}, rollout)
    config = _config(tmp_path, tiny_shape, "ray:127.0.0.1:6379", {"name": "gigpo"}, {})
    assert config.rollout.executor == "ray:127.0.0.1:6379"
    assert config.to_dict()["rollout"]["env_workers"] == 2
