"""It learns: SFT from random init, then GRPO (2 seeds) and GiGPO (1 seed) from an
under-trained SFT checkpoint, evaluated by `harness run` on the saved checkpoints and judged
by the statistics layer's paired test on held-out maps.

One slow test (CI runs it), seeds pinned, sized for 2 CPU cores: a ~1.1M-parameter Qwen2
(hidden 128, 4 layers, 8 heads) from random init, byte-level vocabulary (token id = byte
value), the ``bare@2`` scaffold with the compact chat template (the one-line instruction,
the grid, the actions line), loss on the action tokens only, on ``frozenlake-random@1``
(random start and goal, 3 holes, paths of 3-8 moves). Training runs the README's example
recipes; every evaluation is ``harness run --policy checkpoint:PATH`` (greedy, and sampled
at temperature 1 with 4 samples per map) over the first 500 test maps, and every comparison
is ``harness compare`` on those runner-written episodes.

What it asserts (the README states the same):
- SFT (2,400 steps) reaches at least 60% greedy success on 200 held-out dev maps;
- each GRPO training seed and GiGPO gain credibly over their start (the 300-step SFT
  checkpoint) in greedy success: positive difference, task-clustered bootstrap 95% interval
  above 0;
- GRPO's sampled-success gain, averaged over its two training seeds, is positive (one seed's
  sampled verdict depends on the machine: see the README);
- GiGPO is non-inferior to its start in sampled success with margin 2 points (the interval's
  lower end above -0.02).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from harness.cli import main
from harness.stats.compare import compare_policies
from harness.store import load_episodes
from harness.train.run import run_training
from tests.harness.train.example_recipes import example_recipe as recipe

UNDER_TRAINED = 300
"""SFT step of the under-trained checkpoint RL starts from (the SFT example's ``save_at``)."""
SFT_EVAL_TASKS = 200
EVAL_TASKS = 500
SAMPLES = 4
SFT_MIN = 0.60
"""Greedy success the saturated SFT checkpoint reaches on the dev maps at least."""
GIGPO_MARGIN = 0.02
"""Non-inferiority margin of GiGPO against its start, in success-rate units."""
BATCH = "max_batch=256&batch_wait_ms=1&threads=2"


def rl_recipe(tmp_path, name: str, algorithm: str, source: str):
    config = recipe(tmp_path, f"frozenlake_{algorithm}.toml", name=name,
                    model={"source": source}, eval={"n_tasks": 0, "headroom_k": 0})
    assert config.algorithm.name == algorithm
    return config


def harness_run(db: Path, checkpoint: Path, split: str, n_tasks: int, sampled: bool,
                options: str = "") -> str:
    """``harness run --policy checkpoint:PATH`` greedy or sampled; returns the policy id."""
    spec = f"checkpoint:{checkpoint}?{BATCH}" + ("&temperature=1" if sampled else "") + options
    argv = ["run", "--policy", spec, "--suite", "frozenlake-random@1", "--split", split,
            "--tasks", str(n_tasks), "--concurrency", "256", "--db", str(db)]
    if sampled:
        argv += ["--samples", str(SAMPLES)]
    assert main(argv) == 0
    return spec


def compared(db: Path, a: str, b: str, capsys) -> dict:
    """`harness compare` of A over B; the library result it prints, as numbers."""
    c = compare_policies(load_episodes(db), a, b, rng=np.random.default_rng(0),
                         n_resamples=10_000)
    capsys.readouterr()
    assert main(["compare", "--a", a, "--b", b, "--db", str(db)]) == 0
    printed = capsys.readouterr().out
    d = c.difference
    assert f"{d.estimate:+.4f}  95% CI [{d.low:+.4f}, {d.high:+.4f}]" in printed, printed
    return {"a": round(c.mean_a, 4), "b": round(c.mean_b, 4), "diff": round(d.estimate, 4),
            "ci": [round(d.low, 4), round(d.high, 4)], "p": round(c.permutation.p_value, 5),
            "n_keys": c.n_keys}


@pytest.mark.slow
@pytest.mark.timeout(3600)  # ~12 min on 2 idle cores (more than twice that under load)
def test_sft_then_grpo_and_gigpo_learn(tmp_path, capsys):
    report: dict = {}
    db = tmp_path / "eval.db"
    # (a) SFT from random init on the oracle's trajectories (train split)
    sft = recipe(tmp_path, "frozenlake_sft.toml", name="sft", eval={"n_tasks": 0})
    assert UNDER_TRAINED in sft.sft.save_at and sft.model.source == "tiny"
    run_training(sft, [0], evaluate_policies=False)
    seed_dir = tmp_path / "out" / "sft" / "seed-0"
    saturated = harness_run(db, seed_dir / "sft", "dev", SFT_EVAL_TASKS, sampled=False)
    report["sft_greedy_dev"] = float(load_episodes(db, policy=saturated).success.mean())
    assert report["sft_greedy_dev"] >= SFT_MIN, report

    # the start every RL seed shares, stored without a training seed so that `harness
    # compare` pairs it with each seed of the policies trained from it
    start = seed_dir / f"sft-{UNDER_TRAINED:06d}"
    starts = {s: harness_run(db, start, "test", EVAL_TASKS, sampled=s,
                             options="&train_seed=none") for s in (False, True)}

    def trained(config, seed: int) -> dict:
        final = tmp_path / "out" / config.name / f"seed-{seed}"
        out = {}
        for sampled in (False, True):
            policy = harness_run(db, final, "test", EVAL_TASKS, sampled=sampled)
            out["sampled" if sampled else "greedy"] = compared(db, policy, starts[sampled],
                                                               capsys)
        return out

    # (b) GRPO from the under-trained checkpoint, 2 training seeds
    grpo = rl_recipe(tmp_path, "grpo", "grpo", str(start))
    run_training(grpo, [0, 1], evaluate_policies=False)
    for seed in (0, 1):
        report[f"grpo_seed{seed}"] = trained(grpo, seed)
    # (c) GiGPO, same recipe, one seed
    gigpo = rl_recipe(tmp_path, "gigpo", "gigpo", str(start))
    run_training(gigpo, [0], evaluate_policies=False)
    report["gigpo_seed0"] = trained(gigpo, 0)
    print(json.dumps(report, indent=1))

    for run in ("grpo_seed0", "grpo_seed1", "gigpo_seed0"):
        greedy, sampled = report[run]["greedy"], report[run]["sampled"]
        assert greedy["n_keys"] == EVAL_TASKS and sampled["n_keys"] == EVAL_TASKS * SAMPLES
        assert greedy["diff"] > 0 and greedy["ci"][0] > 0, report  # credibly better, greedy
    # sampled success: one training seed's verdict is a property of the machine (seed 1
    # gained +7.4 [4.25, 10.6] on one AMD EPYC and -1.85 [-5.0, +1.35] on another); the
    # recipe's gain over its training seeds is what the test holds it to
    assert np.mean([report[f"grpo_seed{seed}"]["sampled"]["diff"] for seed in (0, 1)]) > 0
    assert report["gigpo_seed0"]["sampled"]["ci"][0] > -GIGPO_MARGIN, report
