"""Simulations with known truth: nominal 95% intervals must cover it in 93-97% of
replications (Monte-Carlo sd of a coverage over 2,000 replications: 0.5 points), and the
hierarchical interval must widen exactly when training seeds differ.

Every replication calls the public function on freshly simulated data; 1,000 bootstrap
resamples inside the loops keep the module at a few seconds.
"""

import numpy as np
import pytest
import scipy.stats

from harness.stats.bootstrap import cluster_bootstrap, hierarchical_bootstrap
from harness.stats.estimators import proportion_interval, success_rate

pytestmark = pytest.mark.slow

LOW, HIGH = 0.93, 0.97


def covers(interval, truth):
    return interval.low <= truth <= interval.high


@pytest.mark.parametrize("n, p", [(200, 0.3), (150, 0.4)])
def test_wilson_coverage(n, p):
    rng = np.random.default_rng(101)
    replications = 4000
    hits = [covers(success_rate(rng.random(n) < p), p) for _ in range(replications)]
    coverage = np.mean(hits)
    # the exact coverage, summed over the binomial distribution, for reference
    k = np.arange(n + 1)
    inside = [covers(proportion_interval(int(i), n), p) for i in k]
    exact = scipy.stats.binom.pmf(k, n, p)[inside].sum()
    assert LOW <= exact <= HIGH
    assert LOW <= coverage <= HIGH
    assert abs(coverage - exact) < 4 * np.sqrt(exact * (1 - exact) / replications)


def test_cluster_bootstrap_coverage():
    # 150 tasks with success probability ~ Beta(2, 3) (truth 0.4), 4 eval seeds each.
    rng = np.random.default_rng(202)
    n_tasks, n_eval, truth = 150, 4, 0.4
    tasks = np.repeat(np.arange(n_tasks), n_eval)
    hits = []
    for _ in range(2000):
        p = rng.beta(2, 3, size=(n_tasks, 1))
        success = (rng.random((n_tasks, n_eval)) < p).ravel()
        hits.append(covers(cluster_bootstrap(success, tasks, rng, n_resamples=1000), truth))
    assert LOW <= np.mean(hits) <= HIGH


def simulate(rng, n_seeds, n_tasks, n_eval, seed_half_width):
    """(n_seeds, n_tasks, n_eval) Bernoulli outcomes, P = difficulty_t + effect_s with
    difficulty ~ 0.2 + 0.6 Beta(2, 2) and effect ~ U(-h, h): the population mean is 0.5."""
    difficulty = 0.2 + 0.6 * rng.beta(2, 2, size=(1, n_tasks, 1))
    effect = rng.uniform(-seed_half_width, seed_half_width, size=(n_seeds, 1, 1))
    return (rng.random((n_seeds, n_tasks, n_eval)) < difficulty + effect) * 1.0


def test_hierarchical_bootstrap_coverage():
    # Training-seed sd 0.069 and task sd 0.13: both levels matter. With 30 seeds the
    # seed-variance estimate has enough degrees of freedom for nominal coverage (with 2-5
    # seeds no bootstrap can reach it; see hierarchical_bootstrap_batch).
    rng = np.random.default_rng(303)
    hits = [covers(hierarchical_bootstrap(simulate(rng, 30, 150, 2, 0.12), rng,
                                          n_resamples=1000), 0.5)
            for _ in range(2000)]
    assert LOW <= np.mean(hits) <= HIGH


def widths_and_hits(rng, seed_half_width, replications=200):
    n_seeds, n_tasks, n_eval = 5, 200, 5
    tasks = np.broadcast_to(np.arange(n_tasks)[None, :, None], (n_seeds, n_tasks, n_eval))
    rows = []
    for _ in range(replications):
        values = simulate(rng, n_seeds, n_tasks, n_eval, seed_half_width)
        hierarchical = hierarchical_bootstrap(values, rng, n_resamples=2000)
        naive = cluster_bootstrap(values.ravel(), tasks.ravel(), rng, n_resamples=2000)
        rows.append((hierarchical.high - hierarchical.low, naive.high - naive.low,
                     covers(hierarchical, 0.5), covers(naive, 0.5)))
    return np.array(rows, dtype=float).T


def test_hierarchical_wider_than_naive_when_training_seeds_differ():
    # Seed sd 0.087 over 5 seeds: the naive (task-cluster) interval ignores it.
    hierarchical, naive, hierarchical_hits, naive_hits = widths_and_hits(
        np.random.default_rng(404), 0.15)
    assert np.mean(hierarchical) > 2.5 * np.mean(naive)
    assert (hierarchical > naive).mean() > 0.95
    assert naive_hits.mean() < 0.6 < hierarchical_hits.mean()


def test_hierarchical_equals_naive_when_training_seeds_do_not_differ():
    # Seeds of one policy that differ only by evaluation noise. The naive interval is then
    # right, and the hierarchical one reduces to it whenever the estimated seed variance is
    # zero; otherwise it is slightly wider (a variance estimate cannot go below zero), about
    # 4% on average in this design.
    hierarchical, naive, _, _ = widths_and_hits(np.random.default_rng(505), 0.0)
    ratio = hierarchical / naive
    assert 0.98 <= np.median(ratio) <= 1.04
    assert 0.98 <= ratio.mean() <= 1.07
