"""It learns through compacted episodes: GRPO on whole-episode contexts with a context budget
small enough that every episode is compacted, from a random-init tiny Qwen2, on the guided
frozenlake bench suite (`harness.train.bench.GuidedSuite`: the maps of frozenlake-random@1,
each step rewarded by the oracle's move from that state, so learning shows within minutes).

The start (step 0) and the final checkpoint are both played through the runner with the
``compaction`` layer at the training budget (`harness.train.evaluation`, i.e. ``harness run
--policy 'checkpoint:PATH?...&layers=compaction&compact_budget=200'``) on held-out test maps,
and judged by the statistics layer's paired comparison of the episodes' score (the mean step
reward): positive gain with a task-clustered bootstrap 95% interval above 0.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from harness.stats.compare import compare_policies
from harness.store import load_episodes
from harness.train.bench import GUIDED_SUITE
from harness.train.config import TrainConfig, make_train_config
from harness.train.evaluation import EvalSpec, evaluate_checkpoint
from harness.train.trainer import Trainer, compaction_options

BUDGET = 200
"""Context tokens: the first prompt takes ~80, each step ~55, so episodes compact every
second step or so."""
EVAL_TASKS = 150


def _config(tmp_path):
    return make_train_config({
        "name": "compact-grpo", "suite": f"{GUIDED_SUITE}@1", "updates": 25,
        "out_dir": str(tmp_path / "out"), "db": str(tmp_path / "train.db"),
        "transitions_every": 0,
        "model": {"hidden": 64, "layers": 2, "heads": 4, "kv_heads": 2, "intermediate": 128,
                  "init_std": 0.1, "chat_template": "compact", "threads": 2},
        "rollout": {"tasks_per_update": 8, "group_size": 8, "context": "episode",
                    "max_steps": 6, "max_new_tokens": 4, "temperature": 1.0,
                    "compact_budget": BUDGET, "compact_tokens": 8},
        "algorithm": {"name": "grpo", "kl_coef": 0.0, "aggregation": "seq-mean-token-mean"},
        "optim": {"lr": 1e-3}}, TrainConfig())


@pytest.mark.slow
@pytest.mark.skip(reason="recipe not tuned yet: one run (budget 200, 25 updates, lr 1e-3) "
                  "compacted after every step and lost 1.7 points of held-out score "
                  "[-1.8, -1.6]; the learning must-show of issue 30 item 6 is still open")
@pytest.mark.timeout(1200)
def test_grpo_through_compacted_episodes_learns(tmp_path):
    config = _config(tmp_path)
    trainer = Trainer(config, 0)
    trainer.prepare()
    start = trainer.save()
    compactions = []
    while trainer.step < config.updates:
        compactions.append(trainer.update().metrics["compactions"])
    final = trainer.save()
    assert min(compactions) > 0, "every update should compact"
    db = tmp_path / "eval.db"
    spec = EvalSpec(greedy=True, max_new_tokens=4, max_steps=6, threads=2,
                    compaction=compaction_options(config.rollout))
    for name, path in (("start", start), ("final", final)):
        evaluate_checkpoint(path, config.suite, "test", EVAL_TASKS, spec, db=db,
                            run_id=f"eval-{name}", policy_id=name, train_seed=0, begin=True)
    frame = load_episodes(db)
    c = compare_policies(frame, "final", "start", metric="score",
                         rng=np.random.default_rng(0), n_resamples=10_000)
    d = c.difference
    report = {"start": round(c.mean_b, 4), "final": round(c.mean_a, 4),
              "gain": round(d.estimate, 4), "ci": [round(d.low, 4), round(d.high, 4)],
              "n_tasks": EVAL_TASKS, "compactions_per_update": float(np.mean(compactions))}
    print(json.dumps(report))
    assert c.n_keys == EVAL_TASKS
    assert d.estimate > 0 and d.low > 0, report
