"""Rollouts: groups of episodes played in lockstep through the suite's Env and the scaffold.

Each *group* is G episodes of one task from the same env seed (what GRPO and GiGPO compare).
All live episodes advance together: one batched generation per round, then one env step each.
Episodes stand on the episode core (`harness.episodes`) as the runner's do: the same
`EpisodeContext`, the scaffold's prompt (`harness.policies.scaffold`, ``bare@2`` for the
trainer) and parser, the same tally, and each ends as one `EpisodeRecord`.
Two context modes:

- ``step``: each step is one sample; the prompt is the instructions, the last K (observation,
  action) turns and the current observation (verl-agent's step-wise training).
- ``episode``: each episode is one sample; the context grows by exactly the sampled ids and
  the next observation turn, and the loss mask covers the sampled ids only.

Context compaction (``episode`` context with `RolloutSpec.compact_budget`; the rules of
`harness.policies.compaction`, which the ``compaction`` layer applies in `harness run`): when
the next observation turn would take the context past the budget, that turn carries the
summary request, the episode's next generation (`RolloutSpec.compact_tokens` new tokens) is
its summary, and the episode continues in a new *segment* whose prompt is the scaffold's
(instructions, summary, current observation). Each segment is a transition of its own (its
summary's sampled ids, trained like the actions, belong to the step that follows it); the
steps of all segments stay one episode for the advantage estimators, so advantages carry
across segment boundaries, and `RolloutBatch.sequence_of` ties the segments together for the
loss normalisation.

Tree rollouts fork every live episode into `branches` copies at each of `branch_steps`
(``env.snapshot()`` / ``restore()`` into a fresh env of the same task); copies share the
prefix steps, whose transitions exist once.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from harness.core import HarnessError, derive_seed
from harness.episodes import EpisodeTally, episode_context, finish_record
from harness.policies.base import LAYERS_INFO_KEY, EpisodeContext
from harness.policies.compaction import (COMPACTION, Segments, compaction_log, over_budget,
                                         segment_view, summary_prompt, summary_text)
from harness.policies.scaffold import Scaffold
from harness.records import EpisodeKey, EpisodeRecord, StepRecord
from harness.train.advantages import AdvantageInputs
from harness.train.engine import Engine
from harness.train.prompting import Tokenization
from harness.train.transitions import Transition
from tasks.base import HasStateKey, Snapshotable, Suite, TaskSpec, suite_capability

__all__ = ["RolloutSpec", "RolloutBatch", "collect"]


@dataclass(frozen=True)
class RolloutSpec:
    """How to sample: context mode, decoding, tree branching, step cap."""

    context: str = "step"
    max_new_tokens: int = 8
    temperature: float = 1.0
    greedy: bool = False
    max_steps: int | None = None
    branches: int = 1
    branch_steps: tuple[int, ...] = ()
    record_steps: bool = False
    """Keep every step's observation, action and info (for storing evaluation episodes)."""
    compact_budget: int | None = None
    """Context compaction (``episode`` context): the context's token budget (None: off)."""
    compact_tokens: int = 32
    """Context compaction: new tokens of a summary."""
    compact_prompt: str = "summary@1"
    """Context compaction: the summary prompt (`harness.policies.compaction`)."""


@dataclass
class _Step:
    reward: float
    state_key: str
    action: str
    transition: int
    turn: int
    node: int
    parent: int


@dataclass
class _Episode:
    index: int
    group: int
    sample: int
    task: TaskSpec
    seed: int
    env: Any
    state: EpisodeContext
    """The episode core's context: observation, info, history, step."""
    node: int
    started: float = 0.0
    tally: EpisodeTally = field(default_factory=EpisodeTally)
    context: list = field(default_factory=list)
    mask: list = field(default_factory=list)
    logprobs: list = field(default_factory=list)
    token_steps: list = field(default_factory=list)
    steps: list = field(default_factory=list)
    records: list = field(default_factory=list)
    done: bool = False
    terminated: bool = False
    truncated: bool = False
    prompt_length: int = 0
    segments: Segments = field(default_factory=Segments)
    summarising: bool = False
    """The context ends with the summary request: the next generation is a summary."""
    counted: int = 0
    """Context tokens before the next generation (compaction's log)."""
    compaction: dict = field(default_factory=dict)
    """The compaction log of the next step (set when it fired)."""

    @property
    def obs(self) -> str:
        return self.state.observation

    @property
    def info(self) -> dict:
        return self.state.info


