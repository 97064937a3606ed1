"""Alignment of a signal with reference Q-values, within each state, plus the pooled Spearman.

Within one state with candidate scores ``s`` and reference values ``q`` (both shape
``(n,)``):

- ``kendall_tau``: Kendall's tau-b (ties in either variable corrected), as
  ``scipy.stats.kendalltau(s, q, variant="b")``.
- ``spearman``: Spearman's rho, the Pearson correlation of average ranks, as
  ``scipy.stats.spearmanr`` (ranks from ``scipy.stats.rankdata``).
- ``pairwise_accuracy``: over the pairs whose Q differs, the share the signal orders the same
  way; a pair the signal ties counts one half.
- ``top1``: tie-aware top-1 agreement, the chance that the signal's argmax (ties broken
  uniformly at random) is an optimal action.
- ``regret``: normalised regret of the signal's argmax, ``(max q - E[q of argmax]) / (max q -
  min q)`` in [0, 1], same tie breaking; lower is better.
- ``ndcg``: NDCG with linear gains ``(q - min q) / (max q - min q)``, discount
  ``1 / log2(position + 2)``; tied signal scores share the average discount of the positions
  they span (McSherry & Najork 2008), so NDCG too is independent of tie order.

All six depend on the signal only through its order within the state, so any strictly
increasing transform of a signal leaves them unchanged. Q values closer than `Q_TOLERANCE`
(relative to the state's largest ``|q|``, at least 1) count as equal, so solver rounding
makes no spurious order. A state where every candidate has the same Q (or with fewer than
two candidates) carries no ordering information: every metric is NaN there and summaries
skip it. Where the signal ties every candidate but Q does not, tau and rho are 0 (scipy
would give NaN: the signal orders nothing).

`pooled_spearman` is QVal's headline: Spearman's rho over every (state, candidate) pair
pooled across states. It rewards a signal for knowing which *states* are good, not only
which action is better within a state, so it is reported separately.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import scipy.stats

__all__ = ["METRICS", "HIGHER_IS_BETTER", "Q_TOLERANCE", "within_state_metrics",
           "pooled_spearman", "snap_ties", "informative"]

METRICS = ("kendall_tau", "spearman", "pairwise_accuracy", "top1", "regret", "ndcg")
HIGHER_IS_BETTER = {name: name != "regret" for name in METRICS}
Q_TOLERANCE = 1e-9


def snap_ties(q: np.ndarray, tolerance: float = Q_TOLERANCE) -> np.ndarray:
    """`q` (shape ``(n,)``) with values within ``tolerance * max(1, max |q|)`` of their
    sorted neighbour replaced by their group's first value, so near-equal Q tie exactly."""
    q = np.asarray(q, dtype=float)
    if q.size < 2:
        return q.copy()
    order = np.argsort(q, kind="stable")
    sorted_q = q[order]
    scale = tolerance * max(1.0, float(np.max(np.abs(q))))
    new_group = np.concatenate([[True], np.diff(sorted_q) > scale])
    firsts = sorted_q[new_group][np.cumsum(new_group) - 1]
    out = np.empty_like(q)
    out[order] = firsts
    return out


def informative(q: np.ndarray, tolerance: float = Q_TOLERANCE) -> bool:
    """True when the state's Q (shape ``(n,)``) orders at least one pair of candidates."""
    snapped = snap_ties(q, tolerance)
    return snapped.size >= 2 and bool(np.ptp(snapped) > 0)


def _check(scores: Sequence[np.ndarray], q: Sequence[np.ndarray]) -> None:
    if len(scores) != len(q):
        raise ValueError(f"{len(scores)} score arrays for {len(q)} Q arrays")
    for i, (s, v) in enumerate(zip(scores, q)):
        if np.shape(s) != np.shape(v) or np.ndim(s) != 1:
            raise ValueError(f"point {i}: scores of shape {np.shape(s)} for Q of shape "
                             f"{np.shape(v)}")
        if not (np.isfinite(s).all() and np.isfinite(v).all()):
            raise ValueError(f"point {i}: scores and Q must be finite")


