"""Bootstrap: hand-computed cases, scipy.stats.bootstrap cross-checks, shared resamples,
bad input."""

import numpy as np
import pytest
import scipy.stats

from harness.core import HarnessError
from harness.stats.bootstrap import (_resample_counts, bootstrap_mean, cluster_bootstrap,
                                     hierarchical_bootstrap, hierarchical_bootstrap_batch,
                                     paired_bootstrap, stratified_bootstrap)


def rng(seed=0):
    return np.random.default_rng(seed)


def quantile_tolerance(se, confidence, n_resamples, sigmas=5.0, lattice=0.0):
    """Allowed gap between two independent bootstrap endpoints: ``sigmas`` standard errors
    of a difference of two Monte-Carlo quantiles (normal approximation of the bootstrap
    distribution with standard deviation ``se``), plus one ``lattice`` step when the
    resampled means of binary data can only take multiples of it."""
    q = (1 - confidence) / 2
    density = scipy.stats.norm.pdf(scipy.stats.norm.ppf(q)) / se
    return sigmas * np.sqrt(2 * q * (1 - q) / n_resamples) / density + lattice


# --- hand-computed cases --------------------------------------------------------------

def test_count_matrix_rows_are_resamples():
    counts = _resample_counts(rng(), 1000, 7)
    assert counts.shape == (1000, 7)
    assert (counts.sum(axis=1) == 7).all()
    # each unit is drawn 7 * 1/7 = 1 time per resample on average
    np.testing.assert_allclose(counts.mean(axis=0), 1.0, atol=0.15)


def test_two_points_by_hand():
    # Resampled means of {0, 1}: 0 (1/4), 1/2 (1/2), 1 (1/4); the 2.5% and 97.5%
    # quantiles of 10,000 draws are 0 and 1.
    interval = bootstrap_mean([0.0, 1.0], rng())
    assert (interval.estimate, interval.low, interval.high) == (0.5, 0.0, 1.0)


def test_cluster_bootstrap_unequal_clusters_by_hand():
    # cluster A: three episodes of 1, cluster B: one episode of 0; estimate 3/4.
    # Resamples {A,A} -> 1, {A,B} -> 3/4, {B,B} -> 0 with probabilities 1/4, 1/2, 1/4.
    interval = cluster_bootstrap([1, 1, 1, 0], ["A", "A", "A", "B"], rng())
    assert interval.estimate == 0.75
    assert (interval.low, interval.high) == (0.0, 1.0)
    interval = cluster_bootstrap([1, 1, 1, 0], ["A", "A", "A", "B"], rng(), confidence=0.4)
    assert interval.low == interval.high == 0.75  # the 30% and 70% quantiles both hit 3/4


def test_stratified_bootstrap_keeps_strata_sizes():
    # Values constant within each stratum: every stratified resample reproduces the data,
    # so the interval collapses onto the estimate (3 * 1 + 1 * 0) / 4.
    interval = stratified_bootstrap([1, 1, 1, 0], ["A", "A", "A", "B"], rng(), method="bca")
    assert interval.estimate == interval.low == interval.high == 0.75


def test_paired_bootstrap_of_a_constant_difference():
    a = np.array([0.9, 0.3, 0.5, 0.1])
    interval = paired_bootstrap(a, a - 0.25, rng(), method="bca")
    assert interval.estimate == pytest.approx(0.25)
    assert interval.low == pytest.approx(0.25) and interval.high == pytest.approx(0.25)
    assert interval.method == "paired iid bca"


def test_same_generator_state_gives_the_same_interval():
    x = rng(3).normal(size=30)
    assert bootstrap_mean(x, rng(9), method="bca") == bootstrap_mean(x, rng(9), method="bca")


# --- cross-checks with scipy.stats.bootstrap -------------------------------------------

@pytest.mark.parametrize("method", ["percentile", "bca"])
@pytest.mark.parametrize("distribution", ["normal", "exponential"])
def test_mean_interval_matches_scipy(method, distribution):
    data = getattr(rng(11), distribution)(size=40)
    n_resamples = 20_000
    ours = bootstrap_mean(data, rng(1), n_resamples=n_resamples, method=method)
    theirs = scipy.stats.bootstrap((data,), np.mean, n_resamples=n_resamples,
                                   method={"bca": "BCa"}.get(method, method), rng=2)
    tolerance = quantile_tolerance(data.std() / np.sqrt(data.size), 0.95, n_resamples)
    assert ours.low == pytest.approx(theirs.confidence_interval.low, abs=tolerance)
    assert ours.high == pytest.approx(theirs.confidence_interval.high, abs=tolerance)


