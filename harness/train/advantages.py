"""Advantage estimators: pure numpy functions, and a registry that applies them to a batch.

Episode-level estimators take per-episode returns of shape ``(n_episodes,)`` and group labels
of the same shape (a *group* is the G episodes played on one task from the same env seed) and
return shape ``(n_episodes,)``; `estimate` broadcasts them to every step of the episode.
Step-level estimators (GAE, GiGPO, tree) work on per-step arrays of shape ``(n_steps,)``.

Conventions shared by every estimator (stated once here, tested in
``tests/harness/train/test_advantages.py``):

- A group of one episode carries no relative information: its advantage is 0.
- Standard deviations are the unbiased sample std (``ddof=1``, as ``torch.std`` computes it
  in TRL and verl); a group whose returns are all equal (std 0) gets advantage 0.
- ``eps`` is added to the std in a denominator, never elsewhere.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from harness.core import ConfigError, UnknownNameError

__all__ = [
    "AdvantageInputs", "Advantages", "ESTIMATORS", "estimate", "group_codes", "grpo", "dr_grpo",
    "rloo", "reinforce_pp_baseline", "gae", "discounted_returns", "gigpo", "tree_advantages",
    "zero_variance_fraction", "replace_inputs",
]


def group_codes(labels) -> np.ndarray:
    """Integer codes ``0..n_groups-1`` of shape ``(n,)`` for any hashable labels ``(n,)``."""
    labels = np.asarray(labels)
    if labels.dtype == object:
        index: dict[Any, int] = {}
        return np.array([index.setdefault(x, len(index)) for x in labels], dtype=np.int64)
    return np.unique(labels, return_inverse=True)[1].reshape(labels.shape)


def _group_stats(values: np.ndarray, codes: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per-element group size, mean and unbiased std (0 where the group has one element)."""
    n_groups = int(codes.max()) + 1 if codes.size else 0
    size = np.bincount(codes, minlength=n_groups).astype(float)
    mean = np.bincount(codes, weights=values, minlength=n_groups) / np.maximum(size, 1)
    square = np.bincount(codes, weights=(values - mean[codes]) ** 2, minlength=n_groups)
    std = np.sqrt(square / np.maximum(size - 1, 1))
    return size[codes], mean[codes], std[codes]


def _as_1d(values, name: str) -> np.ndarray:
    array = np.asarray(values, dtype=float)
    if array.ndim != 1:
        raise ValueError(f"{name} must have shape (n,), got {array.shape}")
    return array


def grpo(returns, groups, *, scale_std: bool = True, eps: float = 1e-6) -> np.ndarray:
    """GRPO: ``(R_i - mean(R_group)) / (std(R_group) + eps)``.

    Source: Shao et al. 2024, DeepSeekMath (arXiv:2402.03300), section 4.1 "outcome
    supervision". ``scale_std=False`` gives Dr. GRPO's advantage. returns, groups: shape
    ``(n_episodes,)``; returns shape ``(n_episodes,)``.
    """
    returns = _as_1d(returns, "returns")
    size, mean, std = _group_stats(returns, group_codes(groups))
    centred = returns - mean
    if not scale_std:
        return np.where(size > 1, centred, 0.0)
    varies = (size > 1) & (std > 0)
    return np.where(varies, centred / np.where(varies, std + eps, 1.0), 0.0)


def dr_grpo(returns, groups) -> np.ndarray:
    """Dr. GRPO: ``R_i - mean(R_group)``, no division by the std (the std term favours
    questions that are too easy or too hard). Source: Liu et al. 2025, "Understanding
    R1-Zero-Like Training: A Critical Perspective" (arXiv:2503.20783), section 3.1. Pair it with
    the ``seq-mean-token-sum-norm`` loss aggregation (the paper's constant denominator)."""
    return grpo(returns, groups, scale_std=False)


def rloo(returns, groups) -> np.ndarray:
    """RLOO: ``R_i - mean_{j != i} R_j`` (leave-one-out baseline), which equals
    ``G / (G - 1) * (R_i - mean(R_group))`` for a group of G. Sources: Kool et al. 2019,
    "Buy 4 REINFORCE Samples, Get a Baseline for Free!"; Ahmadian et al. 2024, "Back to
    Basics" (arXiv:2402.14740), section 3. Shapes as in `grpo`."""
    returns = _as_1d(returns, "returns")
    size, mean, _ = _group_stats(returns, group_codes(groups))
    loo = np.where(size > 1, (size * mean - returns) / np.maximum(size - 1, 1), returns)
    return np.where(size > 1, returns - loo, 0.0)


