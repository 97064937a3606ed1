"""Evaluation points from stored behaviour trajectories, and the critic's fitting data.

Every state an ``ok`` episode of the run passed through (before each of its steps) is a
candidate point. The episodes are split once: a share `critic_fraction` (drawn with
``make_rng("signals/points", seed, run_id, suite)``) gives the learned critic its training
transitions; the points are drawn from the other episodes, `n_points` states uniformly
without replacement, so no critic sees an episode a point comes from. Candidates are the
admissible actions of the state (read from the restored env), or with `sample_candidates`
the distinct actions among k replies sampled from a model. Each point carries hindsight
metadata (the actions from the state on and the episode's outcome) for self-distillation.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from harness.core import HarnessError, make_rng
from harness.records import EpisodeKey, StepRecord
from harness.episodes import env_seed
from harness.signal_eval.simulator import SuiteSimulator
from harness.store import Store
from signals.base import EvaluationPoint
from signals.registry import Transition
from tasks.base import Suite

__all__ = ["PointSet", "NoPointsError", "collect_points", "sample_candidates", "episode_name",
           "returns_to_go"]


class NoPointsError(HarnessError):
    """The store holds no usable behaviour states for the requested run and suite."""


@dataclass(frozen=True)
class PointSet:
    """Points (sorted by episode and step) and the critic's transitions, with the config
    that drew them; `set_id` is a digest of that config."""

    set_id: str
    suite: str
    points: tuple[EvaluationPoint, ...]
    transitions: tuple[Transition, ...]
    config: dict[str, Any]


def episode_name(run_id: str, key: EpisodeKey) -> str:
    return "/".join([run_id, key.policy_id, key.suite, key.task_id, str(key.eval_seed),
                     str(key.sample)])


def returns_to_go(rewards: np.ndarray, gamma: float) -> np.ndarray:
    """``G_t = sum_k gamma**k r_{t+k}`` for rewards of shape ``(n_steps,)``."""
    out = np.zeros(len(rewards))
    running = 0.0
    for t in range(len(rewards) - 1, -1, -1):
        running = float(rewards[t]) + gamma * running
        out[t] = running
    return out


def _outcome(steps: list[StepRecord]) -> str:
    last = steps[-1]
    if last.info.get("won"):
        return "won"
    return "lost" if last.terminated else "cut off by the step limit"


def _episodes(store: Store, run_id: str, suite: Suite) -> list[tuple[str, EpisodeKey, list]]:
    frame = store.load_episodes(run_id=run_id, suite=suite.id, statuses=["ok"])
    out = []
    for row in frame.itertuples(index=False):
        key = EpisodeKey(row.policy, row.suite, row.task_id, int(row.eval_seed), int(row.sample))
        steps = store.load_steps(run_id, key)
        if steps:
            out.append((episode_name(run_id, key), key, steps))
    return out


def _point(suite: Suite, name: str, key: EpisodeKey, steps: list[StepRecord], t: int
           ) -> EvaluationPoint:
    hindsight = {"future_actions": [s.action for s in steps[t:]], "outcome": _outcome(steps)}
    return EvaluationPoint(
        suite=suite.id, task_id=key.task_id, observation=steps[t].observation, candidates=(),
        history=tuple((s.observation, s.action) for s in steps[:t]),
        metadata={"hindsight": hindsight, "behaviour": key.policy_id}, episode=name, step=t,
        env_seed=env_seed(suite.id, key.task_id, key.eval_seed),
        instructions=getattr(suite, "instructions", ""))


def collect_points(store: Store, suite: Suite, run_id: str, *, n_points: int, seed: int = 0,
                   critic_fraction: float = 0.25, gamma: float = 0.99,
                   simulator: SuiteSimulator | None = None) -> PointSet:
    """Draw `n_points` evaluation points of `suite` from the stored run `run_id` (fewer when
    the run has fewer states) and the critic's transitions (see the module docstring)."""
    if not 0 <= critic_fraction < 1:
        raise HarnessError(f"critic_fraction must lie in [0, 1), got {critic_fraction}")
    episodes = _episodes(store, run_id, suite)
    if not episodes:
        raise NoPointsError(f"run {run_id!r} in {store.path} has no finished {suite.id} "
                            "episodes with stored steps")
    rng = make_rng("signals/points", seed, run_id, suite.id)
    order = rng.permutation(len(episodes))
    n_fit = int(critic_fraction * len(episodes)) if len(episodes) > 1 else 0
    fit = [episodes[k] for k in sorted(order[:n_fit])]
    pool = [episodes[k] for k in sorted(order[n_fit:])]
    transitions = []
    for _, key, steps in fit:
        rewards = np.array([s.reward for s in steps], dtype=float)
        for step, ret in zip(steps, returns_to_go(rewards, gamma)):
            transitions.append(Transition(suite.id, step.observation, step.action, float(ret)))
    states = [(e, t) for e, (_, _, steps) in enumerate(pool) for t in range(len(steps))]
    chosen = sorted(rng.choice(len(states), size=min(n_points, len(states)), replace=False))
    simulator = simulator or SuiteSimulator(suite)
    points = []
    for index in chosen:
        e, t = states[index]
        name, key, steps = pool[e]
        point = _point(suite, name, key, steps, t)
        _, info = simulator.env_at(point)
        candidates = tuple(info.get("admissible_actions") or ())
        if len(candidates) < 2:
            continue
        points.append(replace(point, candidates=candidates))
    config = {"suite": suite.id, "run_id": run_id, "n_points": n_points, "seed": seed,
              "critic_fraction": critic_fraction, "gamma": gamma}
    digest = hashlib.blake2b(json.dumps(config, sort_keys=True).encode(), digest_size=6)
    return PointSet(f"points-{digest.hexdigest()}", suite.id, tuple(points),
                    tuple(transitions), config)


def sample_candidates(points: tuple[EvaluationPoint, ...], model: Any, k: int, *,
                      seed: int = 0, temperature: float = 1.0, admissible_only: bool = True
                      ) -> tuple[EvaluationPoint, ...]:
    """Replace each point's candidates with the distinct actions among `k` replies sampled
    from `model` (a `signals.model.LanguageModel`) at `temperature` to the state prompt.

    A reply naming an admissible action (case and surrounding whitespace ignored) becomes
    that action's text. With `admissible_only` (needed for exact Q, which only covers
    admissible actions) other replies are dropped; otherwise they stay as raw candidates
    (the env treats them as invalid actions; Monte-Carlo Q handles that). Points left with
    fewer than two distinct candidates are dropped.
    """
    from signals.prompts import state_prompt

    if k < 2:
        raise HarnessError(f"sampling candidates needs k >= 2, got {k}")
    prompts = [state_prompt(p) for p in points for _ in range(k)]
    replies = model.generate(prompts, max_tokens=16, temperature=temperature, seed=seed)
    out = []
    for index, point in enumerate(points):
        by_folded = {c.strip().casefold(): c for c in point.candidates}
        chosen: list[str] = []
        for reply in replies[index * k:(index + 1) * k]:
            text = reply.strip()
            action = by_folded.get(text.casefold(), None if admissible_only else text)
            if action and action not in chosen:
                chosen.append(action)
        if len(chosen) >= 2:
            out.append(replace(point, candidates=tuple(chosen),
                               metadata={**point.metadata, "candidates": f"sampled:{k}"}))
    return tuple(out)