def _pearson_rows(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Row-wise Pearson correlation of ``(m, n)`` arrays; 0 where `x` is constant."""
    xc = x - x.mean(axis=1, keepdims=True)
    yc = y - y.mean(axis=1, keepdims=True)
    denominator = np.sqrt((xc**2).sum(axis=1) * (yc**2).sum(axis=1))
    safe = np.where(denominator > 0, denominator, 1.0)
    return np.where(denominator > 0, (xc * yc).sum(axis=1) / safe, 0.0)


def _group_metrics(s: np.ndarray, q: np.ndarray) -> dict[str, np.ndarray]:
    """Every metric for ``m`` informative states of ``n`` candidates: s, q shape ``(m, n)``."""
    m, n = s.shape
    i, j = np.triu_indices(n, 1)
    ds, dq = np.sign(s[:, i] - s[:, j]), np.sign(q[:, i] - q[:, j])
    n0 = i.size
    ties_s, ties_q = (ds == 0).sum(axis=1), (dq == 0).sum(axis=1)
    denominator = np.sqrt((n0 - ties_s) * (n0 - ties_q).astype(float))
    tau = np.where(denominator > 0, (ds * dq).sum(axis=1) / np.where(denominator > 0,
                                                                     denominator, 1.0), 0.0)
    rho = _pearson_rows(scipy.stats.rankdata(s, axis=1), scipy.stats.rankdata(q, axis=1))
    distinct = dq != 0
    agree = np.where(distinct, (ds == dq) + 0.5 * (ds == 0), 0.0)
    pairwise = agree.sum(axis=1) / distinct.sum(axis=1)

    q_max, q_min = q.max(axis=1, keepdims=True), q.min(axis=1, keepdims=True)
    top_s = s == s.max(axis=1, keepdims=True)
    n_top = top_s.sum(axis=1)
    top1 = (top_s & (q == q_max)).sum(axis=1) / n_top
    chosen = (top_s * q).sum(axis=1) / n_top
    span = (q_max - q_min)[:, 0]
    regret = (q_max[:, 0] - chosen) / span

    gains = (q - q_min) / span[:, None]
    cumulative = np.concatenate([[0.0], np.cumsum(1.0 / np.log2(np.arange(n) + 2.0))])
    above = (s[:, None, :] > s[:, :, None]).sum(axis=2)  # items scored strictly higher
    tied = (s[:, None, :] == s[:, :, None]).sum(axis=2)
    discount = (cumulative[above + tied] - cumulative[above]) / tied
    ideal = np.sort(gains, axis=1)[:, ::-1] @ (1.0 / np.log2(np.arange(n) + 2.0))
    ndcg = (gains * discount).sum(axis=1) / ideal
    return {"kendall_tau": tau, "spearman": rho, "pairwise_accuracy": pairwise, "top1": top1,
            "regret": regret, "ndcg": ndcg}


def within_state_metrics(scores: Sequence[np.ndarray], q: Sequence[np.ndarray], *,
                         tolerance: float = Q_TOLERANCE) -> dict[str, np.ndarray]:
    """Every metric of `METRICS` for each state.

    scores, q: one array per state, shape ``(n_candidates,)`` each (sizes may differ across
    states). Returns ``{metric: array of shape (n_states,)}``, NaN for uninformative states.
    Vectorised over states of the same size.
    """
    _check(scores, q)
    n_states = len(q)
    out = {name: np.full(n_states, np.nan) for name in METRICS}
    snapped = [snap_ties(v, tolerance) for v in q]
    by_size: dict[int, list[int]] = {}
    for index, v in enumerate(snapped):
        if v.size >= 2 and np.ptp(v) > 0:
            by_size.setdefault(v.size, []).append(index)
    for indices in by_size.values():
        s = np.stack([np.asarray(scores[k], dtype=float) for k in indices])
        values = _group_metrics(s, np.stack([snapped[k] for k in indices]))
        for name in METRICS:
            out[name][indices] = values[name]
    return out


def pooled_spearman(scores: Sequence[np.ndarray], q: Sequence[np.ndarray]) -> float:
    """Spearman's rho over all (state, candidate) pairs pooled (QVal's headline).

    scores, q: one array per state, shape ``(n_candidates,)`` each. NaN when either pooled
    vector is constant.
    """
    _check(scores, q)
    s = np.concatenate([np.asarray(v, dtype=float) for v in scores])
    v = np.concatenate([np.asarray(x, dtype=float) for x in q])
    if s.size < 2 or np.ptp(s) == 0 or np.ptp(v) == 0:
        return float("nan")
    return float(scipy.stats.spearmanr(s, v).statistic)