@dataclass(frozen=True)
class RolloutBatch:
    """Transitions, per-step advantage inputs (one row per step of every episode; shared tree
    prefixes repeat), and for each row the transition and turn it belongs to; the finished
    episodes (leaves) as `EpisodeRecord`s and, with ``record_steps``, their steps."""

    transitions: list[Transition]
    inputs: AdvantageInputs
    step_transition: np.ndarray
    step_turn: np.ndarray
    episodes: list[EpisodeRecord]
    stats: dict[str, float]
    episode_steps: list[tuple[StepRecord, ...]] = field(default_factory=list)
    sequence_of: tuple[int, ...] = ()
    """In ``episode`` context, per transition the episode (the whole sequence) it is a segment
    of; empty in ``step`` context, where each transition is a sequence of its own."""


class _Builder:
    """Mutable state of one `collect` call."""

    def __init__(self, suite: Suite, tokenization: Tokenization, scaffold: Scaffold,
                 spec: RolloutSpec, update: int, policy_version: int, policy_id: str,
                 eval_seed: int):
        self.suite, self.tok, self.scaffold, self.spec = suite, tokenization, scaffold, spec
        self.update, self.policy_version = update, policy_version
        self.policy_id, self.eval_seed = policy_id, eval_seed
        self.transitions: list[Transition] = []
        self.next_node = 0
        self.next_episode = 0
        self.prompt_cache: dict[tuple, list[int]] = {}
        self.summary_prompt = summary_prompt(spec.compact_prompt)
        self.sequence_of: list[int] = []

    def node(self) -> int:
        self.next_node += 1
        return self.next_node - 1

    def group_id(self, episode: _Episode) -> str:
        return f"{self.update}/{episode.task.id}/{episode.seed}"

    def prompt(self, episode: _Episode) -> list[int]:
        if self.spec.context == "episode":
            return episode.context
        messages = self.scaffold.messages(episode.state)
        key = tuple((m["role"], m["content"]) for m in messages)
        if key not in self.prompt_cache:
            self.prompt_cache[key] = self.tok.prompt_ids(messages)
        return self.prompt_cache[key]


def _start(builder: _Builder, tasks: Sequence[TaskSpec], seeds: Sequence[int],
           group_size: int) -> list[_Episode]:
    episodes = []
    for group, (task, seed) in enumerate(zip(tasks, seeds)):
        root = builder.node()
        for sample in range(group_size):
            env = builder.suite.make_env(task.id)
            obs, info = env.reset(seed=int(seed))
            state = episode_context(builder.suite, task, env, obs, info,
                                    eval_seed=builder.eval_seed, sample=sample,
                                    policy_id=builder.policy_id)
            episode = _Episode(builder.next_episode, group, sample, task, int(seed), env, state,
                               root, time.perf_counter())
            builder.next_episode += 1
            if builder.spec.context == "episode":
                episode.context = builder.tok.prompt_ids(builder.scaffold.messages(state))
                episode.prompt_length = len(episode.context)
            episodes.append(episode)
    return episodes


