"""bench_hierarchical_bootstrap on a small problem: it runs both implementations on the same
data and they agree (no timing assertions)."""

import dataclasses

import numpy as np
import pytest

from harness.stats.benchmark import BenchResult, bench_hierarchical_bootstrap, synthetic_outcomes


def test_small_bench_runs_and_both_sides_agree():
    result = bench_hierarchical_bootstrap(np.random.default_rng(0), n_policies=3, n_tasks=60,
                                          n_eval_seeds=2, n_train_seeds=3, n_resamples=4000)
    assert isinstance(result, BenchResult)
    assert result.harness_seconds > 0 and result.scipy_seconds > 0
    assert result.ratio == pytest.approx(result.scipy_seconds / result.harness_seconds)
    assert result.reduced_ratio == pytest.approx(
        result.scipy_reduced_seconds / result.harness_seconds)
    # same statistic on the same data: endpoints differ by Monte-Carlo error only
    # (interval widths here are about 0.15)
    assert result.max_endpoint_gap < 0.02
    assert "no extrapolation" in result.note and "4000 resamples" in result.note
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.ratio = 1.0


def test_synthetic_outcomes_shape_and_range():
    values = synthetic_outcomes(np.random.default_rng(1), 2, 3, 4, 5)
    assert values.shape == (2, 3, 4, 5)
    assert set(np.unique(values)) <= {0.0, 1.0}
