"""The trainer and `harness run` build the same prompt, token for token, for the same
episode: for every registered scaffold (latest version) in the trainer's ``step`` context
mode, and in its ``episode`` (whole-episode) mode against a run whose history window covers
the episode for every scaffold that renders turns as messages (the others refuse that mode
with one clear error).

The same scripted replies are played through both paths on one frozenlake task: the trainer's
lockstep rollouts (`harness.train.rollout.collect`, a scripted engine that records every
prompt it is given) and the runner's own episode loop (`harness.runner.run_episode`) with the
`hf:` policy's prompt (`ModelPolicy.prompt`, then the backend's `encode_chat`)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

import pytest

from harness.core import HarnessError
from harness.orchestrator import EpisodeJob
from harness.policies.backends import make_model_policy
from harness.policies.base import Decision
from harness.policies.scaffold import make_scaffold, scaffold_names
from harness.policies.terminal_scaffold import render_action
from harness.policies.tiny import TinyConfig, make_tiny_model
from harness.episodes import env_seed
from harness.runner import run_episode
from harness.train.engine import Sample
from harness.train.prompting import Tokenization
from harness.train.rollout import RolloutSpec, collect
from tasks import get_suite

REPLY = {  # each scaffold's reply format, for the same env action
    "think": lambda a: f"<think>go on</think><action>{a}</action>",
    "react": lambda a: f"Thought: go on\nAction: {a}",
    "bare": lambda a: a,
    "terminal": render_action,
}


@dataclass
class ScriptedEngine:
    """Answers every prompt with the next scripted reply's token ids; records the prompts."""

    tok: Tokenization
    replies: list[str]

    def __post_init__(self):
        self.prompts: list[list[int]] = []

    def generate(self, prompts, *, max_new_tokens, temperature, greedy, seed):
        out = []
        for prompt in prompts:
            reply = self.replies[len(self.prompts)]
            self.prompts.append(list(prompt))
            ids = tuple(self.tok.encode(reply)) + (self.tok.eos_id,)
            out.append(Sample(ids, (0.0,) * len(ids), True))
        return out

    def sync(self, model):
        pass


class RecordingPolicy:
    """The `hf:` policy's prompt for each turn (what it would send its model), and the
    scripted reply instead of a sample."""

    def __init__(self, policy, replies):
        self.inner, self.replies = policy, replies
        self.id, self.train_seed, self.provenance = policy.id, None, {}
        self.prompts: list[list[int]] = []

    async def act(self, context):
        ids = self.inner.backend.model.encode_chat(self.inner.prompt(context))
        reply = self.replies[len(self.prompts)]
        self.prompts.append(ids)
        action = self.inner.scaffold.parse(reply).env_action
        return Decision(action=action, raw_output=reply)


@pytest.fixture(scope="module")
def tiny_path(tmp_path_factory):
    path = tmp_path_factory.mktemp("tiny") / "model"
    make_tiny_model(path, TinyConfig())
    return path


def _trainer_prompts(suite, task, tok, scaffold, replies, context):
    engine = ScriptedEngine(tok, replies)
    collect(suite, [task], [env_seed(suite.id, task.id, 0)], group_size=1, engine=engine, tokenization=tok,
            scaffold=scaffold, spec=RolloutSpec(context=context, max_new_tokens=64,
                                                max_steps=len(replies)), seed=0)
    return engine.prompts


def _runner_prompts(suite, task, path, name, history, replies):
    policy = make_model_policy(f"hf:{path}?scaffold={name}&history={history}&threads=1")
    recording = RecordingPolicy(policy, replies)
    job = EpisodeJob(recording, suite, task, 0, 0)
    asyncio.run(run_episode(job, max_steps=len(replies)))
    return recording.prompts, policy


def oracle_actions(suite, task) -> list[str]:
    """The oracle's actions on `task` from the episode's reset (a path of several steps)."""
    env = suite.make_env(task.id)
    env.reset(seed=env_seed(suite.id, task.id, 0))
    actions, done = [], False
    while not done:
        actions.append(env.oracle_action())
        result = env.step(actions[-1])
        done = result.terminated or result.truncated
    return actions


def test_every_registered_scaffold_has_a_reply_format_here():
    assert {name.partition("@")[0] for name in scaffold_names()} == set(REPLY)


@pytest.mark.parametrize("name", sorted(REPLY))
@pytest.mark.parametrize("context", ["step", "episode"])
def test_trainer_and_run_build_identical_prompts(name, context, tiny_path):
    suite = get_suite("frozenlake@1")
    task = next(t for t in suite.tasks("test") if t.task_type == "8x8")
    actions = oracle_actions(suite, task)
    replies = [REPLY[name](a) for a in actions]
    history = 4 if context == "step" else len(actions)  # episode mode: the whole history
    ran, policy = _runner_prompts(suite, task, tiny_path, name, history, replies)
    tok = Tokenization(policy.backend.model.tokenizer)
    scaffold = make_scaffold(policy.scaffold.spec)
    if context == "episode" and not scaffold.renders_turns:
        with pytest.raises(HarnessError, match="context 'episode' needs a scaffold"):
            _trainer_prompts(suite, task, tok, scaffold, replies, context)
        return
    trained = _trainer_prompts(suite, task, tok, scaffold, replies, context)
    assert len(ran) == len(trained) == len(actions) >= 6
    for step, (a, b) in enumerate(zip(ran, trained)):
        assert a == b, f"{name}@1 {context} mode: prompts differ at step {step}:\n" \
                       f"run:     {tok.tokenizer.decode(a)!r}\ntrainer: {tok.tokenizer.decode(b)!r}"
