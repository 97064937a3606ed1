"""Estimators: hand-computed cases, rliable's published toy cases, scipy cross-checks."""

import math
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
import scipy.stats
from hypothesis import given
from hypothesis import strategies as st

from harness.core import HarnessError
from harness.stats.estimators import (iqm, mean_score, optimality_gap,
                                      paired_probability_of_improvement, pass_at_k,
                                      pass_at_k_table, pass_hat_k, probability_of_improvement,
                                      proportion_interval, success_rate)

# rliable's own test case (google-research/rliable, tests/rliable/metrics_test.py):
# score matrices of shape (num_runs, num_tasks).
RLIABLE_X = np.array([[1, 2], [2, 2], [1, 1], [2, 1]])
RLIABLE_Y = np.array([[1, 1], [2, 2], [3, 3]])


# --- success rate and mean score ---------------------------------------------------------

def test_wilson_eight_of_ten_by_hand():
    # p = 0.8, n = 10, z = 1.959964: centre (p + z^2/2n) / (1 + z^2/n) = 0.716738,
    # half-width z / (1 + z^2/n) * sqrt(p(1-p)/n + z^2/4n^2) = 0.226578.
    interval = success_rate([True] * 8 + [False] * 2)
    assert interval.estimate == 0.8
    assert interval.low == pytest.approx(0.490162, abs=1e-6)
    assert interval.high == pytest.approx(0.943317, abs=1e-6)
    assert interval.method == "wilson"


def test_jeffreys_is_beta_quantiles():
    # Jeffreys: quantiles of Beta(c + 1/2, n - c + 1/2) = Beta(8.5, 2.5).
    interval = success_rate(np.array([1] * 8 + [0] * 2), method="jeffreys")
    assert interval.low == pytest.approx(scipy.stats.beta.ppf(0.025, 8.5, 2.5))
    assert interval.high == pytest.approx(scipy.stats.beta.ppf(0.975, 8.5, 2.5))


def test_proportion_interval_rejects_bad_counts_and_methods():
    with pytest.raises(HarnessError):
        proportion_interval(0, 0)
    with pytest.raises(HarnessError):
        proportion_interval(5, 4)
    with pytest.raises(HarnessError, match="wilson"):
        proportion_interval(1, 4, method="wald")


@pytest.mark.parametrize("bad", [[], [1.0, np.nan], [0, 2, 1]])
def test_success_rate_bad_input(bad):
    with pytest.raises(HarnessError):
        success_rate(bad)


def test_mean_score_t_interval_by_hand():
    # [1, 2, 3, 4]: mean 2.5, sd 1.290994, se 0.645497, t(3, 0.975) = 3.182446,
    # half-width 2.054260.
    interval = mean_score([1.0, 2.0, 3.0, 4.0])
    assert interval.estimate == 2.5
    assert interval.low == pytest.approx(0.445740, abs=1e-6)
    assert interval.high == pytest.approx(4.554260, abs=1e-6)


@pytest.mark.parametrize("bad", [[], [1.0], [1.0, np.nan, 2.0], [[1.0, 2.0]]])
def test_mean_score_bad_input(bad):
    with pytest.raises(HarnessError):
        mean_score(bad)


# --- IQM and optimality gap ----------------------------------------------------------------

def test_iqm_on_rliable_toy_cases():
    assert iqm(RLIABLE_X) == 1.5  # pooled 1,1,1,1,2,2,2,2 -> middle half 1,1,2,2
    assert iqm(RLIABLE_Y) == 2.0  # pooled 1,1,2,2,3,3 -> cut one each side -> 1,2,2,3


@pytest.mark.parametrize("scores, expected", [
    ([1, 2, 3, 4, 5, 6, 7, 8], 4.5),    # keep 3,4,5,6
    ([0, 0, 1, 10], 0.5),               # keep 0,1
    ([[5, 1], [100, 2]], 3.5),          # pooled 1,2,5,100 -> keep 2,5
])
def test_iqm_by_hand(scores, expected):
    assert iqm(scores) == pytest.approx(expected)


