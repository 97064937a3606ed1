"""Rollouts: groups, step-wise history windows, whole-episode contexts, tree forks."""

from __future__ import annotations

from collections import Counter

import pytest

from harness.train.engine import Sample
from harness.policies.scaffold import BareScaffold
from harness.train.prompting import Tokenization
from harness.train.rollout import RolloutSpec, collect
from tasks import get_suite


class ScriptedEngine:
    """An engine replaying fixed replies (for exact bookkeeping checks): reply i of a round
    goes to the i-th live episode, cycling through `replies`."""

    def __init__(self, tokenization: Tokenization, replies: list[str]):
        self.tok, self.replies, self.prompts = tokenization, replies, []

    def generate(self, prompts, *, max_new_tokens, temperature=1.0, greedy=False, seed=0):
        self.prompts.append([list(p) for p in prompts])
        out = []
        for i, _ in enumerate(prompts):
            ids = tuple(self.tok.reply_ids(self.replies[i % len(self.replies)]))
            out.append(Sample(ids, tuple(-0.5 for _ in ids), True))
        return out

    def sync(self, model):
        pass


@pytest.fixture(scope="module")
def tokenization(tmp_path_factory):
    from harness.policies.tiny import TinyConfig, make_tiny_model
    from transformers import AutoTokenizer

    from harness.train.prompting import COMPACT_TEMPLATE

    path = make_tiny_model(tmp_path_factory.mktemp("m"), TinyConfig(hidden=16, layers=1,
                                                                    heads=2, kv_heads=1,
                                                                    intermediate=32))
    tokenizer = AutoTokenizer.from_pretrained(path)
    tokenizer.chat_template = COMPACT_TEMPLATE
    return Tokenization(tokenizer)


@pytest.fixture(scope="module")
def suite():
    return get_suite("frozenlake-random@1")


def test_groups_share_task_and_seed_and_steps_are_recorded(suite, tokenization):
    tasks = suite.tasks("train")[:2]
    engine = ScriptedEngine(tokenization, ["Left", "Up", "Right", "Down"])
    batch = collect(suite, tasks, [11, 12], group_size=4, engine=engine,
                    tokenization=tokenization, scaffold=BareScaffold(),
                    spec=RolloutSpec(max_steps=3), seed=0, update=5)
    assert len(batch.episodes) == 8
    assert Counter(e.key.task_id for e in batch.episodes) == {tasks[0].id: 4, tasks[1].id: 4}
    assert {e.key.sample for e in batch.episodes} == {0, 1, 2, 3}
    assert {t.group_id for t in batch.transitions} == {f"5/{tasks[0].id}/11",
                                                       f"5/{tasks[1].id}/12"}
    inputs = batch.inputs
    assert len(inputs.episode) == len(batch.transitions) == sum(e.n_steps for e in
                                                                batch.episodes)
    # every step's transition holds exactly the reply the engine sampled
    for row, index in enumerate(batch.step_transition):
        t = batch.transitions[index]
        assert t.actions[0] in ("Left", "Up", "Right", "Down")
        assert tokenization.decode(t.response_ids) == t.actions[0]
        assert t.state_keys[0] == inputs.state_key[row]
        assert t.token_steps == (t.step,) * len(t.response_ids)


def test_history_window_holds_the_last_k_steps(suite, tokenization):
    task = suite.tasks("train")[0]
    engine = ScriptedEngine(tokenization, ["Up"])
    collect(suite, [task], [0], group_size=1, engine=engine, tokenization=tokenization,
            scaffold=BareScaffold(history=2), spec=RolloutSpec(max_steps=4), seed=0)
    texts = [tokenization.tokenizer.decode(round_[0]) for round_ in engine.prompts]
    assert [text.count("Up<|im_end|>") for text in texts] == [0, 1, 2, 2][:len(texts)]
    assert all(text.startswith(suite.instructions) for text in texts)


def test_episode_context_grows_by_exactly_the_sampled_ids(suite, tokenization):
    task = suite.tasks("train")[1]
    engine = ScriptedEngine(tokenization, ["Down"])
    batch = collect(suite, [task], [0], group_size=1, engine=engine,
                    tokenization=tokenization, scaffold=BareScaffold(),
                    spec=RolloutSpec(context="episode", max_steps=3), seed=0)
    (t,) = batch.transitions
    prompts = [round_[0] for round_ in engine.prompts]
    for earlier, later in zip(prompts, prompts[1:]):
        assert later[:len(earlier)] == earlier  # the context only grows
    full = list(t.prompt_ids) + list(t.response_ids)
    assert full[:len(prompts[-1])] == prompts[-1]
    reply = tokenization.reply_ids("Down")
    sampled = [i for i, m in zip(t.response_ids, t.loss_mask) if m]
    assert sampled == reply * len(t.step_rewards)


def test_tree_rollouts_fork_from_snapshots_and_share_prefixes(suite, tokenization):
    task = suite.tasks("train")[2]
    engine = ScriptedEngine(tokenization, ["Left", "Right", "Up", "Down"])
    batch = collect(suite, [task], [0], group_size=1, engine=engine,
                    tokenization=tokenization, scaffold=BareScaffold(),
                    spec=RolloutSpec(max_steps=3, branches=2, branch_steps=(0, 1)), seed=0)
    inputs = batch.inputs
    leaves = len(batch.episodes)
    assert 2 <= leaves <= 4
    # forks at step 0 share the root state; every step-0 row has the group's root as parent
    first = [row for row in range(len(inputs.node)) if batch.step_turn[row] == 0]
    assert len({int(inputs.parent[row]) for row in first}) == 1
    # shared prefix steps exist once as transitions but once per leaf as advantage rows
    assert len(batch.transitions) < len(inputs.node) or leaves == 2
    assert len(set(inputs.node.tolist())) == len(batch.transitions)
    # clones replay the same env state: same observation before their first own action
    by_node = {}
    for row, index in enumerate(batch.step_transition):
        by_node.setdefault(int(inputs.parent[row]), set()).add(
            batch.transitions[index].prompt_ids)
    assert all(len(prompts) == 1 for prompts in by_node.values())
