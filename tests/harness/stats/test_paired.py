import numpy as np
import pandas as pd
import pytest
import scipy.stats
from statsmodels.stats.contingency_tables import mcnemar

from harness.core import HarnessError
from harness.stats.estimators import Interval
from harness.stats.paired import (cochran_q_test, friedman_test, mcnemar_test, sign_flip_pvalues,
                                  sign_flip_test, wilcoxon_test)


# ---- McNemar -------------------------------------------------------------------------------
def test_mcnemar_hand_case():
    # 11 keys: both succeed 3, A only 1, B only 5, neither 2.
    # Exact: 2 * P(Binom(6, 1/2) <= 1) = 2 * (1 + 6) / 64 = 14 / 64.
    a = np.array([1] * 3 + [1] * 1 + [0] * 5 + [0] * 2)
    b = np.array([1] * 3 + [0] * 1 + [1] * 5 + [0] * 2)
    r = mcnemar_test(a, b)
    assert r.p_value == pytest.approx(14 / 64)
    assert (r.statistic, r.n, r.n_informative) == (1, 11, 6)
    assert r.method == "McNemar exact" and r.effect is None


def test_mcnemar_no_discordant_pairs_gives_p_one():
    r = mcnemar_test([1, 0, 1], [1, 0, 1])
    assert r.p_value == 1.0 and r.n_informative == 0


@pytest.mark.parametrize("seed", range(5))
def test_mcnemar_equals_statsmodels_on_random_tables(seed):
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 2, 60)
    b = (rng.random(60) < 0.3 + 0.4 * a).astype(int)
    table = pd.crosstab(pd.Categorical(a, [1, 0]), pd.Categorical(b, [1, 0]),
                        dropna=False).to_numpy()
    expected = mcnemar(table, exact=True)
    r = mcnemar_test(a, b)
    assert r.p_value == expected.pvalue and r.statistic == expected.statistic


def test_mcnemar_with_rng_carries_the_effect_interval():
    a = np.array([1, 1, 1, 0, 1, 0, 1, 1])
    b = np.array([0, 1, 0, 0, 1, 0, 0, 1])
    r = mcnemar_test(a, b, rng=np.random.default_rng(0), clusters=[0, 0, 1, 1, 2, 2, 3, 3],
                     n_resamples=2000)
    assert isinstance(r.effect, Interval)
    assert r.effect.estimate == pytest.approx(3 / 8)
    assert r.effect.low <= 3 / 8 <= r.effect.high


def test_mcnemar_refuses_non_binary_and_bad_shapes():
    with pytest.raises(HarnessError, match="binary"):
        mcnemar_test([0.5, 1], [0, 1])
    with pytest.raises(HarnessError, match="empty"):
        mcnemar_test([], [])
    with pytest.raises(HarnessError, match="shape"):
        mcnemar_test([1, 0], [1])
    with pytest.raises(HarnessError, match="NaN"):
        mcnemar_test([1, np.nan], [1, 0])


# ---- sign-flip permutation -----------------------------------------------------------------
def test_sign_flip_exact_hand_cases():
    # d = (1, 2, 3): sums over the 8 sign patterns are 6, 4, 2, 0, 0, -2, -4, -6;
    # |sum| >= 6 in 2 of 8.
    r = sign_flip_test([1, 2, 3], [0, 0, 0])
    assert r.p_value == pytest.approx(2 / 8) and r.statistic == pytest.approx(2.0)
    assert "exact" in r.method
    # a zero difference is dropped: d = (1, 0, 2) -> patterns of (1, 2): 3, 1, -1, -3 -> 2/4
    r = sign_flip_test([1, 0, 2], [0, 0, 0])
    assert r.p_value == pytest.approx(2 / 4) and r.n_informative == 2
    # d = (1, 1, 2) keyed: sums 4, 2, 2, 0, 0, -2, -2, -4 -> 2/8
    assert sign_flip_test([1, 1, 2], [0, 0, 0]).p_value == pytest.approx(2 / 8)
    # clustered {x: 1 + 1, y: 2}: units (2, 2), sums 4, 0, 0, -4 -> 2/4
    r = sign_flip_test([1, 1, 2], [0, 0, 0], clusters=["x", "x", "y"])
    assert r.p_value == pytest.approx(2 / 4) and r.n_informative == 2
    assert "clustered" in r.method


def test_sign_flip_all_ties_gives_p_one():
    assert sign_flip_test([1, 0], [1, 0]).p_value == 1.0


def test_sign_flip_equals_scipy_exact_enumeration():
    # Both enumerate all 2**10 sign patterns; scipy's two-sided 2 * min(P(T<=t), P(T>=t))
    # equals P(|T| >= |t|) because the sign-flip distribution is symmetric.
    rng = np.random.default_rng(1)
    a, b = rng.normal(0.4, 1, 10), rng.normal(0, 1, 10)
    ours = sign_flip_test(a, b).p_value
    ref = scipy.stats.permutation_test(
        (a, b), lambda x, y, axis: np.mean(x - y, axis=axis), permutation_type="samples",
        vectorized=True, n_resamples=np.inf, alternative="two-sided").pvalue
    assert ours == pytest.approx(ref, abs=1e-12)