def test_optimality_gap_by_hand_and_rliable_form():
    scores = np.array([[0.2, 0.5], [1.2, 1.0]])
    # max(1 - s, 0): 0.8, 0.5, 0, 0 -> mean 0.325
    assert optimality_gap(scores) == pytest.approx(0.325)
    # rliable writes it gamma - mean(min(scores, gamma)).
    assert optimality_gap(scores) == pytest.approx(1 - np.mean(np.minimum(scores, 1)))
    assert optimality_gap(scores, gamma=0.5) == pytest.approx((0.3 + 0 + 0 + 0) / 4)


@pytest.mark.parametrize("estimator", [iqm, optimality_gap])
@pytest.mark.parametrize("bad", [[], [[np.nan, 1.0]], [np.inf]])
def test_aggregates_reject_empty_and_nan(estimator, bad):
    with pytest.raises(HarnessError):
        estimator(bad)


# --- pass@k and pass^k ---------------------------------------------------------------------

# n samples, c successes, k  ->  pass@k = 1 - C(n-c,k)/C(n,k),  pass^k = C(c,k)/C(n,k)
HAND = [
    (5, 2, 1, 0.4, 0.4),
    (5, 2, 2, 1 - 3 / 10, 1 / 10),
    (5, 2, 3, 1 - 1 / 10, 0.0),
    (5, 2, 4, 1.0, 0.0),
    (5, 4, 2, 1.0, 6 / 10),
    (5, 0, 3, 0.0, 0.0),
    (5, 5, 5, 1.0, 1.0),
    (10, 3, 5, 1 - 21 / 252, 0.0),
]


@pytest.mark.parametrize("n, c, k, at_k, hat_k", HAND)
def test_pass_at_k_by_hand(n, c, k, at_k, hat_k):
    assert pass_at_k(n, c, k) == pytest.approx(at_k)
    assert pass_hat_k(n, c, k) == pytest.approx(hat_k)


def test_pass_at_k_vectorised_over_tasks_and_stable_for_large_n():
    n = np.array([200, 200, 1000])
    c = np.array([50, 1, 999])
    k = 100
    exact_at = [1 - Fraction(math.comb(ni - ci, k), math.comb(ni, k)) for ni, ci in zip(n, c)]
    exact_hat = [Fraction(math.comb(ci, k), math.comb(ni, k)) for ni, ci in zip(n, c)]
    np.testing.assert_allclose(pass_at_k(n, c, k), [float(v) for v in exact_at], rtol=1e-12)
    np.testing.assert_allclose(pass_hat_k(n, c, k), [float(v) for v in exact_hat], rtol=1e-10)


@given(st.integers(1, 40).flatmap(lambda n: st.tuples(
    st.just(n), st.integers(0, n), st.integers(1, n))))
def test_pass_at_k_properties(case):
    n, c, k = case
    at_k, hat_k = float(pass_at_k(n, c, k)), float(pass_hat_k(n, c, k))
    assert at_k == pytest.approx(1 - math.comb(n - c, k) / math.comb(n, k), abs=1e-12)
    assert hat_k == pytest.approx(math.comb(c, k) / math.comb(n, k), abs=1e-12)
    assert 0.0 <= hat_k <= at_k + 1e-12 and at_k <= 1.0
    if k == 1:
        assert at_k == pytest.approx(c / n) and hat_k == pytest.approx(c / n)
    if k < n:
        assert float(pass_at_k(n, c, k + 1)) >= at_k - 1e-12
        assert float(pass_hat_k(n, c, k + 1)) <= hat_k + 1e-12


@pytest.mark.parametrize("n, c, k", [(3, 1, 4), (3, 4, 1), (3, 1, 0), (3.0, 1, 1), ([], [], 1)])
def test_pass_at_k_bad_input(n, c, k):
    with pytest.raises(HarnessError):
        pass_at_k(n, c, k)