def reinforce_pp_baseline(returns, groups, *, eps: float = 1e-6) -> np.ndarray:
    """REINFORCE++ with a group-mean baseline: ``A = R_i - mean(R_group)``, then divided by
    the std of those centred values over the whole batch (global, not per-group, scaling).
    Source: Hu et al. 2025, "REINFORCE++" (arXiv:2501.03262), section 3 (the
    ``reinforce_baseline`` estimator of OpenRLHF). Shapes as in `grpo`; batch std is ddof=0.
    """
    returns = _as_1d(returns, "returns")
    size, mean, _ = _group_stats(returns, group_codes(groups))
    centred = np.where(size > 1, returns - mean, 0.0)
    std = centred.std() if centred.size else 0.0
    return centred / (std + eps) if std > 0 else centred


def zero_variance_fraction(returns, groups) -> float:
    """Share of groups whose returns are all equal (no group-relative gradient)."""
    returns = _as_1d(returns, "returns")
    codes = group_codes(groups)
    if codes.size == 0:
        return 0.0
    n_groups = int(codes.max()) + 1
    low = np.full(n_groups, np.inf)
    high = np.full(n_groups, -np.inf)
    np.minimum.at(low, codes, returns)
    np.maximum.at(high, codes, returns)
    return float(np.mean(low == high))


def discounted_returns(rewards, episodes, *, gamma: float) -> np.ndarray:
    """``G_t = sum_k gamma^k r_{t+k}`` within each episode. rewards, episodes: shape
    ``(n_steps,)``, steps of an episode contiguous and in time order; returns ``(n_steps,)``."""
    rewards = _as_1d(rewards, "rewards")
    episodes = np.asarray(episodes)
    out = np.zeros_like(rewards)
    running = 0.0
    for i in range(rewards.size - 1, -1, -1):
        if i == rewards.size - 1 or episodes[i + 1] != episodes[i]:
            running = 0.0
        running = rewards[i] + gamma * running
        out[i] = running
    return out


def gae(rewards, values, episodes, *, gamma: float = 1.0, lam: float = 0.95,
        last_values=None) -> tuple[np.ndarray, np.ndarray]:
    """Generalised advantage estimation over per-step (turn-level) rewards and values.

    ``delta_t = r_t + gamma V_{t+1} - V_t``, ``A_t = sum_k (gamma lam)^k delta_{t+k}``; the
    value after an episode's last step is ``last_values[episode]`` (0 when not given: the
    episode terminated, or truncation is treated as termination). Source: Schulman et al.
    2016, "High-Dimensional Continuous Control Using GAE" (arXiv:1506.02438), section 3.
    rewards, values, episodes: shape ``(n_steps,)`` (steps of an episode contiguous, in time
    order); last_values: mapping episode -> value. Returns ``(advantages, value_targets)``,
    each ``(n_steps,)``, with ``value_targets = advantages + values``.
    """
    rewards, values = _as_1d(rewards, "rewards"), _as_1d(values, "values")
    episodes = np.asarray(episodes)
    advantages = np.zeros_like(rewards)
    running = 0.0
    for i in range(rewards.size - 1, -1, -1):
        last = i == rewards.size - 1 or episodes[i + 1] != episodes[i]
        if last:
            next_value = float((last_values or {}).get(episodes[i], 0.0))
            running = 0.0
        else:
            next_value = values[i + 1]
        delta = rewards[i] + gamma * next_value - values[i]
        running = delta + gamma * lam * running
        advantages[i] = running
    return advantages, advantages + values


