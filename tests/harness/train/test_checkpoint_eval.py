"""A trained checkpoint evaluates the same through the trainer and through `harness run`.

A tiny model is trained for 300 SFT steps (the README's SFT recipe, shortened), the trainer
evaluates the checkpoint on held-out maps, and ``harness run --policy checkpoint:PATH`` plays
the same tasks and seeds: same success, steps and invalid turns on every (task, eval seed)
key, the scaffold read back from ``checkpoint.json`` (``bare@2``), and no invalid turn.
"""

from __future__ import annotations

import json
import sqlite3

import pytest

from harness.cli import main
from harness.store import Store, load_episodes
from harness.train.config import load_train_config
from harness.train.run import policy_ids, run_id_of, run_training, start_is_final
from tests.harness.train.example_recipes import EXAMPLES

N_TASKS = 60
KEY = ["task_id", "eval_seed", "sample"]


@pytest.mark.slow
@pytest.mark.timeout(2400)  # ~2-3 min on 2 idle cores; one torch thread survives a loaded machine
def test_trainer_evaluation_equals_harness_run_on_the_checkpoint(tmp_path, capsys):
    config = load_train_config(EXAMPLES / "frozenlake_sft.toml", {
        "name": "sft", "out_dir": str(tmp_path / "out"), "db": str(tmp_path / "train.db"),
        "model": {"threads": 1}, "transitions_every": 0, "sft": {"steps": 300, "save_at": []},
        "eval": {"n_tasks": N_TASKS, "samples": 0, "headroom_k": 0}})
    (summary,) = run_training(config, [0])
    checkpoint = tmp_path / "out" / "sft" / "seed-0" / "sft"
    meta = json.loads((checkpoint / "checkpoint.json").read_text())
    assert meta["scaffold"]["id"] == "bare@2"
    assert meta["decoding"]["max_new_tokens"] == config.rollout.max_new_tokens

    # SFT only: the start is the final policy, evaluated once under the final ids
    assert start_is_final(config) and summary.start_greedy is None
    trainer = load_episodes(config.db, run_id=run_id_of(config, 0),
                            policy=policy_ids(config)["greedy"])
    assert len(trainer) == N_TASKS and summary.final_greedy == trainer.success.mean()

    db = tmp_path / "run.db"
    spec = f"checkpoint:{checkpoint}"
    assert main(["run", "--policy", spec, "--suite", config.suite, "--split",
                 config.eval.split, "--tasks", str(N_TASKS), "--db", str(db)]) == 0
    runner = load_episodes(db)
    assert len(runner) == N_TASKS and (runner.status == "ok").all()

    joined = trainer.merge(runner, on=KEY, suffixes=("_trainer", "_runner"))
    assert len(joined) == N_TASKS  # the same tasks and seeds
    for column in ("success", "n_steps", "n_invalid", "total_reward"):
        assert (joined[f"{column}_trainer"] == joined[f"{column}_runner"]).all(), column
    assert runner.n_invalid.sum() == 0 and trainer.n_invalid.sum() == 0
    assert 0 < runner.success.mean()  # the checkpoint plays, not a degenerate zero
    with Store(db) as store:  # the scaffold is stored with the run and with each episode
        config_json = store.run_config(runner.run_id.iloc[0])
    assert config_json["scaffolds"][spec]["id"] == "bare@2"
    with sqlite3.connect(db) as connection:
        rows = connection.execute("SELECT policy_provenance FROM episodes").fetchall()
    for (text,) in rows:
        stored = json.loads(text)
        assert stored["scaffold"]["id"] == "bare@2" and "scaffold_warning" not in stored