def test_pass_at_k_table_from_frame():
    # task a: 4 samples, 1 success; task b: 4 samples, 4 successes (one errored run is
    # a failure in the table: success is False for errors).
    frame = pd.DataFrame({
        "policy": "p", "train_seed": pd.array([pd.NA] * 8, dtype="Int64"), "suite": "toy@1",
        "task_id": ["a"] * 4 + ["b"] * 4,
        "success": [True, False, False, False, True, True, True, False],
    })
    table = pass_at_k_table(frame, 2).set_index("task_id")
    assert table.loc["a", "n"] == 4 and table.loc["a", "c"] == 1
    assert table.loc["a", "pass_at_k"] == pytest.approx(1 - 3 / 6)
    assert table.loc["a", "pass_hat_k"] == pytest.approx(0.0)
    assert table.loc["b", "pass_at_k"] == pytest.approx(1.0)
    assert table.loc["b", "pass_hat_k"] == pytest.approx(3 / 6)
    with pytest.raises(HarnessError, match="at least k"):
        pass_at_k_table(frame, 5)
    with pytest.raises(HarnessError):
        pass_at_k_table(frame.iloc[:0], 1)


# --- probability of improvement -------------------------------------------------------------

def rliable_probability_of_improvement(scores_x, scores_y):
    """rliable's loop (metrics.probability_of_improvement), for the cross-check."""
    values = []
    for task in range(scores_x.shape[1]):
        if np.array_equal(scores_x[:, task], scores_y[:, task]):
            values.append(0.5)
            continue
        u, _ = scipy.stats.mannwhitneyu(scores_x[:, task], scores_y[:, task],
                                        alternative="greater")
        values.append(u / (scores_x.shape[0] * scores_y.shape[0]))
    return float(np.mean(values))


def test_probability_of_improvement_rliable_toy_case():
    # rliable's test asserts 1/3: per task, X in {1,2,1,2}, Y in {1,2,3}; of 12 pairs,
    # wins + ties/2 = (0.5 + 1.5 + 0.5 + 1.5) = 4.
    assert probability_of_improvement(RLIABLE_X, RLIABLE_Y) == pytest.approx(1 / 3)


def test_probability_of_improvement_by_hand():
    # task 0: X (1, 1) vs Y (0, 0): all 4 pairs won -> 1.
    # task 1: X (0, 1) vs Y (0, 1): tie, loss, win, tie -> 2 / 4.  Mean 0.75.
    x = np.array([[1, 0], [1, 1]])
    y = np.array([[0, 0], [0, 1]])
    assert probability_of_improvement(x, y) == pytest.approx(0.75)
    assert probability_of_improvement(y, x) == pytest.approx(0.25)
    assert probability_of_improvement(x, x) == pytest.approx(0.5)


def test_probability_of_improvement_matches_rliable_loop_on_random_scores():
    rng = np.random.default_rng(7)
    for _ in range(20):
        x = rng.integers(0, 4, size=(5, 6)).astype(float)  # ties and identical columns
        y = rng.integers(0, 4, size=(3, 6)).astype(float)
        y[:, 0] = x[:3, 0]
        assert probability_of_improvement(x, y) == pytest.approx(
            rliable_probability_of_improvement(x, y))


def test_paired_probability_of_improvement_by_hand():
    # rows are shared eval seeds. task 0 pairs: (1,0) win, (1,1) tie, (0,1) loss -> 1.5/3;
    # task 1 pairs: (0,0) tie, (1,0) win, (1,1) tie -> 2/3.  Mean (0.5 + 0.6667) / 2.
    x = np.array([[1, 0], [1, 1], [0, 1]])
    y = np.array([[0, 0], [1, 0], [1, 1]])
    assert paired_probability_of_improvement(x, y) == pytest.approx((0.5 + 2 / 3) / 2)
    assert paired_probability_of_improvement(y, x) == pytest.approx(1 - (0.5 + 2 / 3) / 2)


@pytest.mark.parametrize("function", [probability_of_improvement,
                                      paired_probability_of_improvement])
def test_probability_of_improvement_bad_input(function):
    with pytest.raises(HarnessError):
        function(np.zeros((0, 2)), np.zeros((0, 2)))
    with pytest.raises(HarnessError):
        function(np.array([[np.nan, 1.0]]), np.array([[1.0, 1.0]]))
    with pytest.raises(HarnessError):
        function(np.zeros((2, 2)), np.zeros((2, 3)))
    with pytest.raises(HarnessError):
        function(np.zeros(3), np.zeros(3))
