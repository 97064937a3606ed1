"""From a rollout batch to learner samples: advantages per token, value positions, and the
per-update rollout metrics."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from harness.train.advantages import Advantages
from harness.train.learner import TrainSample
from harness.train.rollout import RolloutBatch

__all__ = ["base_samples", "with_advantages", "step_values", "rollout_metrics"]


def base_samples(batch: RolloutBatch) -> list[TrainSample]:
    """One `TrainSample` per transition, advantages still zero. A transition's value
    positions are the positions just before each of its turns' first sampled token. The
    segments of a compacted episode (`RolloutBatch.sequence_of`) are one sequence for the
    loss: each carries the episode's index and its sampled-token count over every segment."""
    sequence_tokens: dict[int, int] = {}
    for sequence, t in zip(batch.sequence_of, batch.transitions):
        sequence_tokens[sequence] = sequence_tokens.get(sequence, 0) + t.n_sampled
    samples = []
    for index, t in enumerate(batch.transitions):
        start = len(t.prompt_ids)
        firsts, seen = [], set()
        for k, step in enumerate(t.token_steps):
            if t.loss_mask[k] and step not in seen:
                seen.add(step)
                firsts.append(start + k - 1)
        zeros = (0.0,) * len(t.response_ids)
        sequence = batch.sequence_of[index] if batch.sequence_of else -1
        samples.append(TrainSample(t.prompt_ids + t.response_ids, start,
                                   tuple(float(m) for m in t.loss_mask), t.logprobs, zeros,
                                   value_positions=tuple(firsts), sequence=sequence,
                                   sequence_tokens=sequence_tokens.get(sequence, 0)))
    return samples


def step_values(batch: RolloutBatch, values: Sequence[Sequence[float]]) -> np.ndarray:
    """Per-step values ``(n_steps,)`` from each transition's values at its turns."""
    out = np.zeros(len(batch.step_transition))
    for row, (transition, turn) in enumerate(zip(batch.step_transition, batch.step_turn)):
        turns = sorted({s for s, m in zip(batch.transitions[transition].token_steps,
                                          batch.transitions[transition].loss_mask) if m})
        out[row] = values[transition][turns.index(turn)] if turn in turns else 0.0
    return out


def with_advantages(batch: RolloutBatch, samples: Sequence[TrainSample],
                    advantages: Advantages, values: Sequence[Sequence[float]] | None = None
                    ) -> list[TrainSample]:
    """Samples carrying per-token advantages (each token gets its step's advantage; tree
    prefixes shared by several leaves carry equal advantages) and PPO value targets.

    A step is looked up by (transition, step) and, failing that, by (episode, step): the
    summary that ends a compacted segment belongs to the step that follows it, which lies in
    the next segment, so its tokens carry that step's advantage and value target."""
    per_step: dict[tuple[int, int], float] = {}
    target: dict[tuple[int, int], float] = {}
    episodes = batch.inputs.episode.tolist()
    for row, key in enumerate(zip(batch.step_transition.tolist(), batch.step_turn.tolist())):
        for where in (key, ("episode", episodes[row], key[1])):
            per_step.setdefault(where, float(advantages.advantages[row]))
            if advantages.value_targets is not None:
                target.setdefault(where, float(advantages.value_targets[row]))

    def lookup(table: dict, index: int, t: Any, step: int) -> float:
        return table.get((index, step), table.get(("episode", t.episode, step), 0.0))

    out = []
    for index, (t, sample) in enumerate(zip(batch.transitions, samples)):
        token_adv = tuple(lookup(per_step, index, t, step) if m else 0.0
                          for step, m in zip(t.token_steps, t.loss_mask))
        changes = {"advantages": token_adv}
        if values is not None and advantages.value_targets is not None:
            turns = sorted({s for s, m in zip(t.token_steps, t.loss_mask) if m})
            changes["old_values"] = tuple(values[index])
            changes["value_targets"] = tuple(lookup(target, index, t, s) for s in turns)
        out.append(replace(sample, **changes))
    return out


def rollout_metrics(batch: RolloutBatch, advantages: Advantages) -> dict[str, float]:
    """Mean reward, success, episode length, invalid-action share, token counts, and the
    estimator's diagnostics."""
    episodes = batch.episodes
    n = max(len(episodes), 1)
    sampled = sum(t.n_sampled for t in batch.transitions)
    adv = advantages.advantages
    metrics = {
        "mean_reward": sum(e.total_reward for e in episodes) / n,
        "success": sum(e.success for e in episodes) / n,
        "episode_steps": sum(e.n_steps for e in episodes) / n,
        "invalid_fraction": sum(e.n_invalid for e in episodes) / max(
            sum(e.n_steps for e in episodes), 1),
        "episodes": float(len(episodes)), "samples": float(len(batch.transitions)),
        "sampled_tokens": float(sampled),
        "advantage_abs_mean": float(np.abs(adv).mean()) if adv.size else 0.0,
        "nonzero_advantage_fraction": float(np.mean(adv != 0)) if adv.size else 0.0,
        **{k: float(v) for k, v in advantages.diagnostics.items()},
        **batch.stats,
    }
    return metrics
