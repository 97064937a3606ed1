"""`harness train` end to end on a tiny model: seeds, metrics and episodes in the store."""

from __future__ import annotations

import pytest

import harness.cli
from harness.store import Store
from harness.train.metrics_table import load_train_metrics


@pytest.fixture
def cli(monkeypatch):
    monkeypatch.setattr(harness.cli, "COMMAND_MODULES",
                        (*harness.cli.COMMAND_MODULES, "harness.train.cli"))
    return harness.cli.main


def write_recipe(tmp_path, tiny_shape, **top):
    model = "\n".join(f"{k} = {v!r}".replace("'", '"') for k, v in tiny_shape.items())
    extra = "\n".join(f"{k} = {v!r}".replace("'", '"') for k, v in top.items())
    path = tmp_path / "recipe.toml"
    path.write_text(f"""
name = "tiny-grpo"
suite = "frozenlake-random@1"
updates = 2
out_dir = "{tmp_path / 'out'}"
db = "{tmp_path / 'h.db'}"
{extra}
[model]
{model}
[rollout]
tasks_per_update = 2
group_size = 3
max_steps = 3
[algorithm]
name = "grpo"
kl_coef = 0.0
entropy_coef = 0.01
[eval]
n_tasks = 4
samples = 2
headroom_k = 2
""")
    return path


def test_train_two_seeds_store_metrics_and_episodes(cli, tmp_path, tiny_shape, capsys):
    path = write_recipe(tmp_path, tiny_shape)
    assert cli(["train", "--config", str(path), "--seeds", "0", "1"]) == 0
    out = capsys.readouterr().out
    assert "seed 0: 2 updates" in out and "seed 1: 2 updates" in out
    assert "headroom" in out and "(A) vs" in out
    with Store(tmp_path / "h.db") as store:
        runs = ["train-tiny-grpo-seed0", "train-tiny-grpo-seed1"]
        metrics = load_train_metrics(store, run_id="train-tiny-grpo")
        episodes = store.load_episodes(run_id=runs)
    assert sorted(zip(metrics["train_seed"], metrics["step"])) == [(0, 0), (0, 1), (1, 0),
                                                                    (1, 1)]
    for column in ("mean_reward", "success", "kl_behaviour", "entropy", "clip_fraction",
                   "grad_norm", "tokens_per_s", "zero_variance_groups"):
        assert column in metrics.columns, column
    counts = episodes.groupby(["policy", "train_seed"]).size().to_dict()
    assert counts == {("tiny-grpo", 0): 4, ("tiny-grpo", 1): 4,
                      ("tiny-grpo/sampled", 0): 8, ("tiny-grpo/sampled", 1): 8,
                      ("tiny-grpo@start", 0): 4, ("tiny-grpo@start", 1): 4,
                      ("tiny-grpo@start/sampled", 0): 8, ("tiny-grpo@start/sampled", 1): 8}
    assert set(episodes["split"]) == {"test"}


def test_a_run_without_rl_updates_evaluates_its_policy_once(cli, tmp_path, tiny_shape,
                                                           capsys):
    """updates = 0 (an SFT-only recipe): the start is the final policy, so it is evaluated
    once, under the final ids, with enough samples for the headroom; no before/after."""
    path = write_recipe(tmp_path, tiny_shape)
    path.write_text(path.read_text().replace("updates = 2", "updates = 0")
                    .replace("headroom_k = 2", "headroom_k = 3"))
    assert cli(["train", "--config", str(path), "--seeds", "0"]) == 0
    out = capsys.readouterr().out
    assert "seed 0: 0 updates" in out and "headroom" in out and "(A) vs" not in out
    with Store(tmp_path / "h.db") as store:
        episodes = store.load_episodes(run_id="train-tiny-grpo-seed0")
    assert episodes.groupby("policy").size().to_dict() == {"tiny-grpo": 4,
                                                           "tiny-grpo/sampled": 12}


def test_resume_continues_from_the_last_checkpoint(cli, tmp_path, tiny_shape, capsys):
    path = write_recipe(tmp_path, tiny_shape, checkpoint_every=1)
    assert cli(["train", "--config", str(path), "--seeds", "0", "--no-eval",
                "--updates", "1"]) == 0
    assert cli(["train", "--config", str(path), "--seeds", "0", "--no-eval", "--resume"]) == 0
    out = capsys.readouterr().out
    assert "seed 0: 2 updates" in out and "step-000002" in out


def test_user_errors_print_one_line_and_exit_2(cli, tmp_path, capsys):
    bad = tmp_path / "bad.toml"
    bad.write_text('[algorithm]\nname = "grop"\n')
    assert cli(["train", "--config", str(bad)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "did you mean 'grpo'" in err[0]
