"""Training configs: defaults from the papers, conflicts with their fix, TOML round trips."""

from __future__ import annotations

from dataclasses import fields

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.core import ConfigError, UnknownNameError
from harness.train.config import (ALGORITHMS, AlgorithmConfig, GiGPOConfig, GRPOConfig,
                                  PPOConfig, TrainConfig, config_help, load_train_config,
                                  make_train_config)


def test_every_field_has_help_text():
    from harness.train import config as module

    for cls in (TrainConfig, module.ModelConfig, module.RolloutConfig, module.OptimConfig,
                module.SFTConfig, module.EvalConfig, *ALGORITHMS.values()):
        for name, text in config_help(cls).items():
            if name in ("model", "rollout", "algorithm", "optim", "sft", "eval"):
                continue
            assert text, f"{cls.__name__}.{name} has no help text"


def test_paper_defaults():
    assert GRPOConfig().kl_coef == 0.04 and GRPOConfig().aggregation == "seq-mean-token-mean"
    assert ALGORITHMS["dr_grpo"]().aggregation == "seq-mean-token-sum-norm"
    assert GiGPOConfig().gamma == 0.95 and GiGPOConfig().step_weight == 1.0
    assert PPOConfig().lam == 0.95 and PPOConfig().estimator == "gae"
    assert set(ALGORITHMS) == {"grpo", "dr_grpo", "rloo", "reinforce_pp", "ppo", "gigpo",
                               "tree"}


@pytest.mark.parametrize("values,match", [
    ({"rollout": {"branches": 2, "branch_steps": [1]}}, "go with algorithm 'tree'"),
    ({"algorithm": {"name": "tree"}}, "go with algorithm 'tree'"),
    ({"algorithm": {"name": "tree"}, "rollout": {"branches": 2}}, "needs rollout.branch_steps"),
    ({"algorithm": {"name": "tree"}, "rollout": {"branches": 2, "branch_steps": [0],
                                                 "context": "episode"}}, "context = 'step'"),
    ({"rollout": {"group_size": 1}}, "set rollout.group_size >= 2 or use algorithm 'ppo'"),
    ({"rollout": {"context": "episode", "history": 2}}, "set history = 0"),
    ({"algorithm": {"dual_clip": 0.5}}, "dual_clip must be > 1"),
    ({"algorithm": {"clip_low": 1.5}}, r"clip_low must be in \[0.0, 1.0\]"),
    ({"sft": {"source": "store", "steps": 5}}, "needs sft.store_policy"),
    ({"optim": {"micro_batch": 0}}, "micro_batch must be >= 1"),
])
def test_conflicts_name_the_settings_and_the_fix(values, match):
    with pytest.raises(ConfigError, match=match):
        make_train_config(values)


@pytest.mark.parametrize("values,match", [
    ({"algorithm": {"name": "grop"}}, "did you mean 'grpo'"),
    ({"rollout": {"grup_size": 4}}, "did you mean 'group_size'"),
    ({"algorithm": {"name": "ppo", "step_weight": 1.0}}, "unknown algorithm 'ppo' key"),
    ({"algorithm": {"aggregation": "token_mean"}}, "did you mean 'token-mean'"),
    ({"updatse": 3}, "did you mean 'updates'"),
])
def test_unknown_names_suggest_the_right_one(values, match):
    with pytest.raises(UnknownNameError, match=match):
        make_train_config(values)


def test_ppo_group_size_one_is_allowed():
    assert make_train_config({"algorithm": {"name": "ppo"},
                              "rollout": {"group_size": 1}}).rollout.group_size == 1


def test_toml_file_and_overrides(tmp_path):
    path = tmp_path / "r.toml"
    path.write_text('name = "x"\nupdates = 5\n[algorithm]\nname = "gigpo"\nkl_coef = 0\n'
                    '[rollout]\ngroup_size = 4\nbranch_steps = []\n')
    config = load_train_config(path, {"updates": 9})
    assert (config.name, config.updates) == ("x", 9)
    assert isinstance(config.algorithm, GiGPOConfig) and config.algorithm.kl_coef == 0.0
    with pytest.raises(ConfigError, match="does not exist"):
        load_train_config(tmp_path / "missing.toml")
    (tmp_path / "bad.toml").write_text("updates = = 3")
    with pytest.raises(ConfigError, match="malformed TOML"):
        load_train_config(tmp_path / "bad.toml")


@settings(max_examples=40, deadline=None)
@given(name=st.sampled_from(sorted(ALGORITHMS)), clip=st.floats(0.05, 0.5),
       group=st.integers(2, 16), lr=st.floats(1e-6, 1e-2), epochs=st.integers(1, 4))
def test_to_dict_round_trips(name, clip, group, lr, epochs):
    extra = {"rollout": {"group_size": group}}
    if name == "tree":
        extra["rollout"].update(branches=2, branch_steps=[0])
    config = make_train_config({"algorithm": {"name": name, "clip_high": clip,
                                              "epochs": epochs}, "optim": {"lr": lr}, **extra})
    again = make_train_config(config.to_dict())
    assert again == config
    assert isinstance(again.algorithm, AlgorithmConfig)
    assert {f.name for f in fields(type(again.algorithm))} >= {"clip_low", "clip_high"}
