import math

import numpy as np
import pytest
import scipy.stats
from hypothesis import given, settings, strategies as st

from signals.metrics import (METRICS, informative, pooled_spearman, snap_ties,
                             within_state_metrics)


def one(scores, q):
    values = within_state_metrics([np.array(scores, float)], [np.array(q, float)])
    return {k: float(v[0]) for k, v in values.items()}


def test_perfect_and_reversed_orders_by_hand():
    best = one([3, 2, 1], [1.0, 0.5, 0.0])
    assert best == {"kendall_tau": 1.0, "spearman": 1.0, "pairwise_accuracy": 1.0, "top1": 1.0,
                    "regret": 0.0, "ndcg": 1.0}
    worst = one([1, 2, 3], [1.0, 0.5, 0.0])
    assert worst["kendall_tau"] == -1.0 and worst["spearman"] == -1.0
    assert worst["pairwise_accuracy"] == 0.0 and worst["top1"] == 0.0 and worst["regret"] == 1.0
    # NDCG of the reversed order, linear gains (1, 0.5, 0): DCG = 0/1 + 0.5/log2(3) + 1/2
    ideal = 1 + 0.5 / math.log2(3)
    assert worst["ndcg"] == pytest.approx((0.5 / math.log2(3) + 1 / 2) / ideal)


def test_ties_by_hand():
    # q has a tie between candidates 0 and 1 (both optimal); the signal ties 1 and 2
    m = one([2, 1, 1], [1.0, 1.0, 0.0])
    # distinct-Q pairs: (0,2) agree, (1,2) tied by the signal -> 1.5 / 2
    assert m["pairwise_accuracy"] == 0.75
    assert m["top1"] == 1.0 and m["regret"] == 0.0
    # the signal's argmax ties over two candidates, one optimal: top-1 = 1/2, regret = 1/2
    m = one([1, 1, 0], [1.0, 0.0, 0.0])
    assert m["top1"] == 0.5 and m["regret"] == 0.5
    # NDCG with a tie at the top: both share the mean discount of positions 0 and 1
    shared = (1 + 1 / math.log2(3)) / 2
    assert m["ndcg"] == pytest.approx(shared / 1.0)


def test_tau_and_rho_match_scipy():
    rng = np.random.default_rng(0)
    for _ in range(200):
        n = int(rng.integers(2, 7))
        s = rng.integers(0, 3, n).astype(float)
        q = rng.integers(0, 3, n).astype(float)
        m = one(s, q)
        if np.ptp(q) == 0:
            assert all(math.isnan(v) for v in m.values())
            continue
        if np.ptp(s) == 0:
            assert m["kendall_tau"] == 0.0 and m["spearman"] == 0.0
            continue
        assert m["kendall_tau"] == pytest.approx(scipy.stats.kendalltau(s, q, variant="b")[0])
        assert m["spearman"] == pytest.approx(scipy.stats.spearmanr(s, q)[0])


def test_pairwise_accuracy_is_brute_force():
    rng = np.random.default_rng(1)
    for _ in range(100):
        n = int(rng.integers(2, 6))
        s, q = rng.integers(0, 3, n).astype(float), rng.integers(0, 3, n).astype(float)
        pairs = [(i, j) for i in range(n) for j in range(i + 1, n) if q[i] != q[j]]
        if not pairs:
            continue
        expected = np.mean([1.0 if np.sign(s[i] - s[j]) == np.sign(q[i] - q[j]) else
                            0.5 if s[i] == s[j] else 0.0 for i, j in pairs])
        assert one(s, q)["pairwise_accuracy"] == pytest.approx(expected)


def test_uninformative_states_are_nan_and_solver_rounding_ties():
    m = within_state_metrics([np.array([1.0, 2.0]), np.array([5.0])],
                             [np.array([0.3, 0.3]), np.array([1.0])])
    assert all(np.isnan(v).all() for v in m.values())
    assert not informative(np.array([0.5, 0.5 + 1e-13]))
    assert snap_ties(np.array([0.5 + 1e-13, 0.5, 0.2])).tolist() == [0.5, 0.5, 0.2]


def test_mixed_sizes_are_aligned_with_their_states():
    scores = [np.array([1.0, 0.0]), np.array([0.0, 1.0, 2.0]), np.array([2.0, 1.0])]
    q = [np.array([1.0, 0.0]), np.array([0.0, 1.0, 2.0]), np.array([0.0, 1.0])]
    assert within_state_metrics(scores, q)["kendall_tau"].tolist() == [1.0, 1.0, -1.0]


def test_shape_mismatch_is_an_error():
    with pytest.raises(ValueError):
        within_state_metrics([np.array([1.0, 2.0])], [np.array([1.0, 2.0, 3.0])])
    with pytest.raises(ValueError):
        within_state_metrics([np.array([np.nan, 2.0])], [np.array([1.0, 2.0])])


TRANSFORMS = [np.exp, lambda x: 3 * x - 7, lambda x: x ** 3 + x, np.arctan,
              lambda x: np.log1p(np.exp(x))]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.lists(st.integers(-3, 3), min_size=2, max_size=6),
                          st.integers(0, 10_000)), min_size=1, max_size=8),
       st.integers(0, len(TRANSFORMS) - 1))
def test_invariant_to_strictly_increasing_transforms(states, which):
    transform = TRANSFORMS[which]
    scores, q = [], []
    for values, seed in states:
        s = np.array(values, float) / 2
        scores.append(s)
        q.append(np.random.default_rng(seed).integers(0, 3, s.size).astype(float))
    base = within_state_metrics(scores, q)
    moved = within_state_metrics([transform(s) for s in scores], q)
    for name in METRICS:
        np.testing.assert_allclose(moved[name], base[name], equal_nan=True, atol=1e-12)
    pooled = pooled_spearman(scores, q)
    assert pooled_spearman([transform(s) for s in scores], q) == pytest.approx(
        pooled, nan_ok=True)


def test_pooled_spearman_rewards_knowing_good_states():
    # within each state the order is perfect, but state values are inverted across states
    scores = [np.array([1.0, 0.0]), np.array([11.0, 10.0])]
    q = [np.array([10.0, 9.0]), np.array([1.0, 0.0])]
    assert within_state_metrics(scores, q)["kendall_tau"].tolist() == [1.0, 1.0]
    assert pooled_spearman(scores, q) == pytest.approx(scipy.stats.spearmanr(
        [1, 0, 11, 10], [10, 9, 1, 0])[0])
    assert pooled_spearman(scores, q) < 0
