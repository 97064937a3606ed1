"""Training runs on CPU: determinism, exact resume, checkpoints, metrics, transitions."""

from __future__ import annotations

import json

import pytest

from harness.train.checkpoint import CHECKPOINT_META, load_checkpoint_meta
from harness.train.config import make_train_config
from harness.train.trainer import Trainer
from harness.train.transitions import load_transitions, transitions_frame


def recipe(tmp_path, tiny_shape, **changes):
    """GRPO with KL and an entropy bonus, so that every sample carries a gradient even
    when a random-init model never reaches the goal."""
    values = {"name": "t", "suite": "frozenlake-random@1", "updates": 3,
              "out_dir": str(tmp_path / "out"), "db": str(tmp_path / "h.db"),
              "model": tiny_shape,
              "rollout": {"tasks_per_update": 2, "group_size": 3, "max_steps": 4},
              "algorithm": {"name": "grpo", "kl_coef": 0.05, "entropy_coef": 0.01},
              "optim": {"lr": 1e-2, "micro_batch": 4}}
    for key, value in changes.items():
        if isinstance(value, dict):
            values[key] = {**values.get(key, {}), **value}
        else:
            values[key] = value
    return make_train_config(values)


def losses(trainer: Trainer, n: int) -> list[float]:
    return [trainer.update().metrics["loss"] for _ in range(n)]


def test_same_seed_gives_identical_losses_for_three_updates(tmp_path, tiny_shape):
    config = recipe(tmp_path, tiny_shape)
    runs = []
    for copy in ("a", "b"):
        trainer = Trainer(config, 7, work_dir=tmp_path / copy)
        trainer.prepare()
        runs.append(losses(trainer, 3))
    assert runs[0] == runs[1]
    assert all(loss != 0.0 for loss in runs[0])
    other = Trainer(config, 8, work_dir=tmp_path / "c")
    other.prepare()
    assert losses(other, 3) != runs[0]


def test_resume_from_a_checkpoint_reproduces_the_next_update_exactly(tmp_path, tiny_shape):
    config = recipe(tmp_path, tiny_shape, checkpoint_every=2)
    straight = Trainer(config, 0, work_dir=tmp_path / "straight")
    straight.prepare()
    expected = [straight.update().metrics for _ in range(3)]

    first = Trainer(config, 0, work_dir=tmp_path / "resumed")
    first.prepare()
    first.update(), first.update()  # step-000002 is written after the second update
    resumed = Trainer(config, 0, resume=True, work_dir=tmp_path / "resumed")
    resumed.prepare()
    assert resumed.step == 2
    got = resumed.update().metrics
    for key in ("loss", "pg_loss", "kl", "entropy", "grad_norm", "mean_reward"):
        assert got[key] == expected[2][key], key


def test_checkpoint_layout_and_metadata(tmp_path, tiny_shape):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    config = recipe(tmp_path, tiny_shape, updates=1)
    trainer = Trainer(config, 3, work_dir=tmp_path / "w")
    trainer.prepare()
    path = trainer.run()
    assert path.name == "step-000001"
    for name in ("config.json", "model.safetensors", "tokenizer.json", CHECKPOINT_META,
                 "trainer_state.pt"):
        assert (path / name).exists(), name
    meta = load_checkpoint_meta(path)
    assert meta["format"] == "harness-train-checkpoint"
    assert (meta["train_seed"], meta["step"], meta["algorithm"]) == (3, 1, "grpo")
    assert meta["scaffold"] == {"id": "bare@2", "name": "bare", "version": 2, "history": 0,
                               "max_action_chars": 200, "chat_template": "compact"}
    assert meta["train_config"]["rollout"]["group_size"] == 3
    assert "loss" in meta["metrics"]
    json.dumps(meta)  # plain JSON
    model = AutoModelForCausalLM.from_pretrained(path)
    tokenizer = AutoTokenizer.from_pretrained(path)
    assert tokenizer.chat_template == trainer.loaded.tokenizer.chat_template
    assert sum(p.numel() for p in model.parameters()) > 0


