import math

import numpy as np
import pytest
import scipy.stats

from harness.core import HarnessError
from harness.stats.power import (PilotVariance, design_effect, mcnemar_minimum_detectable_effect,
                                 mcnemar_power, mcnemar_required_pairs,
                                 minimum_detectable_effect, pilot_variance, power_at,
                                 required_tasks)


def _t_sum(n_tasks):
    """t_{0.975, n - 1} + t_{0.8, n - 1}: the quantile sum at alpha 0.05, power 0.8."""
    return scipy.stats.t.ppf(0.975, n_tasks - 1) + scipy.stats.t.ppf(0.8, n_tasks - 1)


def _pilot(variance=1.0, icc=0.0):
    return PilotVariance(mean=0.0, variance=variance, icc=icc, n_tasks=10, n_keys=10)


def test_mde_hand_case():
    # sigma2 = 1, 100 tasks x 1 key: SE = 0.1; t_{.975,99} + t_{.8,99} = 1.9842 + 0.8453
    assert _t_sum(100) == pytest.approx(2.8295, abs=1e-4)
    assert minimum_detectable_effect(_pilot(), n_tasks=100) == pytest.approx(_t_sum(100) * 0.1)
    # 20 tasks x 5 keys, icc 0.25: deff = 1 + 4 * 0.25 = 2; SE = sqrt(2 / 100)
    mde = minimum_detectable_effect(_pilot(icc=0.25), n_tasks=20, seeds_per_task=5)
    assert mde == pytest.approx(_t_sum(20) * math.sqrt(0.02))


def test_required_tasks_hand_case_and_round_trip():
    # sigma2 4, icc 0.25, 3 keys: deff 1.5, SE(n) = sqrt(4 * 1.5 / (3 n)) = sqrt(2 / n).
    # Normal start: 7.849 * 2 / 0.04 = 392.4. t quantiles need n with
    # _t_sum(n) * sqrt(2 / n) <= 0.2: n = 395 (394 gives 0.20010).
    pilot = _pilot(variance=4.0, icc=0.25)
    assert _t_sum(394) * math.sqrt(2 / 394) > 0.2 >= _t_sum(395) * math.sqrt(2 / 395)
    assert required_tasks(pilot, effect=0.2, seeds_per_task=3) == 395
    for n in (10, 57, 300):
        mde = minimum_detectable_effect(pilot, n_tasks=n, seeds_per_task=3)
        assert required_tasks(pilot, effect=mde, seeds_per_task=3) == n
        assert power_at(pilot, effect=mde, n_tasks=n, seeds_per_task=3) == pytest.approx(0.8)
    # negative effects are symmetric
    assert required_tasks(pilot, effect=-0.2, seeds_per_task=3) == 395


def test_design_effect():
    assert design_effect(1, 0.7) == 1.0
    assert design_effect(5, 0.2) == pytest.approx(1.8)
    with pytest.raises(HarnessError, match="icc"):
        design_effect(2, 1.5)
    with pytest.raises(HarnessError, match="seeds_per_task"):
        design_effect(0, 0.1)


def test_pilot_variance_hand_case():
    # d by task: t1 (1, 3), t2 (5, 7); task means 2, 6, grand mean 4.
    # MSW = (1 + 1 + 1 + 1) / (4 - 2) = 2; MSB = 2 * (4 + 4) / 1 = 16; n0 = 2;
    # task variance (16 - 2) / 2 = 7; total 9; icc 7/9.
    p = pilot_variance([1, 3, 5, 7], [0, 0, 0, 0], ["t1", "t1", "t2", "t2"])
    assert p.variance == pytest.approx(9.0) and p.icc == pytest.approx(7 / 9)
    assert (p.mean, p.n_tasks, p.n_keys) == (4.0, 2, 4)


def test_pilot_variance_truncates_negative_task_variance():
    # task means equal (both 2): MSB = 0 < MSW -> task variance 0, icc 0, total = MSW
    p = pilot_variance([1, 3, 3, 1], [0, 0, 0, 0], ["t1", "t1", "t2", "t2"])
    assert p.icc == 0.0 and p.variance == pytest.approx(2.0)


