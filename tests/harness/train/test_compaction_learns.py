"""It learns through compacted episodes: GRPO on whole-episode contexts with a context budget
small enough that episodes compact, from an SFT warm start of a tiny Qwen2, on the guided
frozenlake bench suite (`harness.train.bench.GuidedSuite`: the maps of frozenlake-random@1,
each step rewarded by the oracle's move from that state, so learning shows within minutes).

Recipe (seeds pinned, one torch thread): a random-init Qwen2 (hidden 64, 2 layers, 4 heads),
byte-level vocabulary, the compact chat template; SFT warm start on the oracle's whole-episode
dialogues (150 steps of 16, lr 3e-3, 10 warm-up steps, cosine); then 80 GRPO updates of 8
train maps x 8 episodes (no KL, seq-mean-token-mean, lr 3e-4) with ``context = "episode"``,
3 steps per episode, 6 new tokens per reply, ``compact_budget = 150`` and 8-token summaries.
The first prompt takes ~80 tokens and each step ~55, so an episode that reaches its third
step summarises before it: every update and the evaluation compact (asserted).

The start (the SFT checkpoint, step 0) and the final checkpoint are both played through the
runner with the ``compaction`` layer at the training budget (`harness.train.evaluation`, i.e.
``harness run --policy 'checkpoint:PATH?...&layers=compaction&compact_budget=150'``), greedy,
on the first 150 test maps, and judged by the statistics layer's paired comparison of the
episodes' score (the mean step reward): positive gain with a task-clustered bootstrap 95%
interval above 0, and compaction events in every update and in both evaluations.

Skipped: the recipe does not learn reliably. Measured on a 2-core AMD EPYC (~2.2 CPU-minutes
on one thread): training seed 0 gained +3.4 points [+0.5, +6.3] (start 0.663, final 0.697),
training seed 1 -1.2 [-4.2, +1.7] (0.679 to 0.668). Variants, seed 0: 25 updates +1.5
[-0.9, +3.9]; 16 maps per update (60 updates) +2.2 [-0.4, +4.8]; lr 1e-3 (40 updates) -13.9
[-16.8, -11.2]; two epochs of two minibatches -0.6 [-3.6, +2.4]; 2-step episodes at budget
120 (DART SFT, noise 0.2) -1.2 [-4.0, +1.5]; from a 40-step SFT start no change at all
(greedy identical on every map). With 6 steps at budget 250 (SFT start) it lost 11.6 points
[-14.2, -9.1]; the first recipe, from random init at budget 200 with 6 steps and 4-token
replies, lost 1.7 [-1.8, -1.6]: 4 tokens cannot spell "Right", and with 6 steps the summed
reward pays a policy that never moves (an invalid or wall-bound reply earns 0.5 a step and
never falls into a hole), so it learns to stand still (sampled return 3.0 = 6 x 0.5).

Tried since (2026-12-07, same machine, each judged as above): this recipe with 160 updates,
seed 0 +6.9 [+3.9, +9.9] but seed 1 +0.3 [-2.6, +3.2]; with the trainer's example settings
(16 maps per update, four minibatches, lr 2e-4, clip-higher 0.28, 80 updates) seed 1 +0.6
[-2.8, +3.8] (training reward rose from 1.78 to 1.88 of 3); GiGPO (per-step credit) in
place of GRPO, 80 updates, seed 1 -0.4 [-3.4, +2.5] (training reward flat, 1.76 to 1.72).
The example recipe that learns step-wise (`examples/frozenlake_grpo.toml`: hidden 128, 4
layers, 60 updates of 128 episodes on frozenlake-random@1 from a 300-step SFT start) run with
``context = "episode"`` and ``compact_budget = 300`` (31 compactions per update on average,
25-27 in each evaluation): training success rose from 0.45 to 0.57, but on 200 held-out maps
greedy success went from 36.5% to 35.5% (-1.0 [-7.5, +5.5]), sampled +2.0 [-3.5, +7.75], and
played without compaction +0.75 [-5.25, +6.75]: what it learned on the training maps did not
carry to new ones. The same run without compaction (whole-episode context, no budget) did not
carry either: training success 0.45 to 0.53, held-out greedy 40.5% to 36.0% (-4.5 [-10.5,
+2.0]). So the whole-episode context, not compaction, is what keeps this recipe from
generalising.

Tried 2026-12-07 (second session): this test's recipe with ``compact_budget = 100``, below
the first prompt plus one step (80 + 57 tokens), so that every step after the first compacts
and each segment holds one step (a step-wise context carrying a summary): seed 0 -0.2
[-3.7, +3.3], seed 1 -1.1 [-4.3, +2.2] (training reward flat, about 1.8 of 3; 56 or more
compactions per update): the guided recipe learns at no budget tried. The
example recipe that does learn step-wise, run the same way (`frozenlake_grpo.toml` with
``context = "episode"``, budget 100, 2.4 compactions per episode), took 50-72 s an update on
1-1.3 shared cores against about 2 s step-wise (each segment's sequence carries the summary
request and the summary, about four times a step-wise sample's tokens, and every step adds a
summary generation): stopped before its tenth update, too long for a test here.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from harness.policies.compaction import segments_of
from harness.records import EpisodeKey
from harness.stats.compare import compare_policies
from harness.store import Store, load_episodes
from harness.train.bench import GUIDED_SUITE
from harness.train.config import TrainConfig, make_train_config
from harness.train.evaluation import EvalSpec, evaluate_checkpoint
from harness.train.trainer import Trainer, compaction_options

BUDGET = 150
"""Context tokens: the first prompt takes ~80, each step ~55, so the third step compacts."""
EVAL_TASKS = 150


def _config(tmp_path: Path) -> TrainConfig:
    return make_train_config({
        "name": "compact-grpo", "suite": f"{GUIDED_SUITE}@1", "updates": 80,
        "out_dir": str(tmp_path / "out"), "db": str(tmp_path / "train.db"),
        "transitions_every": 0,
        "model": {"hidden": 64, "layers": 2, "heads": 4, "kv_heads": 2, "intermediate": 128,
                  "init_std": 0.1, "chat_template": "compact", "threads": 1},
        "rollout": {"tasks_per_update": 8, "group_size": 8, "context": "episode",
                    "max_steps": 3, "max_new_tokens": 6, "temperature": 1.0,
                    "compact_budget": BUDGET, "compact_tokens": 8},
        "sft": {"steps": 150, "lr": 3e-3, "batch_size": 16, "warmup_steps": 10},
        "algorithm": {"name": "grpo", "kl_coef": 0.0, "aggregation": "seq-mean-token-mean"},
        "optim": {"lr": 3e-4}}, TrainConfig())


def _train(config: TrainConfig) -> tuple[Path, Path, list[float]]:
    """The start (SFT) and final checkpoints, and each update's compaction events."""
    trainer = Trainer(config, 0)
    trainer.prepare()
    start = trainer.save()
    compactions = []
    while trainer.step < config.updates:
        compactions.append(trainer.update().metrics["compactions"])
    return start, trainer.save(), compactions