def gigpo(rewards, episodes, groups, state_keys, *, step_weight: float = 1.0,
          gamma: float = 0.95, scale_std: bool = True, eps: float = 1e-6
          ) -> tuple[np.ndarray, np.ndarray]:
    """GiGPO: episode-level GRPO advantage plus a step-level one from anchor-state groups.

    ``A = A_episode + step_weight * A_step``. ``A_episode`` is `grpo` over episode returns
    (sum of rewards) within each group. Step groups collect every step, across the group's
    episodes (and repeated visits within one), whose ``state_key`` is exactly equal; a step's
    return is the discounted return from it (``gamma``); ``A_step`` is its group-normalised
    value (`grpo` over the step group). A step group of one gives ``A_step = 0``. Source: Feng
    et al. 2025, "Group-in-Group Policy Optimization for LLM Agent Training"
    (arXiv:2505.10978), section 3 (defaults: step weight 1, gamma 0.95).

    rewards, episodes, groups, state_keys: shape ``(n_steps,)``, steps of an episode
    contiguous in time order. Returns ``(advantages, step_group_sizes)``, both ``(n_steps,)``.
    """
    rewards = _as_1d(rewards, "rewards")
    episodes, groups = np.asarray(episodes), np.asarray(groups)
    episode_codes = group_codes(episodes)
    totals = np.bincount(episode_codes, weights=rewards)
    first = np.unique(episode_codes, return_index=True)[1]
    episode_groups = groups[first]
    a_episode = grpo(totals, episode_groups, scale_std=scale_std, eps=eps)[episode_codes]
    step_returns = discounted_returns(rewards, episodes, gamma=gamma)
    keys = np.empty(rewards.size, dtype=object)
    keys[:] = list(zip(groups.tolist(), [str(k) for k in state_keys]))
    step_codes = group_codes(keys)
    a_step = grpo(step_returns, step_codes, scale_std=scale_std, eps=eps)
    sizes = np.bincount(step_codes)[step_codes]
    return a_episode + step_weight * a_step, sizes


def tree_advantages(returns, episodes, nodes, parents, groups, *,
                    leaf_weighting: bool = True, local_only: bool = False) -> np.ndarray:
    """Tree (branching) rollouts: each action is scored by the returns of the leaves below it.

    A group is one tree: episodes (leaves) that share prefixes forked from env snapshots.
    Each step is listed once per episode passing through it and carries ``nodes[i]``, the id of
    the tree node its action leads to, and ``parents[i]``, the node of the state it was taken
    in (ids unique within the batch). ``V(n)`` is the mean return of the distinct episodes
    passing through node n, and ``A = (V(child) - V(parent)) + (V(child) - V(root))``: the
    local (sibling-relative) plus the global (tree-relative) advantage, scaled by
    ``1 / sqrt(leaves below the child)`` when ``leaf_weighting``. Source: Hou et al. 2025,
    "TreeRL: LLM Reinforcement Learning with On-Policy Tree Search" (ACL 2025),
    the global + local advantage of its tree nodes; BPO-style sibling baselines are the
    local term alone (``A = V(child) - V(parent)``, ``local_only=True``). A node that never branched has ``V(child) = V(parent)``.

    returns: per-step return of the step's episode; all arguments shape ``(n_steps,)``.
    Returns ``(n_steps,)``; duplicated (shared-prefix) steps get equal advantages.
    """
    returns = _as_1d(returns, "returns")
    episodes, nodes, parents = (np.asarray(x) for x in (episodes, nodes, parents))
    groups = np.asarray(groups)

    def mean_over_episodes(keys) -> dict[Any, tuple[float, int]]:
        seen: dict[Any, dict[Any, float]] = {}
        for key, episode, value in zip(keys, episodes.tolist(), returns.tolist()):
            seen.setdefault(key, {})[episode] = value
        return {key: (float(np.mean(list(v.values()))), len(v)) for key, v in seen.items()}

    child = mean_over_episodes(nodes.tolist())
    state = mean_over_episodes(parents.tolist())
    root = mean_over_episodes(groups.tolist())
    out = np.empty_like(returns)
    for i, (n, p, g) in enumerate(zip(nodes.tolist(), parents.tolist(), groups.tolist())):
        v_child, n_leaves = child[n]
        value = v_child - state[p][0]
        if not local_only:
            value += v_child - root[g][0]
        out[i] = value / np.sqrt(n_leaves) if leaf_weighting else value
    return out


# ---------------------------------------------------------------------------------------------
# Batch-level registry

