"""Learned critic and Monte-Carlo value of the behaviour policy.

- ``critic-ridge``: a linear value head ``Q(s, a) = w . phi(s, a)`` fitted by ridge
  regression (``scipy.sparse.linalg.lsqr`` with damping) to the discounted returns of
  stored behaviour steps (`SignalResources.transitions`, taken from episodes that no
  evaluation point comes from). ``phi`` hashes (crc32, `N_FEATURES` buckets) three kinds of
  indicator: the action; each non-blank character of the observation at its (row, column),
  crossed with the action; and the same characters alone (a state-value part). On grid
  games this is close to a tabular Q of the behaviour policy.
- ``mc-behaviour``: Monte-Carlo Q of the behaviour policy from the point's snapshot:
  uniform random rollouts over admissible actions (the default behaviour policy;
  `n_rollouts`, `horizon` and `gamma` are options).
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence

import numpy as np

from signals.base import EvaluationPoint, Simulator
from signals.reference import monte_carlo_q, uniform_policy
from signals.registry import SignalResources, Transition, register_signal

__all__ = ["N_FEATURES", "features", "RidgeCritic", "MonteCarloBehaviourSignal"]

N_FEATURES = 1 << 16
RIDGE = 1.0
"""Ridge penalty ``lambda`` (lsqr's damp is its square root)."""


def features(observation: str, action: str) -> np.ndarray:
    """Hashed feature indices of ``(observation, action)``, shape ``(n_active,)``, sorted."""
    keys = [f"a|{action}"]
    for row, line in enumerate(observation.splitlines()):
        for col, char in enumerate(line):
            if not char.isspace():
                keys.append(f"s|{row}|{col}|{char}")
                keys.append(f"sa|{action}|{row}|{col}|{char}")
    return np.unique([zlib.crc32(k.encode()) % N_FEATURES for k in keys])


def _design(rows: Sequence[np.ndarray]):
    import scipy.sparse

    indptr = np.cumsum([0] + [len(r) for r in rows])
    indices = np.concatenate(rows) if rows else np.zeros(0, dtype=np.int64)
    data = np.ones(indices.size)
    return scipy.sparse.csr_matrix((data, indices, indptr), shape=(len(rows), N_FEATURES))


class RidgeCritic:
    name = "critic-ridge"

    def __init__(self, transitions: Sequence[Transition], ridge: float = RIDGE):
        self.transitions, self.ridge = list(transitions), ridge
        self._weights: dict[str, tuple[np.ndarray, float]] = {}

    def _fit(self, suite: str) -> tuple[np.ndarray, float]:
        import scipy.sparse.linalg

        if suite not in self._weights:
            data = [t for t in self.transitions if t.suite == suite]
            if not data:
                self._weights[suite] = (np.zeros(N_FEATURES), 0.0)
            else:
                y = np.array([t.ret for t in data])
                offset = float(y.mean())
                x = _design([features(t.observation, t.action) for t in data])
                weights = scipy.sparse.linalg.lsqr(x, y - offset, damp=np.sqrt(self.ridge))[0]
                self._weights[suite] = (weights, offset)
        return self._weights[suite]

    def score(self, points: Sequence[EvaluationPoint]) -> list[np.ndarray]:
        out = []
        for point in points:
            weights, offset = self._fit(point.suite)
            out.append(np.array([offset + weights[features(point.observation, c)].sum()
                                 for c in point.candidates]))
        return out


class MonteCarloBehaviourSignal:
    name = "mc-behaviour"

    def __init__(self, simulator: Simulator, *, n_rollouts: int = 8, horizon: int = 50,
                 gamma: float = 0.99, seed: int = 0):
        self.simulator = simulator
        self.n_rollouts, self.horizon, self.gamma, self.seed = n_rollouts, horizon, gamma, seed

    def score(self, points: Sequence[EvaluationPoint]) -> list[np.ndarray]:
        estimate = monte_carlo_q(self.simulator, points, policy=uniform_policy,
                                 n_rollouts=self.n_rollouts, gamma=self.gamma,
                                 horizon=self.horizon, seed=self.seed + 1)
        return list(estimate.q)


def _mc(r: SignalResources) -> MonteCarloBehaviourSignal:
    return MonteCarloBehaviourSignal(
        r.simulator, n_rollouts=r.option("mc-behaviour", "n_rollouts", 8),
        horizon=r.option("mc-behaviour", "horizon", 50),
        gamma=r.option("mc-behaviour", "gamma", 0.99), seed=r.seed)


register_signal("critic-ridge", "critic", lambda r: RidgeCritic(r.transitions),
                "ridge value head on hashed text features, fitted to stored returns",
                ("transitions",))
register_signal("mc-behaviour", "critic", _mc,
                "Monte-Carlo Q of the uniform behaviour policy from the snapshot",
                ("simulator",))