def test_transitions_are_saved_and_train_on_the_sampled_ids(tmp_path, tiny_shape):
    config = recipe(tmp_path, tiny_shape, updates=1)
    trainer = Trainer(config, 0, work_dir=tmp_path / "w")
    trainer.prepare()
    result = trainer.update()
    saved = load_transitions(trainer.seed_dir / "transitions" / "update-000000.jsonl.gz")
    assert saved == result.batch.transitions
    frame = transitions_frame(saved)
    frame.to_parquet(tmp_path / "transitions.parquet")  # exportable as it is
    assert len(frame) == len(saved) and {"prompt_ids", "response_ids", "logprobs", "loss_mask",
                                         "group_id", "state_keys", "seed",
                                         "policy_version"} <= set(frame.columns)
    tok = trainer.tokenization
    for t in saved:
        # the action sent to the env is text derived from the sampled ids, never re-encoded
        assert trainer.scaffold.parse(tok.decode(t.response_ids)).env_action == t.actions[0]
        assert len(t.logprobs) == len(t.response_ids) == len(t.loss_mask)
        assert all(lp <= 0.0 for lp in t.logprobs)
    groups = {t.group_id for t in saved}
    assert len(groups) == 2  # tasks_per_update groups


def test_episode_context_masks_observation_turns(tmp_path, tiny_shape):
    config = recipe(tmp_path, tiny_shape, updates=1,
                    rollout={"context": "episode", "max_steps": 3})
    trainer = Trainer(config, 0, work_dir=tmp_path / "w")
    trainer.prepare()
    batch = trainer.update().batch
    assert len(batch.transitions) == 2 * 3  # one per episode
    tok = trainer.tokenization
    for t in batch.transitions:
        n_steps = len(t.step_rewards)
        sampled = [i for i, m in zip(t.response_ids, t.loss_mask) if m]
        assert sum(t.loss_mask) == len(sampled)
        assert sorted(set(s for s in t.token_steps if s >= 0)) == list(range(n_steps))
        # the observation turns are exactly the env's text encoded by the template
        turns = [i for i, m in zip(t.response_ids, t.loss_mask) if not m]
        assert all(lp == 0.0 for lp, m in zip(t.logprobs, t.loss_mask) if not m)
        if n_steps > 1:
            assert tok.decode(turns).count("Actions: Left, Down, Right, Up") == n_steps - 1


@pytest.mark.parametrize("algorithm,extra", [
    ("ppo", {}), ("gigpo", {}), ("rloo", {}), ("dr_grpo", {}), ("reinforce_pp", {}),
    ("tree", {"rollout": {"branches": 2, "branch_steps": [0, 1]}}),
    ("ppo", {"rollout": {"context": "episode"}}), ("gigpo", {"rollout": {"context": "episode"}}),
])
def test_every_algorithm_runs_an_update(tmp_path, tiny_shape, algorithm, extra):
    config = recipe(tmp_path, tiny_shape, updates=1, algorithm={"name": algorithm}, **extra)
    trainer = Trainer(config, 0, work_dir=tmp_path / "w")
    trainer.prepare()
    metrics = trainer.update().metrics
    for key in ("mean_reward", "success", "entropy", "grad_norm", "tokens_per_s",
                "zero_variance_groups", "clip_fraction"):
        assert key in metrics, key
    if algorithm == "gigpo":
        assert metrics["step_group_size_mean"] >= 1.0
    if algorithm == "ppo":
        assert "value_loss" in metrics
    if algorithm == "tree":
        assert 2 * 3 * 2 <= metrics["episodes"] <= 2 * 3 * 4  # forks at steps 0 and 1


def test_lora_training_uses_the_disabled_adapter_as_reference(tmp_path, tiny_shape):
    from transformers import AutoModelForCausalLM

    config = recipe(tmp_path, tiny_shape, updates=1, checkpoint_every=1,
                    model={"lora_rank": 4, "lora_alpha": 8.0})
    trainer = Trainer(config, 0, work_dir=tmp_path / "w")
    trainer.prepare()
    assert trainer.loaded.lora and trainer.learner.reference is None
    metrics = trainer.update().metrics
    assert metrics["kl"] >= 0.0 and metrics["grad_norm"] > 0.0
    path = trainer.seed_dir / "step-000001"
    assert (path / "adapter").is_dir()
    merged = AutoModelForCausalLM.from_pretrained(path)  # a plain model, adapters merged
    assert not any("lora" in name for name, _ in merged.named_parameters())
    resumed = Trainer(config, 0, resume=True, work_dir=tmp_path / "w")
    resumed.prepare()
    assert resumed.step == 1 and resumed.loaded.lora


