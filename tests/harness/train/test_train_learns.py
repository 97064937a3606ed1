"""It learns: SFT from random init, then GRPO (2 seeds) and GiGPO (1 seed) from an
under-trained SFT checkpoint, judged by the statistics layer's paired test on held-out maps.

One slow test (CI runs it), seeds pinned, sized for 2 CPU cores: a ~1.1M-parameter Qwen2
(hidden 128, 4 layers, 8 heads) from random init, byte-level vocabulary (token id = byte
value), prompt = the one-line instruction + the grid + the actions line, loss on the action
tokens only, on ``frozenlake-random@1`` (random start and goal, 3 holes, paths of 3-8 moves).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from harness.core import make_rng
from harness.stats.compare import compare_policies
from harness.store import load_episodes
from harness.train.config import load_train_config
from harness.train.evaluation import EvalSpec, eval_tasks, evaluate, success_rate
from harness.train.run import policy_ids, run_id_of, run_training
from harness.train.trainer import Trainer

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
"""The recipes under test are the README's examples, so the evidence and the examples agree."""
UNDER_TRAINED = 300
"""SFT step of the under-trained checkpoint RL starts from (the SFT example's ``save_at``)."""
SFT_EVAL_TASKS = 200


def recipe(tmp_path, example: str, **overrides):
    """An example recipe writing under `tmp_path`, without transition files or the
    headroom evaluation (the test compares before and after, seed by seed)."""
    return load_train_config(EXAMPLES / example, {
        "out_dir": str(tmp_path / "out"), "db": str(tmp_path / "results.db"),
        "transitions_every": 0, **overrides})


def rl_recipe(tmp_path, name: str, algorithm: str, source: str):
    config = recipe(tmp_path, f"frozenlake_{algorithm}.toml", name=name,
                    model={"source": source}, eval={"headroom_k": 0})
    assert config.algorithm.name == algorithm
    return config


def comparison(db, config, seed: int, sampled: bool):
    ids = policy_ids(config)
    a, b = (ids["sampled"], ids["start_sampled"]) if sampled else (ids["greedy"], ids["start"])
    frame = load_episodes(db, run_id=run_id_of(config, seed), policy=[a, b])
    return compare_policies(frame, a, b, rng=make_rng("test", seed, sampled),
                            n_resamples=5_000)


def summary(c) -> dict:
    d = c.difference
    return {"a": round(c.mean_a, 4), "b": round(c.mean_b, 4), "diff": round(d.estimate, 4),
            "ci": [round(d.low, 4), round(d.high, 4)], "p": round(c.p_value, 5),
            "n_keys": c.n_keys}


def credible_gain(c) -> bool:
    """The trained policy beats its start: positive difference, 95% interval above 0 and the
    clustered permutation p below 0.05."""
    return c.difference.estimate > 0 and c.difference.low > 0 and c.p_value < 0.05


@pytest.mark.slow
@pytest.mark.timeout(1800)  # ~10 min on 2 idle cores; the budget is 15
def test_sft_then_grpo_and_gigpo_learn(tmp_path):
    report: dict = {}
    # (a) SFT from random init on the oracle's trajectories (train split)
    sft = recipe(tmp_path, "frozenlake_sft.toml", name="sft", eval={"n_tasks": 0})
    assert UNDER_TRAINED in sft.sft.save_at and sft.model.source == "tiny"
    trainer = Trainer(sft, 0)
    trainer.prepare()
    held_out = eval_tasks(trainer.suite, "dev", SFT_EVAL_TASKS)
    results = evaluate(trainer.suite, held_out, EvalSpec(greedy=True), engine=trainer.engine,
                       tokenization=trainer.tokenization, scaffold=trainer.scaffold,
                       policy_id="sft")
    report["sft_greedy"] = success_rate(results)
    assert report["sft_greedy"] >= 0.60, report

    start = str(trainer.seed_dir / f"sft-{UNDER_TRAINED:06d}")
    db = tmp_path / "results.db"

    # (b) GRPO from the under-trained checkpoint, 2 training seeds
    grpo = rl_recipe(tmp_path, "grpo", "grpo", start)
    run_training(grpo, [0, 1])
    for seed in (0, 1):
        greedy, sampled = comparison(db, grpo, seed, False), comparison(db, grpo, seed, True)
        report[f"grpo_seed{seed}"] = {"greedy": summary(greedy), "sampled": summary(sampled)}
        assert credible_gain(greedy) or credible_gain(sampled), report

    # (c) GiGPO, same recipe, one seed: not below GRPO's starting point
    gigpo = rl_recipe(tmp_path, "gigpo", "gigpo", start)
    run_training(gigpo, [0])
    greedy, sampled = comparison(db, gigpo, 0, False), comparison(db, gigpo, 0, True)
    report["gigpo_seed0"] = {"greedy": summary(greedy), "sampled": summary(sampled)}
    print(json.dumps(report, indent=1))
    assert greedy.mean_a >= greedy.mean_b and sampled.mean_a >= sampled.mean_b, report
    assert np.isfinite(greedy.p_value)