@dataclass(frozen=True)
class AdvantageInputs:
    """Per-step arrays of one rollout batch, all of shape ``(n_steps,)``; steps of an episode
    are contiguous and in time order.

    episode: episode index; group: group index (G episodes of one task and env seed);
    reward: the step's reward; state_key: the env's `state_key()` before the action (GiGPO);
    value: the value head's estimate before the action (PPO; None otherwise);
    node/parent: tree node ids (tree rollouts; None otherwise).
    """

    episode: np.ndarray
    group: np.ndarray
    reward: np.ndarray
    state_key: np.ndarray
    value: np.ndarray | None = None
    node: np.ndarray | None = None
    parent: np.ndarray | None = None

    def episode_returns(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(returns (n_episodes,), groups (n_episodes,), episode code per step (n_steps,))``."""
        codes = group_codes(self.episode)
        totals = np.bincount(codes, weights=np.asarray(self.reward, dtype=float))
        first = np.unique(codes, return_index=True)[1]
        return totals, np.asarray(self.group)[first], codes


@dataclass(frozen=True)
class Advantages:
    """What an estimator returns: per-step advantages ``(n_steps,)``, value targets
    ``(n_steps,)`` for a value head (PPO only), and diagnostics for the metrics table."""

    advantages: np.ndarray
    value_targets: np.ndarray | None = None
    diagnostics: Mapping[str, float] = field(default_factory=dict)


def _episode_level(function: Callable[..., np.ndarray]) -> Callable[..., Advantages]:
    def apply(inputs: AdvantageInputs, **params: Any) -> Advantages:
        returns, groups, codes = inputs.episode_returns()
        per_episode = function(returns, groups, **params)
        return Advantages(per_episode[codes], None,
                          {"zero_variance_groups": zero_variance_fraction(returns, groups)})
    apply.__doc__ = function.__doc__
    return apply


def _gae(inputs: AdvantageInputs, *, gamma: float = 1.0, lam: float = 0.95) -> Advantages:
    if inputs.value is None:
        raise ConfigError("the ppo estimator needs value estimates; enable the value head")
    advantages, targets = gae(inputs.reward, inputs.value, inputs.episode, gamma=gamma, lam=lam)
    returns, groups, _ = inputs.episode_returns()
    return Advantages(advantages, targets,
                      {"zero_variance_groups": zero_variance_fraction(returns, groups)})


def _gigpo(inputs: AdvantageInputs, **params: Any) -> Advantages:
    advantages, sizes = gigpo(inputs.reward, inputs.episode, inputs.group, inputs.state_key,
                              **params)
    returns, groups, _ = inputs.episode_returns()
    return Advantages(advantages, None, {
        "zero_variance_groups": zero_variance_fraction(returns, groups),
        "step_group_size_mean": float(sizes.mean()) if sizes.size else 0.0,
        "step_group_singleton_fraction": float(np.mean(sizes == 1)) if sizes.size else 0.0})


def _tree(inputs: AdvantageInputs, **params: Any) -> Advantages:
    if inputs.node is None or inputs.parent is None:
        raise ConfigError("the tree estimator needs tree rollouts; set rollout.branches > 1")
    returns, groups, codes = inputs.episode_returns()
    advantages = tree_advantages(returns[codes], inputs.episode, inputs.node, inputs.parent,
                                 inputs.group, **params)
    return Advantages(advantages, None,
                      {"zero_variance_groups": zero_variance_fraction(returns, groups)})


_gae.__doc__, _gigpo.__doc__, _tree.__doc__ = gae.__doc__, gigpo.__doc__, tree_advantages.__doc__

ESTIMATORS: dict[str, Callable[..., Advantages]] = {
    "grpo": _episode_level(grpo),
    "dr_grpo": _episode_level(dr_grpo),
    "rloo": _episode_level(rloo),
    "reinforce_pp": _episode_level(reinforce_pp_baseline),
    "gae": _gae,
    "gigpo": _gigpo,
    "tree": _tree,
}
"""Estimator name -> ``f(inputs: AdvantageInputs, **params) -> Advantages``."""


def replace_inputs(inputs: AdvantageInputs, **changes: Any) -> AdvantageInputs:
    """A copy of `inputs` with some arrays replaced (e.g. ``value=...``)."""
    from dataclasses import replace

    return replace(inputs, **changes)


def estimate(name: str, inputs: AdvantageInputs, **params: Any) -> Advantages:
    """Apply the registered estimator ``name`` to a batch."""
    if name not in ESTIMATORS:
        raise UnknownNameError("advantage estimator", name, ESTIMATORS)
    return ESTIMATORS[name](inputs, **params)