def _fork(builder: _Builder, episodes: list[_Episode]) -> list[_Episode]:
    """Tree rollouts: copy each live episode at a branch step from an env snapshot."""
    out = []
    for episode in episodes:
        out.append(episode)
        if episode.done or len(episode.steps) not in builder.spec.branch_steps:
            continue
        if not isinstance(episode.env, Snapshotable):
            raise HarnessError(f"tree rollouts need snapshot()/restore(); {builder.suite.id} "
                               "envs lack them")
        snapshot = episode.env.snapshot()
        for _ in range(builder.spec.branches - 1):
            env = builder.suite.make_env(episode.task.id)
            env.restore(snapshot)
            state = replace(episode.state, env=env, info=dict(episode.info),
                            history=list(episode.state.history))
            clone = _Episode(builder.next_episode, episode.group, episode.sample, episode.task,
                             episode.seed, env, state, episode.node, episode.started,
                             replace(episode.tally), list(episode.context),
                             list(episode.mask), list(episode.logprobs),
                             list(episode.token_steps), list(episode.steps),
                             list(episode.records))
            clone.prompt_length = episode.prompt_length
            builder.next_episode += 1
            out.append(clone)
    return out


def _reply(builder: _Builder, episode: _Episode, sample: Any) -> tuple[str, str]:
    """The sampled reply's text and the env action the scaffold parses from it."""
    text = builder.tok.decode(sample.ids)
    multiline = episode.state.multiline_actions
    return text, builder.scaffold.parse(text, multiline=multiline).env_action


def _advance(builder: _Builder, episode: _Episode, prompt: list[int], sample: Any) -> None:
    """Apply one sampled reply to its episode: env step, step record, context growth."""
    spec, tok = builder.spec, builder.tok
    context_tokens = len(prompt)  # in episode context `prompt` is the context, grown below
    text, action = _reply(builder, episode, sample)
    state_key = episode.env.state_key() if isinstance(episode.env, HasStateKey) else episode.obs
    result = episode.env.step(action)
    turn = len(episode.steps)
    truncated = result.truncated or (spec.max_steps is not None and turn + 1 >= spec.max_steps
                                     and not result.terminated)
    done = result.terminated or truncated
    parent, node = episode.node, builder.node()
    episode.node = node
    index = len(builder.transitions)
    if spec.context == "step":
        builder.transitions.append(Transition(
            tuple(prompt), tuple(sample.ids), tuple(sample.logprobs), (1,) * len(sample.ids),
            (turn,) * len(sample.ids), float(result.reward), (float(result.reward),), (state_key,),
            (action,), builder.group_id(episode), episode.task.id, episode.index, turn,
            episode.seed, builder.policy_version, done, bool(result.info.get("won", False)),
            node, parent))
    else:
        index = -1  # the episode's transition is made when it ends
        episode.context += list(sample.ids)
        episode.mask += [1] * len(sample.ids)
        episode.logprobs += list(sample.logprobs)
        episode.token_steps += [turn] * len(sample.ids)
        if not done:
            turn_ids = _next_turn(builder, episode, result.observation)
            episode.context += turn_ids
            episode.mask += [0] * len(turn_ids)
            episode.logprobs += [0.0] * len(turn_ids)
            episode.token_steps += [-1] * len(turn_ids)
    episode.steps.append(_Step(float(result.reward), state_key, action, index, turn, node,
                               parent))
    if spec.record_steps:
        info = result.info
        if spec.compact_budget is not None:
            entry = episode.compaction or compaction_log(episode.segments.index,
                                                         context_tokens)
            info = {**info, LAYERS_INFO_KEY: {COMPACTION: entry}}
        episode.records.append(StepRecord(turn, episode.obs, action, text, result.reward,
                                          result.terminated, truncated, info))
    episode.compaction = {}
    state = episode.state
    state.history.append((state.observation, action))
    episode.tally.add(result.reward, result.info, prompt_tokens=len(prompt),
                      completion_tokens=len(sample.ids))
    state.observation, state.info, state.step = result.observation, result.info, turn + 1
    episode.done, episode.terminated, episode.truncated = done, result.terminated, truncated


def _next_turn(builder: _Builder, episode: _Episode, observation: str) -> list[int]:
    """Ids of the next observation turn of a whole-episode context: with the summary request
    when they would take the context past the compaction budget."""
    tok, spec = builder.tok, builder.spec
    turn_ids = tok.observation_turn_ids(observation)
    episode.counted = len(episode.context) + len(turn_ids)
    if over_budget(episode.counted, spec.compact_budget,
                   len(episode.steps) + 1 - episode.segments.start):
        episode.summarising = True
        return tok.observation_turn_ids(f"{observation}\n\n{builder.summary_prompt.request}")
    return turn_ids