@pytest.mark.parametrize("method", ["percentile", "bca"])
def test_paired_bootstrap_matches_scipy_paired(method):
    generator = rng(5)  # continuous paired scores (a lattice of binary means would need
    a = generator.beta(3, 2, size=60)  # a tolerance of one lattice step)
    b = np.clip(a - 0.05 + generator.normal(0, 0.2, size=60), 0, 1)
    ours = paired_bootstrap(a, b, rng(1), n_resamples=20_000, method=method)
    theirs = scipy.stats.bootstrap((a, b), lambda x, y, axis: np.mean(x - y, axis=axis),
                                   paired=True, n_resamples=20_000,
                                   method={"bca": "BCa"}.get(method, method), rng=2)
    tolerance = quantile_tolerance((a - b).std() / np.sqrt(a.size), 0.95, 20_000)
    assert ours.estimate == pytest.approx(np.mean(a - b))
    assert ours.low == pytest.approx(theirs.confidence_interval.low, abs=tolerance)
    assert ours.high == pytest.approx(theirs.confidence_interval.high, abs=tolerance)


@pytest.mark.parametrize("method", ["percentile", "bca"])
def test_cluster_bootstrap_equals_scipy_on_cluster_means(method):
    # With equal cluster sizes the cluster bootstrap of the mean is the ordinary bootstrap
    # of the cluster means (and the delete-one-cluster jackknife is scipy's jackknife).
    generator = rng(8)
    success = generator.random((30, 4)) < generator.beta(2, 3, size=(30, 1))
    clusters = np.repeat(np.arange(30), 4)
    ours = cluster_bootstrap(success.ravel(), clusters, rng(1), n_resamples=20_000,
                             method=method)
    means = success.mean(axis=1)
    theirs = scipy.stats.bootstrap((means,), np.mean, n_resamples=20_000,
                                   method={"bca": "BCa"}.get(method, method), rng=2)
    tolerance = quantile_tolerance(means.std() / np.sqrt(means.size), 0.95, 20_000,
                                   lattice=1 / success.size)
    assert ours.low == pytest.approx(theirs.confidence_interval.low, abs=tolerance)
    assert ours.high == pytest.approx(theirs.confidence_interval.high, abs=tolerance)


@pytest.mark.parametrize("method", ["percentile", "bca"])
def test_hierarchical_with_one_seed_is_scipy_over_tasks(method):
    # One training seed: level 1 vanishes and what remains is the bootstrap over tasks.
    generator = rng(4)
    values = (generator.random((1, 50, 3)) < generator.beta(2, 2, size=(1, 50, 1))) * 1.0
    ours = hierarchical_bootstrap(values, rng(1), n_resamples=20_000, method=method)
    means = values[0].mean(axis=1)
    theirs = scipy.stats.bootstrap((means,), np.mean, n_resamples=20_000,
                                   method={"bca": "BCa"}.get(method, method), rng=2)
    tolerance = quantile_tolerance(means.std() / np.sqrt(means.size), 0.95, 20_000,
                                   lattice=1 / values.size)
    assert ours.estimate == pytest.approx(values.mean())
    assert ours.low == pytest.approx(theirs.confidence_interval.low, abs=tolerance)
    assert ours.high == pytest.approx(theirs.confidence_interval.high, abs=tolerance)


# --- hierarchical ---------------------------------------------------------------------

def seed_task_outcomes(generator, n_seeds, n_tasks, n_eval, seed_half_width):
    """Bernoulli outcomes (n_seeds, n_tasks, n_eval) with P = task difficulty + seed
    effect; the truth (population mean) is 0.5."""
    difficulty = 0.2 + 0.6 * generator.beta(2, 2, size=(1, n_tasks, 1))
    effect = generator.uniform(-seed_half_width, seed_half_width, size=(n_seeds, 1, 1))
    return (generator.random((n_seeds, n_tasks, n_eval)) < difficulty + effect) * 1.0


def test_hierarchical_seed_variance_estimate_by_hand():
    # cells (2 seeds x 2 tasks, one eval seed): [[1, 0], [1, 0]] + seed effect (+.1, -.1).
    # Additive with no residual: MS_resid = 0, seed variance = MS_seed / n_tasks
    # = (2 * (0.1^2 + 0.1^2) / 1) / 2 = 0.02.
    values = np.array([[[1.1], [0.1]], [[0.9], [-0.1]]])
    result = hierarchical_bootstrap_batch(values[None], rng(), n_resamples=1000)
    assert result.train_seed_variance[0] == pytest.approx(0.02)
    assert result.intervals[0].estimate == pytest.approx(0.5)