@pytest.mark.parametrize("seed", [2, 3])
def test_sign_flip_monte_carlo_agrees_with_scipy_within_mc_error(seed):
    rng = np.random.default_rng(seed)
    a, b = rng.normal(0.3, 1, 40), rng.normal(0, 1, 40)
    n = 20_000
    ours = sign_flip_test(a, b, rng=np.random.default_rng(seed + 10), n_resamples=n).p_value
    ref = scipy.stats.permutation_test(
        (a, b), lambda x, y, axis: np.mean(x - y, axis=axis), permutation_type="samples",
        vectorized=True, n_resamples=n, alternative="two-sided",
        rng=np.random.default_rng(seed + 20)).pvalue
    se = np.sqrt(2 * ref * (1 - ref) / n) + 1 / n
    assert abs(ours - ref) < 4 * se


def test_sign_flip_monte_carlo_matches_exact_within_mc_error():
    d = np.array([0.5, 1.0, -0.2, 0.8, 1.1, -0.4, 0.9, 0.3])
    exact = sign_flip_test(d, np.zeros(8)).p_value
    mc = sign_flip_test(d, np.zeros(8), rng=np.random.default_rng(0), n_resamples=40_000,
                        exact_max_units=0)
    assert "40000 resamples" in mc.method
    assert abs(mc.p_value - exact) < 4 * np.sqrt(exact * (1 - exact) / 40_000)


def test_sign_flip_pvalues_is_vectorised_over_problems():
    d = np.array([[1.0, 2.0, 3.0], [1.0, -1.0, 0.5], [2.0, 2.0, 2.0]])
    p = sign_flip_pvalues(d)
    expected = [sign_flip_test(row, np.zeros(3)).p_value for row in d]
    np.testing.assert_allclose(p, expected)
    with pytest.raises(HarnessError, match="needs an rng"):
        sign_flip_pvalues(np.ones((2, 30)))


# ---- Wilcoxon ------------------------------------------------------------------------------
def test_wilcoxon_hand_case_drops_zero_differences():
    # d = (1, -2, 3, 4, 0): the zero is dropped (zero_method="wilcox"); ranks of |d| are
    # 1, 2, 3, 4, so W+ = 8, W- = 2, statistic = 2. Exact null over 2**4 sign patterns:
    # P(W+ <= 2) = #{{}, {1}, {2}} / 16 = 3/16; two-sided p = 6/16.
    r = wilcoxon_test([1, -2, 3, 4, 0], [0, 0, 0, 0, 0])
    assert r.statistic == 2.0 and r.p_value == pytest.approx(6 / 16)
    assert (r.n, r.n_informative) == (5, 4)
    assert "wilcox" in r.method


def test_wilcoxon_all_zero_differences_gives_p_one_without_warning():
    r = wilcoxon_test([0.5, 0.5], [0.5, 0.5])
    assert (r.statistic, r.p_value, r.n_informative) == (0.0, 1.0, 0)


# ---- more than two policies ----------------------------------------------------------------
def test_cochran_q_hand_case():
    # Column totals C = (3, 3, 1), N = 7, row totals R = (2, 1, 3, 1), sum R^2 = 15, k = 3:
    # Q = (k - 1)(k sum C^2 - N^2) / (k N - sum R^2) = 2 (57 - 49) / 6 = 8/3;
    # chi2(2) survival = exp(-Q / 2).
    x = [[1, 1, 0], [1, 0, 0], [1, 1, 1], [0, 1, 0]]
    r = cochran_q_test(x)
    assert r.statistic == pytest.approx(8 / 3)
    assert r.p_value == pytest.approx(np.exp(-4 / 3))
    assert (r.n, r.n_informative) == (4, 3)


def test_friedman_hand_case():
    # Ranks within rows (no ties): (1,2,3), (1,2,3), (1,3,2), (1,2,3) -> R = (4, 9, 11);
    # chi2 = 12 / (n k (k+1)) sum R^2 - 3 n (k+1) = 0.25 * 218 - 48 = 6.5; p = exp(-3.25).
    x = [[0.1, 0.2, 0.3], [0.0, 0.5, 0.9], [0.2, 0.8, 0.4], [0.3, 0.4, 0.6]]
    r = friedman_test(x)
    assert r.statistic == pytest.approx(6.5) and r.p_value == pytest.approx(np.exp(-3.25))


def test_omnibus_tests_all_tied_and_bad_input():
    tied = [[1, 1, 1], [0, 0, 0]]
    assert cochran_q_test(tied).p_value == 1.0 and friedman_test(tied).p_value == 1.0
    with pytest.raises(HarnessError, match="at least 3 policies"):
        cochran_q_test([[1, 0], [0, 1]])
    with pytest.raises(HarnessError, match="binary"):
        cochran_q_test([[1, 0.5, 0]])
    with pytest.raises(HarnessError, match="NaN"):
        friedman_test([[1, np.nan, 0]])
    with pytest.raises(HarnessError, match="shape"):
        friedman_test(np.zeros((0, 3)))
