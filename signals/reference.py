"""Reference Q-values of evaluation points: exact where the suite solves its MDP, otherwise
Monte-Carlo from snapshots.

Exact: the env's ``q_values()`` in the point's state (frozenlake: value iteration; sokoban:
BFS state graph with policy iteration).

Monte-Carlo: for each candidate, restore the state's snapshot, force the candidate, then
follow a reference policy until the episode ends or `horizon` steps pass; the estimate is
the mean discounted return over `n_rollouts` independent rollouts (the simulator reseeds the
env's randomness per rollout), with its standard error ``std / sqrt(n)``. The *label-noise
ceiling* compares two independent halves of the rollouts: the mean within-state Kendall
tau-b between the two half-estimates. No signal can be expected to agree with noisy labels
much better than the labels agree with themselves.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from harness.core import HarnessError, make_rng
from signals.base import EvaluationPoint, SimEnv, Simulator
from signals.metrics import within_state_metrics

__all__ = ["ReferenceQ", "ReferenceUnavailableError", "RolloutPolicy", "oracle_policy",
           "uniform_policy", "epsilon_oracle_policy", "exact_q", "monte_carlo_q",
           "discounted_return", "label_noise_ceiling"]

RolloutPolicy = Callable[[SimEnv, dict, np.random.Generator], str]
"""``(env, info, rng) -> action``: the policy followed after the forced first action."""


class ReferenceUnavailableError(HarnessError):
    """The suite cannot give the requested reference (no exact Q, no snapshots, ...)."""


@dataclass(frozen=True)
class ReferenceQ:
    """Reference values for a list of points, aligned with it.

    q: one array per point, shape ``(n_candidates,)``. standard_error: same shapes (zeros for
    exact values). halves: per point the two half-sample estimates (Monte-Carlo only).
    """

    method: str
    q: tuple[np.ndarray, ...]
    standard_error: tuple[np.ndarray, ...]
    halves: tuple[tuple[np.ndarray, np.ndarray], ...] | None = None
    details: Mapping[str, Any] = field(default_factory=dict)

    def by_point(self, points: Sequence[EvaluationPoint]) -> dict[str, np.ndarray]:
        return {p.point_id: q for p, q in zip(points, self.q)}


def exact_q(simulator: Simulator, points: Sequence[EvaluationPoint]) -> ReferenceQ:
    """Exact Q of every candidate from the env's ``q_values()``."""
    values = []
    for point in points:
        env, _ = simulator.env_at(point)
        q_values = getattr(env, "q_values", None)
        if q_values is None:
            raise ReferenceUnavailableError(f"{point.suite} has no exact Q-values; use "
                                            "--reference mc")
        table = q_values()
        missing = [c for c in point.candidates if c not in table]
        if missing:
            raise ReferenceUnavailableError(f"{point.suite}: no exact Q for candidates "
                                            f"{missing} at {point.point_id}")
        values.append(np.array([float(table[c]) for c in point.candidates]))
    zeros = tuple(np.zeros_like(v) for v in values)
    return ReferenceQ("exact", tuple(values), zeros)


def oracle_policy(env: SimEnv, info: dict, rng: np.random.Generator) -> str:
    """The env's ``oracle_action()`` (a planner or solver)."""
    oracle = getattr(env, "oracle_action", None)
    if oracle is None:
        raise ReferenceUnavailableError("this suite has no oracle_action(); pick the uniform "
                                        "rollout policy")
    return oracle()


def uniform_policy(env: SimEnv, info: dict, rng: np.random.Generator) -> str:
    """Uniform over the admissible actions."""
    actions = info.get("admissible_actions") or []
    if not actions:
        raise ReferenceUnavailableError("uniform rollouts need admissible_actions in info")
    return actions[int(rng.integers(len(actions)))]


def epsilon_oracle_policy(epsilon: float) -> RolloutPolicy:
    """The oracle's action, replaced with probability `epsilon` by a uniform one."""
    def policy(env: SimEnv, info: dict, rng: np.random.Generator) -> str:
        if rng.random() < epsilon:
            return uniform_policy(env, info, rng)
        return oracle_policy(env, info, rng)
    return policy


def discounted_return(env: SimEnv, info: dict, first_action: str, policy: RolloutPolicy,
                      rng: np.random.Generator, *, gamma: float, horizon: int
                      ) -> tuple[float, bool]:
    """Return of one rollout that starts with `first_action` from the env's current state:
    ``sum_t gamma**t r_t`` over at most `horizon` steps. Returns ``(return, cut)`` where
    `cut` is True when the rollout ended by the horizon or the env's step limit rather than a
    terminal state."""
    total, discount, action = 0.0, 1.0, first_action
    for _ in range(horizon):
        result = env.step(action)
        total += discount * float(result.reward)
        if result.terminated:
            return total, False
        if result.truncated:
            return total, True
        discount *= gamma
        info = result.info
        action = policy(env, info, rng)
    return total, True


def monte_carlo_q(simulator: Simulator, points: Sequence[EvaluationPoint], *,
                  policy: RolloutPolicy = oracle_policy, n_rollouts: int = 32,
                  gamma: float = 0.99, horizon: int = 200, seed: int = 0) -> ReferenceQ:
    """Monte-Carlo Q of every candidate (see the module docstring).

    Rollout ``r`` of candidate ``c`` at a point uses the env reseeded with, and a policy RNG
    from, ``make_rng("signals/mc", seed, point_id, c, r)``, so estimates do not depend on
    the order points are processed in. ``details["cut_fraction"]``: share of rollouts that
    ended by the horizon or step limit (their value is biased towards 0).
    """
    if n_rollouts < 2:
        raise HarnessError(f"Monte-Carlo Q needs n_rollouts >= 2, got {n_rollouts}")
    q, se, halves, cut = [], [], [], 0
    for point in points:
        env, info = simulator.env_at(point)
        snapshot = env.snapshot()
        returns = np.empty((len(point.candidates), n_rollouts))
        for c, action in enumerate(point.candidates):
            for r in range(n_rollouts):
                env.restore(snapshot)
                rng = make_rng("signals/mc", seed, point.point_id, c, r)
                simulator.reseed(env, int(rng.integers(2**63)))
                returns[c, r], was_cut = discounted_return(env, dict(info), action, policy, rng,
                                                           gamma=gamma, horizon=horizon)
                cut += was_cut
        half = n_rollouts // 2
        q.append(returns.mean(axis=1))
        se.append(returns.std(axis=1, ddof=1) / np.sqrt(n_rollouts))
        halves.append((returns[:, :half].mean(axis=1), returns[:, half:].mean(axis=1)))
    total = max(1, sum(len(p.candidates) for p in points) * n_rollouts)
    return ReferenceQ("monte-carlo", tuple(q), tuple(se), tuple(halves),
                      {"n_rollouts": n_rollouts, "gamma": gamma, "horizon": horizon,
                       "cut_fraction": cut / total})


def label_noise_ceiling(reference: ReferenceQ) -> dict[str, float]:
    """Mean within-state agreement of the two half-sample estimates (Monte-Carlo only):
    ``{metric: mean over states informative under both halves}``; every metric is 1 (or
    regret 0) for exact references."""
    if reference.halves is None:
        return {"kendall_tau": 1.0, "spearman": 1.0, "pairwise_accuracy": 1.0, "top1": 1.0,
                "regret": 0.0, "ndcg": 1.0}
    first = [a for a, _ in reference.halves]
    second = [b for _, b in reference.halves]
    metrics = within_state_metrics(first, second)
    return {name: float(np.nanmean(values)) if np.isfinite(values).any() else float("nan")
            for name, values in metrics.items()}