def _close_segment(builder: _Builder, episode: _Episode, done: bool) -> None:
    """The current segment of a whole-episode context as one transition (the whole episode
    when it never compacted)."""
    index = len(builder.transitions)
    steps = episode.steps[episode.segments.start:]
    rewards = tuple(step.reward for step in steps)
    p = episode.prompt_length
    builder.transitions.append(Transition(
        tuple(episode.context[:p]), tuple(episode.context[p:]), tuple(episode.logprobs),
        tuple(episode.mask), tuple(episode.token_steps), float(sum(rewards)), rewards,
        tuple(step.state_key for step in steps), tuple(step.action for step in steps),
        builder.group_id(episode), episode.task.id, episode.index, episode.segments.index,
        episode.seed, builder.policy_version, done,
        done and bool(episode.info.get("won", False))))
    builder.sequence_of.append(episode.index)
    for step in steps:
        step.transition = index


def _compact(builder: _Builder, episode: _Episode, prompt: list[int], sample: Any) -> None:
    """Apply a sampled summary: it ends the segment (trained with the step that follows it),
    and the episode continues from the next segment's prompt."""
    tok, turn = builder.tok, len(episode.steps)
    episode.context += list(sample.ids)
    episode.mask += [1] * len(sample.ids)
    episode.logprobs += list(sample.logprobs)
    episode.token_steps += [turn] * len(sample.ids)
    episode.tally.prompt_tokens += len(prompt)
    episode.tally.completion_tokens += len(sample.ids)
    _close_segment(builder, episode, done=False)
    summary, first = summary_text(tok.decode(sample.ids)), episode.segments.start
    episode.segments.advance(turn, summary)
    view = segment_view(episode.state, episode.segments, builder.summary_prompt)
    episode.context = tok.prompt_ids(builder.scaffold.messages(view))
    episode.prompt_length = len(episode.context)
    episode.mask, episode.logprobs, episode.token_steps = [], [], []
    episode.summarising = False
    episode.compaction = compaction_log(
        episode.segments.index, episode.counted, fired=True, summary=summary,
        tokens=len(prompt) + len(sample.ids),
        detail=f"{episode.counted} context tokens > {builder.spec.compact_budget}: steps "
               f"{first}-{turn - 1} summarised")


def _summarise(builder: _Builder, live: list[_Episode], engine: Engine, seed: int) -> float:
    """Context compaction: the live episodes whose context ends with the summary request
    generate their summaries (one batch) and continue in their next segments. Returns the
    generation's seconds."""
    summarising = [e for e in live if e.summarising]
    if not summarising:
        return 0.0
    spec, started = builder.spec, time.perf_counter()
    prompts = [builder.prompt(e) for e in summarising]
    samples = engine.generate(prompts, max_new_tokens=spec.compact_tokens,
                              temperature=spec.temperature, greedy=spec.greedy, seed=seed)
    elapsed = time.perf_counter() - started
    for episode, prompt, sample in zip(summarising, prompts, samples):
        _compact(builder, episode, prompt, sample)
    return elapsed


def _finish_episode(builder: _Builder, episode: _Episode) -> None:
    if builder.spec.context == "episode":
        _close_segment(builder, episode, done=True)


def _record(builder: _Builder, episode: _Episode) -> EpisodeRecord:
    key = EpisodeKey(builder.policy_id, builder.suite.id, episode.task.id, builder.eval_seed,
                     episode.sample)
    return finish_record(key, episode.task, episode.tally, info=episode.info,
                         terminated=episode.terminated, truncated=episode.truncated,
                         final_observation=episode.obs,
                         wall_s=time.perf_counter() - episode.started, train_seed=None,
                         provenance={"kind": "train-rollout", "policy_version":
                                     builder.policy_version})


