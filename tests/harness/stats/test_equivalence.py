import math

import numpy as np
import pytest
import scipy.stats
from statsmodels.stats.weightstats import ttost_paired

from harness.core import HarnessError
from harness.stats.equivalence import NOT_SHOWN, paired_tost

# Hand case: d = a - b = (0.01, -0.01, 0.02, 0.00). mean 0.005; deviations 0.005, -0.015,
# 0.015, -0.005; sum of squares 5e-4; var 5e-4 / 3; se = sqrt(var / 4) = 0.0064550.
A = np.array([0.51, 0.49, 0.52, 0.50])
B = np.array([0.50, 0.50, 0.50, 0.50])
SE = math.sqrt(5e-4 / 3 / 4)


def test_hand_case_equivalent_within_wide_margin():
    r = paired_tost(A, B, margin=0.1)
    t_low, t_high = (0.005 + 0.1) / SE, (0.005 - 0.1) / SE  # 16.27, -14.72
    expected = max(scipy.stats.t.sf(t_low, 3), scipy.stats.t.cdf(t_high, 3))
    assert r.p_value == pytest.approx(expected)
    assert r.estimate == pytest.approx(0.005)
    half = scipy.stats.t.ppf(0.95, 3) * SE  # the 1 - 2 alpha = 90% interval
    assert (r.low, r.high) == (pytest.approx(0.005 - half), pytest.approx(0.005 + half))
    assert r.equivalent and r.verdict == "equivalent within ±0.1"
    assert r.p_value == pytest.approx(ttost_paired(A, B, -0.1, 0.1)[0])


def test_hand_case_not_shown_equivalent_within_narrow_margin():
    # margin 0.01: t_high = (0.005 - 0.01) / SE = -0.775, p = P(t3 <= -0.775) ~ 0.25
    r = paired_tost(A, B, margin=0.01)
    assert r.p_value == pytest.approx(scipy.stats.t.cdf(-0.005 / SE, 3))
    assert not r.equivalent and r.verdict == NOT_SHOWN == "not shown equivalent"


def test_clustered_tost_runs_on_cluster_means():
    # cluster means: a (0.5, 1.0), b (1.0, 0.5) -> d = (-0.5, 0.5): mean 0, sd sqrt(0.5),
    # se 0.5; margin 0.3 -> t = 0.3 / 0.5 = 0.6 on 1 df, p = P(t1 > 0.6).
    r = paired_tost([1, 0, 1, 1], [1, 1, 1, 0], margin=0.3, clusters=["x", "x", "y", "y"])
    assert r.n == 2 and "cluster means" in r.method
    assert r.p_value == pytest.approx(scipy.stats.t.sf(0.6, 1))
    assert not r.equivalent


def test_identical_differences_are_decided_without_a_t_statistic():
    r = paired_tost([1, 0, 1], [1, 0, 1], margin=0.02)
    assert r.equivalent and r.p_value == 0.0 and (r.low, r.high) == (0.0, 0.0)
    r = paired_tost([1, 1, 1], [0, 0, 0], margin=0.5)
    assert not r.equivalent and r.p_value == 1.0


@pytest.mark.parametrize("margin", [None, 0, -0.1, float("nan"), "wide"])
def test_missing_or_bad_margin_is_refused(margin):
    with pytest.raises(HarnessError, match="margin"):
        paired_tost(A, B, margin=margin)


def test_margin_is_a_required_keyword():
    with pytest.raises(TypeError):
        paired_tost(A, B)  # type: ignore[call-arg]


def test_bad_data_is_refused():
    with pytest.raises(HarnessError, match="at least 2 pairs"):
        paired_tost([1.0], [0.0], margin=0.1)
    with pytest.raises(HarnessError, match="NaN"):
        paired_tost([1.0, np.nan], [0.0, 0.0], margin=0.1)
    with pytest.raises(HarnessError, match="empty"):
        paired_tost([], [], margin=0.1)
    with pytest.raises(HarnessError, match="alpha"):
        paired_tost(A, B, margin=0.1, alpha=0.6)
