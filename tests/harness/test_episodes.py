"""The episode core: seeds, task selection, the context, and the one record type that the
runner and the trainer's rollouts both end episodes with."""

from __future__ import annotations

from dataclasses import fields

import pytest

from harness.config import RunConfig
from harness.core import ConfigError, UnknownNameError
from harness.episodes import (EpisodeTally, balanced_prefix, env_seed, episode_context,
                              finish_record, policy_rng, select_task_ids, select_tasks)
from harness.policies.base import Decision
from harness.policies.scaffold import make_scaffold
from harness.records import EpisodeKey, EpisodeRecord
from harness.runner import run
from harness.store import load_episodes
from tasks import get_suite
from tasks.base import SuiteBase, TaskSpec


def test_seeds_are_stable_and_separate_what_they_should():
    assert env_seed("s@1", "t", 0) == env_seed("s@1", "t", 0) != env_seed("s@1", "t", 1)
    a = policy_rng("s@1", "t", 0, 0, "p").integers(1 << 30)
    assert a == policy_rng("s@1", "t", 0, 0, "p").integers(1 << 30)
    assert a != policy_rng("s@1", "t", 0, 1, "p").integers(1 << 30)
    assert a != policy_rng("s@1", "t", 0, 0, "q").integers(1 << 30)


def test_balanced_prefix_and_selection_cover_every_task_type():
    tasks = [TaskSpec(f"{kind}{i}", "test", kind) for kind in "ab" for i in range(3)]
    assert [t.id for t in balanced_prefix(tasks, 4)] == ["a0", "b0", "a1", "b1"]
    suite = get_suite("frozenlake-random@1")
    chosen = select_tasks(suite, "test", n_tasks=6)
    assert len(chosen) == 6 and len({t.task_type for t in chosen}) == 3
    assert select_tasks(suite, "test", task_types=("far",), n_tasks=2)[0].task_type == "far"


class _Listed(SuiteBase):
    """A suite that is only its task list (task selection reads nothing else)."""

    def __init__(self, name, ids, train_ids=()):
        self.name, self.version = name, 1
        super().__init__([TaskSpec(i, "test", "t") for i in ids]
                         + [TaskSpec(i, "train", "t") for i in train_ids])


def test_task_ids_select_exactly_those_tasks_in_their_order_across_suites():
    a, b = _Listed("a", ["a1", "a2", "a3", "both"]), _Listed("b", ["b1", "b2", "both"])
    groups = select_task_ids([a, b], "test", ["b2", "a3", "a1", "both", "b1"])
    assert [(suite.id, [t.id for t in tasks]) for suite, tasks in groups] == [
        ("b@1", ["b2"]), ("a@1", ["a3", "a1", "both"]), ("b@1", ["both", "b1"])]
    assert select_task_ids([a, b], "test", []) == []


def test_an_unknown_task_id_suggests_the_close_ones_and_names_the_split_that_has_it():
    a, b = _Listed("a", ["map-0001", "map-0002"]), _Listed("b", ["other"], ["map-0100"])
    with pytest.raises(UnknownNameError) as unknown:
        select_task_ids([a, b], "test", ["map-0001", "map-0003"])
    assert str(unknown.value) == ("unknown test task of a@1, b@1 'map-0003'; did you mean "
                                  "'map-0002' or 'map-0001'? (known: map-0001, map-0002, other)")
    with pytest.raises(ConfigError, match="'map-0100' is in the train split of b@1, not the "
                                          "run's test split; set split = 'train'"):
        select_task_ids([a, b], "test", ["map-0100"])
    frozenlake = get_suite("frozenlake@1")
    with pytest.raises(UnknownNameError, match="did you mean '4x4-0250'"):
        select_task_ids([frozenlake], "test", ["4x4-250"])


def test_context_and_record_from_the_core():
    suite = get_suite("frozenlake@1")
    task = suite.tasks("test")[0]
    env = suite.make_env(task.id)
    obs, info = env.reset(seed=env_seed(suite.id, task.id, 0))
    context = episode_context(suite, task, env, obs, info, eval_seed=0, sample=0,
                              policy_id="p")
    assert context.instructions == suite.instructions and not context.multiline_actions
    tally = EpisodeTally()
    result = env.step("Left")
    tally.add(result.reward, result.info, prompt_tokens=3, completion_tokens=2)
    record = finish_record(EpisodeKey("p", suite.id, task.id, 0, 0), task, tally,
                           info=result.info, terminated=result.terminated,
                           truncated=result.truncated, final_observation=result.observation,
                           wall_s=0.1, train_seed=None, provenance={"kind": "x"})
    assert isinstance(record, EpisodeRecord)
    assert (record.n_steps, record.prompt_tokens, record.completion_tokens) == (1, 3, 2)


class _Replies:
    """A policy that sends fixed action texts in turn (what the scripted engine samples)."""

    train_seed = None
    provenance = {"kind": "test"}

    def __init__(self, policy_id, replies):
        self.id, self.replies = policy_id, replies

    async def act(self, context):
        return Decision(self.replies[context.step % len(self.replies)])


@pytest.mark.parametrize("replies", [["Left", "Up", "Right", "Down"], ["Down", "Right"]])
def test_runner_and_trainer_rollout_give_the_same_record(tmp_path, replies):
    from harness.policies.tiny import TinyConfig, make_tiny_model
    from harness.train.engine import Sample
    from harness.train.prompting import Tokenization
    from harness.train.rollout import RolloutSpec, collect
    from transformers import AutoTokenizer

    suite = get_suite("frozenlake-random@1")
    tasks = select_tasks(suite, "test", n_tasks=3)
    config = RunConfig(policies=("p",), suites=(suite.id,), n_tasks=3, db=str(tmp_path / "r.db"))
    run(config, policies=[_Replies("p", replies)])
    by_runner = load_episodes(config.db).set_index("task_id")

    path = make_tiny_model(tmp_path / "m", TinyConfig(hidden=16, layers=1, heads=2, kv_heads=1,
                                                      intermediate=32))
    tok = Tokenization(AutoTokenizer.from_pretrained(path))

    class Engine:
        turn = 0

        def generate(self, prompts, **kwargs):
            ids = tuple(tok.reply_ids(replies[self.turn % len(replies)]))
            self.turn += 1
            return [Sample(ids, (0.0,) * len(ids), True) for _ in prompts]

        def sync(self, model):
            pass

    batch = collect(suite, tasks, [env_seed(suite.id, t.id, 0) for t in tasks], group_size=1,
                    engine=Engine(), tokenization=tok, scaffold=make_scaffold("bare@1"),
                    spec=RolloutSpec(record_steps=True), seed=0, policy_id="p")
    assert all(isinstance(r, EpisodeRecord) for r in batch.episodes)
    assert len(batch.episodes) == 3
    compared = [f.name for f in fields(EpisodeRecord) if f.name in (
        "success", "score", "total_reward", "n_steps", "n_invalid", "terminated", "truncated",
        "final_observation")]
    for record in batch.episodes:
        row = by_runner.loc[record.key.task_id]
        for name in compared:
            if name != "final_observation":
                assert getattr(record, name) == row[name], (record.key, name)
