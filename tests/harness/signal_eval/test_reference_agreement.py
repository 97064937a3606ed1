"""Exact Q (value iteration) and Monte-Carlo Q (oracle rollouts from snapshots) agree on
frozenlake within the Monte-Carlo error."""

import numpy as np
import pytest

from harness.config import RunConfig
from harness.runner import run
from harness.signal_eval.points import collect_points
from harness.signal_eval.simulator import SuiteSimulator
from harness.store import Store
from signals.reference import exact_q, label_noise_ceiling, monte_carlo_q
from tasks import get_suite


def _points(tmp_path, suite_id, n_points):
    db = str(tmp_path / "behaviour.db")
    summary = run(RunConfig(policies=("random",), suites=(suite_id,), task_types=("4x4",),
                            n_tasks=4, eval_seeds=(0, 1), db=db))
    suite = get_suite(suite_id)
    with Store(db) as store:
        return suite, collect_points(store, suite, summary.run_id, n_points=n_points,
                                     critic_fraction=0.0).points


def test_monte_carlo_equals_exact_on_deterministic_frozenlake(tmp_path):
    suite, points = _points(tmp_path, "frozenlake@1", 12)
    exact = exact_q(SuiteSimulator(suite), points)
    mc = monte_carlo_q(SuiteSimulator(suite, extra_steps=500), points, n_rollouts=4,
                       horizon=500)
    for e, m, se in zip(exact.q, mc.q, mc.standard_error):
        np.testing.assert_allclose(m, e, atol=1e-12)
        assert (se == 0).all()  # deterministic dynamics and policy: no Monte-Carlo noise
    assert mc.details["cut_fraction"] == 0.0


def test_monte_carlo_agrees_with_exact_within_its_error_on_slippery_frozenlake(tmp_path):
    suite, points = _points(tmp_path, "frozenlake-slippery@1", 8)
    exact = exact_q(SuiteSimulator(suite), points)
    mc = monte_carlo_q(SuiteSimulator(suite, extra_steps=1500), points, n_rollouts=64,
                       horizon=1500, seed=3)
    z = []
    for e, m, se in zip(exact.q, mc.q, mc.standard_error):
        noisy = se > 0
        np.testing.assert_allclose(m[~noisy], e[~noisy], atol=1e-12)
        z += ((m[noisy] - e[noisy]) / se[noisy]).tolist()
    z = np.array(z)
    assert z.size >= 16
    assert np.abs(z).max() < 4.5, z
    # the standard errors are the right size: z has about unit variance
    assert 0.3 < np.mean(z**2) < 3.0
    ceiling = label_noise_ceiling(mc)
    assert -1 <= ceiling["kendall_tau"] <= 1 and 0 <= ceiling["top1"] <= 1
    assert label_noise_ceiling(exact)["kendall_tau"] == 1.0