def _compaction_events(db: Path, policy: str) -> int:
    """Compaction events in the stored evaluation episodes of `policy`."""
    events = 0
    with Store(db, readonly=True) as store:
        for row in store.load_episodes(policy=policy).itertuples():
            key = EpisodeKey(row.policy, row.suite, row.task_id, row.eval_seed, row.sample)
            events += len(segments_of(store.load_steps(row.run_id, key))) - 1
    return events


@pytest.mark.slow
@pytest.mark.skip(reason="does not learn reliably: training seed 0 gains +3.4 points "
                  "[+0.5, +6.3] of held-out score, seed 1 -1.2 [-4.2, +1.7] (see the "
                  "docstring); the learning must-show of issue 30 item 6 is still open")
@pytest.mark.timeout(1200)  # ~2.5 CPU-minutes on one thread
def test_grpo_through_compacted_episodes_learns(tmp_path):
    config = _config(tmp_path)
    start, final, compactions = _train(config)
    assert min(compactions) > 0, "every update should compact"
    db = tmp_path / "eval.db"
    spec = EvalSpec(greedy=True, max_new_tokens=config.rollout.max_new_tokens,
                    max_steps=config.rollout.max_steps, threads=1,
                    compaction=compaction_options(config.rollout))
    for name, path in (("start", start), ("final", final)):
        evaluate_checkpoint(path, config.suite, "test", EVAL_TASKS, spec, db=db,
                            run_id=f"eval-{name}", policy_id=name, train_seed=0, begin=True)
    events = {name: _compaction_events(db, name) for name in ("start", "final")}
    c = compare_policies(load_episodes(db), "final", "start", metric="score",
                         rng=np.random.default_rng(0), n_resamples=10_000)
    d = c.difference
    report = {"start": round(c.mean_b, 4), "final": round(c.mean_a, 4),
              "gain": round(d.estimate, 4), "ci": [round(d.low, 4), round(d.high, 4)],
              "n_tasks": c.n_keys, "compactions_per_update": float(np.mean(compactions)),
              "eval_compactions": events}
    print(json.dumps(report))
    assert c.n_keys == EVAL_TASKS
    assert min(events.values()) > 0, f"the evaluation should compact: {report}"
    assert d.estimate > 0 and d.low > 0, report
