"""Simulations with known truth: type-I error at alpha = 0.05, power at the power module's
minimum detectable effect, TOST size at the margin, clustered-SE coverage.

Every check allows three Monte-Carlo standard errors. Replications are vectorised where the
test is ours (sign flips share one sign matrix across replications; p-values stay valid) and
looped over the library call where it is scipy's or statsmodels'.
"""

import math

import numpy as np
import pytest
import scipy.stats

from harness.stats.equivalence import paired_tost
from harness.stats.models import clustered_mean
from harness.stats.paired import mcnemar_test, sign_flip_pvalues, wilcoxon_test
from harness.stats.power import (mcnemar_minimum_detectable_effect, minimum_detectable_effect,
                                 pilot_variance)

pytestmark = pytest.mark.slow

ALPHA = 0.05
REPS = 2000


def _mc_se(p: float, reps: int = REPS) -> float:
    return math.sqrt(p * (1 - p) / reps)


def _assert_size(rate: float, *, conservative_ok: bool = False) -> None:
    """Rejection rate under the null is alpha within 3 MC SE (or below, if allowed)."""
    assert rate <= ALPHA + 3 * _mc_se(ALPHA), rate
    if not conservative_ok:
        assert rate >= ALPHA - 3 * _mc_se(ALPHA), rate


def _binary_keys(rng, reps, n_keys, delta=0.0):
    """Independent keys with heterogeneous difficulty p ~ Beta(2, 2); A's success chance is
    p + delta (clipped), B's p. Shapes (reps, n_keys)."""
    p = rng.beta(2, 2, (reps, n_keys))
    a = (rng.random((reps, n_keys)) < np.clip(p + delta, 0, 1)).astype(float)
    b = (rng.random((reps, n_keys)) < p).astype(float)
    return a, b


def _clustered_differences(rng, reps, n_tasks, keys, delta=0.0):
    """Paired differences d = delta + u_task + e with task x policy interaction u ~ N(0, 1) and
    e ~ N(0, 1) (icc 0.5). Shape (reps, n_tasks, keys)."""
    u = rng.normal(0, 1, (reps, n_tasks, 1))
    return delta + u + rng.normal(0, 1, (reps, n_tasks, keys))


# ---- type-I error ---------------------------------------------------------------------------
def test_mcnemar_holds_its_size():
    a, b = _binary_keys(np.random.default_rng(100), REPS, 80)
    rate = np.mean([mcnemar_test(x, y).p_value <= ALPHA for x, y in zip(a, b)])
    _assert_size(rate, conservative_ok=True)  # exact McNemar is conservative by design
    assert rate > 0.02


def test_wilcoxon_holds_its_size_on_tied_scores():
    # scores on a 5-point grid: many zero differences and tied ranks (normal approximation)
    rng = np.random.default_rng(101)
    level = rng.integers(0, 5, (REPS, 60, 1))
    noise = rng.integers(-1, 2, (REPS, 60, 2))
    scores = np.clip(level + noise, 0, 4) / 4
    rate = np.mean([wilcoxon_test(s[:, 0], s[:, 1]).p_value <= ALPHA for s in scores])
    _assert_size(rate)


def test_sign_flip_holds_its_size_on_independent_keys():
    rng = np.random.default_rng(102)
    d = rng.standard_t(3, (REPS, 25))  # heavy tails, symmetric under the null
    p = sign_flip_pvalues(d, rng, n_resamples=2000)
    _assert_size(np.mean(p <= ALPHA))


def test_clustered_sign_flip_holds_its_size_where_the_keyed_one_does_not():
    rng = np.random.default_rng(103)
    d = _clustered_differences(rng, REPS, 20, 5)
    clustered = sign_flip_pvalues(d.sum(axis=2), rng, n_resamples=2000)
    _assert_size(np.mean(clustered <= ALPHA))
    keyed = sign_flip_pvalues(d.reshape(REPS, -1), rng, n_resamples=2000)
    assert np.mean(keyed <= ALPHA) > 0.15  # treating correlated keys as independent


def test_tost_size_at_the_margin():
    # true difference exactly at the margin: equivalence must be claimed <= alpha of the time
    rng = np.random.default_rng(104)
    margin, n_tasks, keys = 0.1, 30, 3
    d = margin + 0.2 * _clustered_differences(rng, REPS, n_tasks, keys)
    tasks = np.repeat(np.arange(n_tasks), keys)
    rate = np.mean([paired_tost(row.ravel(), np.zeros(n_tasks * keys), margin=margin,
                                clusters=tasks).equivalent for row in d])
    _assert_size(rate)


def test_clustered_standard_error_covers_the_truth():
    # 50 tasks x 4 keys, success chance p_task ~ Beta(2, 2): true mean 0.5
    rng = np.random.default_rng(105)
    p = rng.beta(2, 2, (REPS, 50, 1))
    x = (rng.random((REPS, 50, 4)) < p).astype(float).reshape(REPS, -1)
    tasks = np.repeat(np.arange(50), 4)
    covered = [(r.interval.low <= 0.5 <= r.interval.high)
               for r in (clustered_mean(row, tasks) for row in x)]
    assert 0.93 <= np.mean(covered) <= 0.97, np.mean(covered)


# ---- power at the minimum detectable effect -------------------------------------------------
def _assert_power(power: float) -> None:
    """The test has the promised 0.8 power within 3 MC SE."""
    assert power >= 0.8 - 3 * _mc_se(0.8), power


def test_clustered_tests_have_the_promised_power():
    rng = np.random.default_rng(106)
    n_tasks, keys = 24, 4
    pilot_d = _clustered_differences(rng, 1, 3000, keys).ravel()
    pilot = pilot_variance(pilot_d, np.zeros_like(pilot_d), np.repeat(np.arange(3000), keys))
    assert pilot.icc == pytest.approx(0.5, abs=0.05)
    mde = minimum_detectable_effect(pilot, n_tasks=n_tasks, seeds_per_task=keys)
    d = _clustered_differences(rng, REPS, n_tasks, keys, delta=mde)
    power = np.mean(sign_flip_pvalues(d.sum(axis=2), rng, n_resamples=2000) <= ALPHA)
    _assert_power(power)
    # the t-test on task means, the analysis the planning formula describes
    t_power = np.mean(scipy.stats.ttest_1samp(d.mean(axis=2), 0.0, axis=1).pvalue <= ALPHA)
    _assert_power(t_power)


def test_mcnemar_has_the_promised_power_on_independent_keys():
    # Independent pairs, 40% discordant; McNemar's own (exact) MDE from the power module.
    rng = np.random.default_rng(107)
    n_pairs, discordant = 150, 0.4
    mde = mcnemar_minimum_detectable_effect(n_pairs, discordant=discordant)
    u = rng.random((REPS, n_pairs))
    p10, p01 = (discordant + mde) / 2, (discordant - mde) / 2
    a = ((u < p10) | (u >= discordant + 0.3)).astype(float)  # 30% neither, 30% both
    b = (u >= p10).astype(float) * ((u < discordant) | (u >= discordant + 0.3))
    assert np.mean(a != b) == pytest.approx(discordant, abs=0.01)
    power = np.mean([mcnemar_test(x, y).p_value <= ALPHA for x, y in zip(a, b)])
    _assert_power(power)