def test_hierarchical_is_cluster_bootstrap_when_seeds_give_identical_outcomes():
    # A deterministic policy whose training seeds change nothing: all seed slices equal.
    generator = rng(6)
    one = seed_task_outcomes(generator, 1, 80, 4, 0.0)
    values = np.repeat(one, 3, axis=0)
    hierarchical = hierarchical_bootstrap(values, rng(1), n_resamples=20_000)
    task_labels = np.broadcast_to(np.arange(80)[None, :, None], values.shape).ravel()
    naive = cluster_bootstrap(values.ravel(), task_labels, rng(2), n_resamples=20_000)
    tolerance = quantile_tolerance(one[0].mean(axis=1).std() / np.sqrt(80), 0.95, 20_000,
                                   lattice=1 / one.size)
    assert hierarchical.low == pytest.approx(naive.low, abs=tolerance)
    assert hierarchical.high == pytest.approx(naive.high, abs=tolerance)


def test_batch_policies_share_resample_indices():
    generator = rng(2)
    base = seed_task_outcomes(generator, 3, 40, 2, 0.1)
    values = np.stack([base, base, base + 0.125])
    result = hierarchical_bootstrap_batch(values, rng(1), n_resamples=500,
                                          return_resamples=True)
    means = result.resampled_means
    assert means.shape == (500, 3)
    np.testing.assert_array_equal(means[:, 0], means[:, 1])
    np.testing.assert_allclose(means[:, 2] - means[:, 0], 0.125)
    assert result.intervals[0] == result.intervals[1]
    assert hierarchical_bootstrap_batch(values, rng(1), n_resamples=500).resampled_means is None


def test_batch_matches_single_policy_calls_in_distribution():
    generator = rng(12)
    values = np.stack([seed_task_outcomes(generator, 4, 60, 3, 0.1) for _ in range(2)])
    batch = hierarchical_bootstrap_batch(values, rng(1), n_resamples=20_000)
    for policy in range(2):
        single = hierarchical_bootstrap(values[policy], rng(10 + policy), n_resamples=20_000)
        assert batch.intervals[policy].estimate == single.estimate
        width = single.high - single.low
        assert batch.intervals[policy].low == pytest.approx(single.low, abs=0.05 * width)
        assert batch.intervals[policy].high == pytest.approx(single.high, abs=0.05 * width)


def test_hierarchical_wider_when_training_seeds_differ():
    generator = rng(13)
    values = seed_task_outcomes(generator, 5, 200, 5, 0.15)
    task_labels = np.broadcast_to(np.arange(200)[None, :, None], values.shape).ravel()
    hierarchical = hierarchical_bootstrap(values, rng(1), n_resamples=5000)
    naive = cluster_bootstrap(values.ravel(), task_labels, rng(2), n_resamples=5000)
    assert hierarchical.high - hierarchical.low > 1.5 * (naive.high - naive.low)


# --- bad input ------------------------------------------------------------------------

@pytest.mark.parametrize("call", [
    lambda: bootstrap_mean([], rng()),
    lambda: bootstrap_mean([1.0, np.nan, 0.0], rng()),
    lambda: bootstrap_mean([1.0], rng()),
    lambda: bootstrap_mean([[1.0, 0.0]], rng()),
    lambda: bootstrap_mean([1.0, 0.0], rng(), method="basic"),
    lambda: bootstrap_mean([1.0, 0.0], rng(), confidence=1.5),
    lambda: bootstrap_mean([1.0, 0.0], rng(), n_resamples=1),
    lambda: cluster_bootstrap([1.0, 0.0], ["a", "a"], rng()),
    lambda: cluster_bootstrap([1.0, 0.0], ["a"], rng()),
    lambda: stratified_bootstrap([1.0, np.nan], ["a", "b"], rng()),
    lambda: paired_bootstrap([1.0, 0.0], [1.0], rng()),
    lambda: paired_bootstrap([], [], rng()),
    lambda: paired_bootstrap([1.0, 0.0], [np.nan, 0.0], rng(), clusters=["a", "b"]),
    lambda: hierarchical_bootstrap(np.zeros((0, 3, 2)), rng()),
    lambda: hierarchical_bootstrap(np.zeros((2, 1, 2)), rng()),
    lambda: hierarchical_bootstrap(np.full((2, 3, 2), np.nan), rng()),
    lambda: hierarchical_bootstrap(np.zeros((3, 2)), rng()),
    lambda: hierarchical_bootstrap_batch(np.zeros((2, 3, 2)), rng()),
], ids=lambda _: "")
def test_bad_input_raises_harness_error(call):
    with pytest.raises(HarnessError):
        call()


def test_degenerate_data_gives_a_point_interval_not_nan():
    for method in ("percentile", "bca"):
        interval = bootstrap_mean(np.ones(20), rng(), method=method)
        assert (interval.estimate, interval.low, interval.high) == (1.0, 1.0, 1.0)
        result = hierarchical_bootstrap(np.zeros((3, 5, 2)), rng(), method=method)
        assert (result.low, result.high) == (0.0, 0.0)
