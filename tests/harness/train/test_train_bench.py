"""`harness bench train`: both trainers run the same work (no timing assertions)."""

from __future__ import annotations

import pytest

from harness.train.bench import (FirstMoveSuite, TrainBench, bench_train, first_move_reward,
                                 train_report)


def test_first_move_reward_hand_cases():
    assert first_move_reward("Left", "Left") == 1.0
    assert first_move_reward("  left \nmore", "Left") == 1.0
    assert first_move_reward("Up", "Left") == 0.5
    assert first_move_reward("U1", "Left") == 0.25
    assert first_move_reward("", "Left") == 0.0
    assert first_move_reward("\x00\x01", "Left") == 0.0


def test_a_reply_is_invalid_when_its_first_line_names_no_move():
    suite = FirstMoveSuite()
    task = suite.tasks("train")[0].id
    verdicts = {}
    for reply in ("Left", "\n  up  \nthen more", "go left", "", "Left Down"):
        env = suite.make_env(task)
        env.reset(seed=0)
        verdicts[reply] = env.step(reply).info["invalid"]
    assert verdicts == {"Left": False, "\n  up  \nthen more": False, "go left": True,
                        "": True, "Left Down": True}


@pytest.mark.slow
def test_bench_runs_trl_and_the_backend_on_the_same_work(monkeypatch):
    result = bench_train(prompts=2, group=2, updates=2, max_new_tokens=4)
    assert isinstance(result, TrainBench)
    assert result.updates == 1 and result.samples_per_update == 4
    assert result.ours_tokens_per_s > 0 and result.trl_tokens_per_s > 0
    import harness.train.bench as bench

    monkeypatch.setattr(bench, "bench_train", lambda: result)
    lines = train_report(None)
    assert "TRL GRPOTrainer" in lines[1] and "ratio harness/TRL" in lines[3]