def test_one_key_per_task_needs_an_icc_to_plan_several_keys():
    p = pilot_variance([1, 0, 1, 0], [0, 0, 0, 1], ["t1", "t2", "t3", "t4"])
    assert p.icc is None and p.variance == pytest.approx(np.var([1, 0, 1, -1], ddof=1))
    assert minimum_detectable_effect(p, n_tasks=50) > 0
    with pytest.raises(HarnessError, match="pass icc="):
        minimum_detectable_effect(p, n_tasks=50, seeds_per_task=3)
    assert minimum_detectable_effect(p, n_tasks=50, seeds_per_task=3, icc=1.0) == \
        pytest.approx(minimum_detectable_effect(p, n_tasks=50))


def test_bad_pilots_and_arguments():
    with pytest.raises(HarnessError, match="zero variance"):
        pilot_variance([1, 1, 1, 1], [0, 0, 0, 0], ["a", "a", "b", "b"])
    with pytest.raises(HarnessError, match="at least 2 tasks"):
        pilot_variance([1, 0], [0, 0], ["a", "a"])
    with pytest.raises(HarnessError, match="NaN"):
        pilot_variance([1, np.nan], [0, 0], ["a", "b"])
    with pytest.raises(HarnessError, match="non-zero"):
        required_tasks(_pilot(), effect=0.0)
    with pytest.raises(HarnessError, match="alpha and power"):
        minimum_detectable_effect(_pilot(), n_tasks=10, power=1.2)
    with pytest.raises(HarnessError, match="n_tasks"):
        minimum_detectable_effect(_pilot(), n_tasks=0)
    with pytest.raises(HarnessError, match="at least 2 tasks"):
        minimum_detectable_effect(_pilot(), n_tasks=1)


def test_mcnemar_power_hand_cases():
    # 6 pairs, alpha 0.05: only D = 6 discordant pairs can reject (2 / 64 <= 0.05; with
    # D = 5 the smallest p is 2 / 32 > 0.05), and then only when all favour one side.
    # p10 = 1/2, p01 = 0: P(D = 6) = 1/64 and then n10 = 6 surely -> power 1/64.
    assert mcnemar_power(6, p10=0.5, p01=0.0) == pytest.approx(1 / 64)
    # every pair discordant, no effect: P(n10 in {0, 6}) = 2/64, the test's exact size.
    assert mcnemar_power(6, p10=0.5, p01=0.5) == pytest.approx(2 / 64)
    assert mcnemar_power(6, p10=0.0, p01=0.0) == 0.0


def test_mcnemar_power_agrees_with_simulated_statsmodels_mcnemar():
    from harness.stats.paired import mcnemar_test

    rng = np.random.default_rng(0)
    u = rng.random((3000, 40))
    a, b = (u < 0.25).astype(float), ((u >= 0.25) & (u < 0.35)).astype(float)
    rate = np.mean([mcnemar_test(x, y).p_value <= 0.05 for x, y in zip(a, b)])
    expected = mcnemar_power(40, p10=0.25, p01=0.10)
    assert abs(rate - expected) < 4 * math.sqrt(expected * (1 - expected) / 3000)


def test_mcnemar_mde_and_required_pairs_invert_the_power():
    mde = mcnemar_minimum_detectable_effect(150, discordant=0.4)
    assert mcnemar_power(150, p10=0.2 + mde / 2, p01=0.2 - mde / 2) == pytest.approx(0.8)
    n = mcnemar_required_pairs(0.15, discordant=0.4)
    assert mcnemar_power(n, p10=0.275, p01=0.125) >= 0.8
    assert mcnemar_power(n - 1, p10=0.275, p01=0.125) < 0.8
    # the exact test needs more than the normal-approximation MDE promises
    generic = minimum_detectable_effect(_pilot(variance=0.4 - mde**2, icc=None), n_tasks=150)
    assert mde > generic
    with pytest.raises(HarnessError, match="cannot reach"):
        mcnemar_minimum_detectable_effect(5, discordant=0.2)
    with pytest.raises(HarnessError, match="discordant"):
        mcnemar_required_pairs(0.5, discordant=0.4)
