"""Training through compacted episodes: segments of the whole-episode context, cross-segment
advantages (GAE and group methods, hand-computed), the loss normalised across segments, and
updates of the trainer with a small context budget."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from harness.policies.compaction import SUMMARY_PROMPTS, segments_of
from harness.policies.scaffold import BareScaffold
from harness.train.advantages import AdvantageInputs, estimate
from harness.train.config import PPOConfig, TrainConfig, make_train_config
from harness.train.engine import Sample
from harness.train.learner import TrainSample, sequence_groups
from harness.train.loss import Denominators, aggregate
from harness.train.prompting import Tokenization
from harness.train.rollout import RolloutBatch, RolloutSpec, collect
from harness.train.samples import base_samples, with_advantages
from harness.train.trainer import Trainer
from harness.train.transitions import Transition
from tasks import get_suite

PROMPT = SUMMARY_PROMPTS["summary@1"]


class ReplyEngine:
    """Replays `reply` to every action prompt and `summary` to every summary request."""

    def __init__(self, tokenization: Tokenization, reply: str, summary: str = "went on"):
        self.tok, self.reply, self.summary, self.calls = tokenization, reply, summary, []

    def generate(self, prompts, *, max_new_tokens, temperature=1.0, greedy=False, seed=0):
        self.calls.append((max_new_tokens, [list(p) for p in prompts]))
        text = self.summary if max_new_tokens == 32 else self.reply
        ids = tuple(self.tok.reply_ids(text))
        return [Sample(ids, tuple(-0.5 for _ in ids), True) for _ in prompts]

    def sync(self, model):
        pass


@pytest.fixture(scope="module")
def tokenization(tmp_path_factory):
    from transformers import AutoTokenizer

    from harness.policies.tiny import TinyConfig, make_tiny_model
    from harness.train.prompting import COMPACT_TEMPLATE

    path = make_tiny_model(tmp_path_factory.mktemp("m"), TinyConfig(
        hidden=16, layers=1, heads=2, kv_heads=1, intermediate=32))
    tokenizer = AutoTokenizer.from_pretrained(path)
    tokenizer.chat_template = COMPACT_TEMPLATE
    return Tokenization(tokenizer)


def _play(tokenization, budget):
    suite = get_suite("frozenlake-random@1")
    engine = ReplyEngine(tokenization, "Up")  # Up at the top row: the state never changes
    batch = collect(suite, suite.tasks("train")[:2], [3, 4], group_size=2, engine=engine,
                    tokenization=tokenization, scaffold=BareScaffold(history=10_000),
                    spec=RolloutSpec(context="episode", max_steps=6, compact_budget=budget,
                                     record_steps=True), seed=0)
    return batch, engine


def test_compacted_rollouts_split_episodes_into_segments(tokenization):
    plain, _ = _play(tokenization, None)
    batch, engine = _play(tokenization, 150)
    assert len(plain.transitions) == 4 and plain.sequence_of == (0, 1, 2, 3)
    assert len(batch.transitions) > 4 and batch.stats["compactions"] == len(batch.transitions) - 4
    # the environment trajectory is the one without compaction
    for a, b in zip(plain.episode_steps, batch.episode_steps):
        assert [(s.observation, s.action, s.reward) for s in a] == \
            [(s.observation, s.action, s.reward) for s in b]
    summary_ids = tokenization.reply_ids("went on")
    for index, (t, episode) in enumerate(zip(batch.transitions, batch.sequence_of)):
        segments = [i for i, e in enumerate(batch.sequence_of) if e == episode]
        assert t.episode == episode and t.step == segments.index(index)
        if index != segments[-1]:  # a segment ending in a summary of the next step
            assert list(t.response_ids[-len(summary_ids):]) == summary_ids and not t.done
            next_step = max(t.token_steps)
            assert t.token_steps[-len(summary_ids):] == (next_step,) * len(summary_ids)
            assert next_step == len(t.actions) + sum(
                len(batch.transitions[i].actions) for i in segments if i < index)
        if t.step > 0:  # a later segment starts from the summary
            prompt = tokenization.tokenizer.decode(t.prompt_ids)
            assert f"{PROMPT.header}\nwent on" in prompt and "Up<|im_end|>" not in prompt
    for steps in batch.episode_steps:
        segments = segments_of(steps)
        assert len(segments) > 1 and all(s.summary == "went on" for s in segments[1:])
        assert all(c <= 150 for s in segments for c in s.context_tokens[1:])
    summaries = [prompts for n, prompts in engine.calls if n == 32]
    assert summaries and all(tokenization.tokenizer.decode(p).rstrip().endswith(
        PROMPT.request) for prompts in summaries for p in prompts)


def _transition(episode: int, segment: int, token_steps, mask, actions) -> Transition:
    n = len(token_steps)
    return Transition((1, 2), tuple(range(10, 10 + n)), (0.0,) * n, tuple(mask),
                      tuple(token_steps), 0.0, (), (), tuple(actions), "g", "t", episode,
                      segment, 0, 0, False, False)


def _segmented_batch():
    """Episode 0: steps 0, 1 in segment 0 (then the summary of step 2), step 2 in segment 1;
    episode 1 (same group): one segment, steps 0 and 1."""
    transitions = [
        _transition(0, 0, [0, -1, 1, -1, 2, 2], [1, 0, 1, 0, 1, 1], ["a", "b"]),
        _transition(0, 1, [2], [1], ["c"]),
        _transition(1, 0, [0, -1, 1], [1, 0, 1], ["a", "b"]),
    ]
    keys = np.array(["s"] * 5, dtype=object)
    inputs = AdvantageInputs(np.array([0, 0, 0, 1, 1]), np.array([0, 0, 0, 0, 0]),
                             np.array([0.0, 0.0, 1.0, 0.0, 0.0]), keys)
    return RolloutBatch(transitions, inputs, np.array([0, 0, 1, 2, 2]),
                        np.array([0, 1, 2, 0, 1]), [], {}, sequence_of=(0, 0, 1))


def test_cross_segment_gae_hand_computed():
    batch = _segmented_batch()
    values = np.array([0.5, 0.6, 0.8, 0.2, 0.1])
    inputs = AdvantageInputs(batch.inputs.episode, batch.inputs.group, batch.inputs.reward,
                             batch.inputs.state_key, value=values)
    advantages = estimate("gae", inputs, gamma=1.0, lam=0.5)
    # episode 0: d2 = 1 - 0.8 = 0.2; d1 = 0.8 - 0.6 = 0.2; d0 = 0.6 - 0.5 = 0.1
    # A2 = 0.2, A1 = 0.2 + 0.5 * 0.2 = 0.3, A0 = 0.1 + 0.5 * 0.3 = 0.25 (across the boundary)
    # episode 1: d1 = 0 - 0.1 = -0.1; d0 = 0.1 - 0.2 = -0.1; A1 = -0.1, A0 = -0.15
    assert np.allclose(advantages.advantages, [0.25, 0.3, 0.2, -0.15, -0.1])
    samples = base_samples(batch)
    assert [s.value_positions for s in samples] == [(1, 3, 5), (1,), (1, 3)]
    old_values = [(0.5, 0.6, 0.7), (0.8,), (0.2, 0.1)]  # 0.7: step 2 seen before the summary
    out = with_advantages(batch, samples, advantages, old_values)
    assert np.allclose(out[0].advantages, [0.25, 0, 0.3, 0, 0.2, 0.2])  # summary: step 2's
    assert np.allclose(out[1].advantages, [0.2])
    assert np.allclose(out[2].advantages, [-0.15, 0, -0.1])
    assert np.allclose(out[0].value_targets, [0.75, 0.9, 1.0])
    assert np.allclose(out[1].value_targets, [1.0])


def test_group_methods_give_every_segment_the_trajectory_advantage():
    batch = _segmented_batch()
    advantages = estimate("grpo", batch.inputs)
    # returns 1 and 0 in one group: (1 - 0.5) / std([1, 0], ddof=1) = 0.5 / 0.7071
    a = 0.5 / np.std([1.0, 0.0], ddof=1)
    out = with_advantages(batch, base_samples(batch), advantages)
    assert np.allclose(out[0].advantages, [a, 0, a, 0, a, a], atol=1e-5)
    assert np.allclose(out[1].advantages, [a], atol=1e-5)
    assert np.allclose(out[2].advantages, [-a, 0, -a], atol=1e-5)


def test_segments_are_normalised_as_one_sequence_hand_computed():
    # rows: segment A (3 tokens) and segment B (1 token) of one episode; C a whole sequence
    values = torch.tensor([[1.0, 2.0, 3.0], [4.0, 0.0, 0.0], [5.0, 6.0, 0.0]])
    mask = torch.tensor([[1.0, 1.0, 1.0], [1.0, 0.0, 0.0], [1.0, 1.0, 0.0]])
    samples = [TrainSample((0,) * 4, 1, (1.0,) * 3, (0.0,) * 3, (0.0,) * 3, sequence=0,
                           sequence_tokens=4),
               TrainSample((0,) * 2, 1, (1.0,), (0.0,), (0.0,), sequence=0, sequence_tokens=4),
               TrainSample((0,) * 3, 1, (1.0, 1.0), (0.0,) * 2, (0.0,) * 2)]
    assert sequence_groups(samples) == [[0, 1], [2]]
    counts = torch.tensor([s.normaliser for s in samples])
    assert counts.tolist() == [4.0, 4.0, 2.0]
    whole = Denominators(n_tokens=6, n_sequences=2, max_tokens=5)
    # seq-mean-token-mean: ((1 + 2 + 3 + 4) / 4 + (5 + 6) / 2) / 2 = (2.5 + 5.5) / 2 = 4
    assert aggregate(values, mask, "seq-mean-token-mean", whole, counts).item() == 4.0
    # the same tokens as one row give the same loss
    joined = torch.tensor([[1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 0.0, 0.0]])
    joined_mask = torch.tensor([[1.0, 1.0, 1.0, 1.0], [1.0, 1.0, 0.0, 0.0]])
    assert aggregate(joined, joined_mask, "seq-mean-token-mean", whole).item() == 4.0
    # token-mean: 21 / 6; seq-mean-token-sum: 21 / 2; norm: 21 / (2 * 5)
    assert aggregate(values, mask, "token-mean", whole, counts).item() == pytest.approx(3.5)
    assert aggregate(values, mask, "seq-mean-token-sum", whole, counts).item() == 10.5
    assert aggregate(values, mask, "seq-mean-token-sum-norm", whole, counts).item() == \
        pytest.approx(2.1)
    # micro-batches (A | B, C) sum to the whole
    parts = aggregate(values[:1], mask[:1], "seq-mean-token-mean", whole, counts[:1]) + \
        aggregate(values[1:], mask[1:], "seq-mean-token-mean", whole, counts[1:])
    assert parts.item() == pytest.approx(4.0)


@pytest.mark.parametrize("algorithm", ["grpo", "ppo"])
def test_the_trainer_updates_through_compacted_episodes(tmp_path, tiny_shape, algorithm):
    config = make_train_config({
        "name": f"compact-{algorithm}", "suite": "frozenlake-random@1", "updates": 1,
        "out_dir": str(tmp_path / "out"), "db": str(tmp_path / "t.db"),
        "transitions_every": 0, "model": {**tiny_shape},
        "rollout": {"tasks_per_update": 2, "group_size": 2, "context": "episode",
                    "max_steps": 5, "compact_budget": 120, "max_new_tokens": 4,
                    "compact_tokens": 8},
        "algorithm": {"name": algorithm}}, TrainConfig())
    trainer = Trainer(config, 0)
    trainer.prepare()
    result = trainer.update()
    batch = result.batch
    assert result.metrics["compactions"] > 0
    assert len(batch.transitions) == 4 + result.metrics["compactions"]
    assert set(batch.sequence_of) == {0, 1, 2, 3}
    assert np.isfinite(result.metrics["loss"])
    if algorithm == "ppo":
        assert isinstance(config.algorithm, PPOConfig) and "value_loss" in result.metrics
