import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from statsmodels.stats.multitest import multipletests

from harness.core import HarnessError, UnknownNameError
from harness.stats.multiplicity import adjust_pvalues, adjust_results
from harness.stats.paired import HypothesisTestResult

P = [0.01, 0.04, 0.03]


def test_holm_hand_case():
    # sorted 0.01, 0.03, 0.04 times (3, 2, 1) = 0.03, 0.06, 0.04; running max 0.03, 0.06, 0.06
    r = adjust_pvalues(P, method="holm")
    np.testing.assert_allclose(r.p_adjusted, [0.03, 0.06, 0.06])
    np.testing.assert_array_equal(r.reject, [True, False, False])


def test_benjamini_hochberg_hand_case():
    # sorted 0.01, 0.03, 0.04 times 3 / (1, 2, 3) = 0.03, 0.045, 0.04; running min from the
    # top: 0.03, 0.04, 0.04
    r = adjust_pvalues(P, method="fdr_bh")
    np.testing.assert_allclose(r.p_adjusted, [0.03, 0.04, 0.04])
    np.testing.assert_array_equal(r.reject, [True, True, True])


@pytest.mark.parametrize("method", ["holm", "fdr_bh"])
def test_equals_statsmodels(method):
    p = np.random.default_rng(0).uniform(0, 0.2, 12)
    reject, adjusted, _, _ = multipletests(p, alpha=0.05, method=method)
    r = adjust_pvalues(p, method=method)
    np.testing.assert_array_equal(r.p_adjusted, adjusted)
    np.testing.assert_array_equal(r.reject, reject)


@settings(max_examples=300, deadline=None)
@given(p=st.lists(st.one_of(st.sampled_from([0.0, 0.001, 0.01, 0.0125, 0.025, 0.05, 1.0]),
                            st.floats(0, 1)), min_size=1, max_size=40),
       alpha=st.sampled_from([0.01, 0.05, 0.1, 0.5]),
       method=st.sampled_from(["holm", "fdr_bh"]))
def test_equals_statsmodels_bit_for_bit_with_ties_and_edges(p, alpha, method):
    reject, adjusted, _, _ = multipletests(np.array(p), alpha=alpha, method=method)
    r = adjust_pvalues(p, method=method, alpha=alpha)
    np.testing.assert_array_equal(r.p_adjusted, adjusted)
    np.testing.assert_array_equal(r.reject, reject)


def test_adjust_results_keeps_order_and_results():
    results = [HypothesisTestResult("t", 0.0, p, 10, 10) for p in P]
    adjusted = adjust_results(results, method="holm")
    assert [a.result for a in adjusted] == results
    assert [a.p_adjusted for a in adjusted] == pytest.approx([0.03, 0.06, 0.06])
    assert [a.reject for a in adjusted] == [True, False, False]
    by_function = adjust_results([{"p": p} for p in P], method="fdr_bh", p_value=lambda r: r["p"])
    assert [a.p_adjusted for a in by_function] == pytest.approx([0.03, 0.04, 0.04])


def test_bad_input():
    with pytest.raises(UnknownNameError, match="unknown multiplicity method 'bonferroni'"):
        adjust_pvalues(P, method="bonferroni")
    with pytest.raises(HarnessError, match="non-empty"):
        adjust_pvalues([], method="holm")
    with pytest.raises(HarnessError, match=r"\[0, 1\]"):
        adjust_pvalues([0.5, np.nan], method="holm")
    with pytest.raises(HarnessError, match=r"\[0, 1\]"):
        adjust_pvalues([1.5], method="holm")
    with pytest.raises(HarnessError, match="no p-value attribute"):
        adjust_results([object()], method="holm")