def test_checkpoints_resolve_through_the_checkpoint_policy_reader(tmp_path, tiny_shape):
    from harness.policies.checkpoint import read_checkpoint, resolve_checkpoint

    config = recipe(tmp_path, tiny_shape, updates=2, checkpoint_every=1)
    trainer = Trainer(config, 5, work_dir=tmp_path / "w")
    trainer.prepare()
    trainer.run()
    latest = resolve_checkpoint(trainer.seed_dir)
    assert latest.name == "step-000002"
    meta = read_checkpoint(latest)
    assert (meta["train_seed"], meta["step"]) == (5, 2)


def test_a_specialists_sft_demonstrations_are_its_task_types_only(tmp_path, tiny_shape,
                                                                  monkeypatch):
    import harness.train.sft as sft_module

    seen = []
    real = sft_module.oracle_demonstrations
    monkeypatch.setattr(sft_module, "oracle_demonstrations",
                        lambda suite, tasks, **k: seen.extend(tasks) or real(suite, tasks, **k))
    config = recipe(tmp_path, tiny_shape, rollout={"task_types": ["near", "mid"]},
                    sft={"steps": 1, "batch_size": 2, "max_tasks": 5})
    trainer = Trainer(config, 0, work_dir=tmp_path / "w")
    trainer.prepare()
    assert len(seen) == 5 and {t.task_type for t in seen} <= {"near", "mid"}
    assert seen == trainer.train[:5]


def test_a_specialist_trains_on_its_task_types_only(tmp_path, tiny_shape, monkeypatch):
    config = recipe(tmp_path, tiny_shape, rollout={"task_types": ["far"]})
    trainer = Trainer(config, 0, work_dir=tmp_path / "w")
    assert trainer.train and {t.task_type for t in trainer.train} == {"far"}
    assert len(trainer.train) < len(trainer.suite.tasks("train"))
    trainer.prepare()
    import harness.train.trainer as trainer_module

    seen = []
    real = trainer_module.collect
    monkeypatch.setattr(trainer_module, "collect",
                        lambda suite, tasks, *a, **k: seen.extend(tasks) or real(
                            suite, tasks, *a, **k))
    trainer.update()
    assert seen and {t.task_type for t in seen} == {"far"}
    from harness.core import UnknownNameError

    with pytest.raises(UnknownNameError, match="did you mean 'far'"):
        Trainer(recipe(tmp_path, tiny_shape, rollout={"task_types": ["fra"]}), 0,
                work_dir=tmp_path / "x")


def test_stored_demonstrations_keep_the_chosen_tasks_only(tmp_path):
    """The oracle's stored episodes on frozenlake-random, read back whole and then for two of
    their task ids (a specialist's tasks): only those two come back, step for step."""
    from harness.cli import main
    from harness.core import HarnessError
    from harness.store import load_episodes
    from harness.train.sft import stored_demonstrations

    db = str(tmp_path / "demo.db")
    assert main(["run", "--policy", "oracle", "--suite", "frozenlake-random@1", "--split",
                 "train", "--tasks", "4", "--db", db]) == 0
    episodes = load_episodes(db)
    assert episodes.success.all() and len(episodes) == 4
    every = stored_demonstrations(db, "oracle", "frozenlake-random@1")
    chosen = sorted(episodes.task_id)[:2]
    some = stored_demonstrations(db, "oracle", "frozenlake-random@1", task_ids=chosen)
    by_task = dict(zip(episodes.task_id, every))  # episodes come back in the frame's order
    assert len(every) == 4 and len(some) == 2
    assert sorted(map(str, some)) == sorted(str(by_task[t]) for t in chosen)
    with pytest.raises(HarnessError, match="chosen task types"):
        stored_demonstrations(db, "oracle", "frozenlake-random@1", task_ids=["no-such-task"])