def _inputs(episodes: list[_Episode]) -> tuple[AdvantageInputs, np.ndarray, np.ndarray]:
    rows = [(e.index, e.group, s) for e in episodes for s in e.steps]
    episode = np.array([r[0] for r in rows], dtype=np.int64)
    group = np.array([r[1] for r in rows], dtype=np.int64)
    steps = [r[2] for r in rows]
    keys = np.empty(len(steps), dtype=object)
    keys[:] = [s.state_key for s in steps]
    inputs = AdvantageInputs(episode, group, np.array([s.reward for s in steps], dtype=float),
                             keys, node=np.array([s.node for s in steps], dtype=np.int64),
                             parent=np.array([s.parent for s in steps], dtype=np.int64))
    return (inputs, np.array([s.transition for s in steps], dtype=np.int64),
            np.array([s.turn for s in steps], dtype=np.int64))


def collect(suite: Suite, tasks: Sequence[TaskSpec], seeds: Sequence[int], *, group_size: int,
            engine: Engine, tokenization: Tokenization, scaffold: Scaffold,
            spec: RolloutSpec, seed: int, update: int = 0, policy_version: int = 0,
            policy_id: str = "train", eval_seed: int = 0) -> RolloutBatch:
    """Play ``group_size`` episodes of each ``(task, env seed)`` in lockstep.

    `seed` drives sampling (one generator per round, derived from it). Returns the batch's
    transitions, per-step advantage inputs and the finished episodes (leaves) as records
    keyed ``(policy_id, suite, task, eval_seed, sample)``.
    """
    if spec.context == "episode" and not scaffold.renders_turns:
        raise HarnessError(f"context 'episode' needs a scaffold that renders each turn as a "
                           f"message of its own (bare); {scaffold.spec.id} renders earlier "
                           "turns inside one message, so use context 'step'")
    if spec.compact_budget is not None and spec.context != "episode":
        raise HarnessError("context compaction (compact_budget) needs context 'episode'")
    builder = _Builder(suite, tokenization, scaffold, spec, update, policy_version, policy_id,
                       eval_seed)
    episodes = _start(builder, tasks, seeds, group_size)
    started, generate_s, generated, rounds = time.perf_counter(), 0.0, 0, 0
    while True:
        if spec.branches > 1:
            episodes = _fork(builder, episodes)
        live = [e for e in episodes if not e.done]
        if not live:
            break
        generate_s += _summarise(builder, live, engine, derive_seed("rollout-summary", seed,
                                                                     rounds))
        prompts = [builder.prompt(e) for e in live]
        t0 = time.perf_counter()
        samples = engine.generate(prompts, max_new_tokens=spec.max_new_tokens,
                                  temperature=spec.temperature, greedy=spec.greedy,
                                  seed=derive_seed("rollout", seed, rounds))
        generate_s += time.perf_counter() - t0
        generated += sum(len(s.ids) for s in samples) + sum(len(p) for p in prompts)
        step_all = suite_capability(suite, "step_all")  # Ray env workers (executors.ray_envs)
        if step_all is not None:  # step every env of the round at once; _advance reads results
            step_all([e.env for e in live],
                     [_reply(builder, e, s)[1] for e, s in zip(live, samples)])
        for episode, prompt, sample in zip(live, prompts, samples):
            _advance(builder, episode, prompt, sample)
            if episode.done:
                _finish_episode(builder, episode)
        rounds += 1
    inputs, step_transition, step_turn = _inputs(episodes)
    stats = {"rollout_s": time.perf_counter() - started, "generate_s": generate_s,
             "generation_tokens_per_s": generated / max(generate_s, 1e-9),
             "rounds": float(rounds)}
    if spec.compact_budget is not None:
        stats["compactions"] = float(sum(e.segments.index for e in episodes))
    return RolloutBatch(builder.transitions, inputs, step_transition, step_turn,
                        [_record(builder, e) for e in episodes], stats,
                        [tuple(e.records) for e in episodes] if spec.record_steps else [],
                        tuple(builder.sequence_of))
