import math

import numpy as np
import pytest
import statsmodels.api as sm

from harness.core import HarnessError, UnknownNameError
from harness.stats.frame import paired_outcomes
from harness.stats.models import (clustered_mean, clustered_paired_difference, long_outcomes,
                                  policy_effect)


# ---- clustered standard errors -------------------------------------------------------------
def test_clustered_mean_hand_case():
    # x = (1, 0 | 1, 1), mean 0.75. Cluster sums of deviations: a: 0.25 - 0.75 = -0.5,
    # b: 0.25 + 0.25 = 0.5. SE = sqrt(C/(C-1) * (0.25 + 0.25)) / n = sqrt(2 * 0.5) / 4 = 0.25.
    r = clustered_mean([1, 0, 1, 1], ["a", "a", "b", "b"])
    assert r.estimate == 0.75 and r.se == pytest.approx(0.25)
    assert (r.n, r.n_clusters) == (4, 2)
    z = 1.959963984540054
    assert (r.interval.low, r.interval.high) == (pytest.approx(0.75 - z * 0.25),
                                                 pytest.approx(0.75 + z * 0.25))
    assert "Miller" in r.interval.method


def test_singleton_clusters_give_the_clt_standard_error():
    x = np.array([1.0, 0.0, 1.0, 1.0, 0.0])
    r = clustered_mean(x)
    assert r.se == pytest.approx(math.sqrt(np.var(x, ddof=1) / x.size))
    assert clustered_mean(x, np.arange(5)).se == pytest.approx(r.se)


def test_clustered_se_equals_statsmodels_cluster_robust_ols():
    rng = np.random.default_rng(0)
    clusters = np.repeat(np.arange(15), rng.integers(1, 6, 15))
    x = rng.normal(size=clusters.size) + rng.normal(size=15)[clusters]
    fit = sm.OLS(x, np.ones(x.size)).fit(cov_type="cluster", cov_kwds={"groups": clusters})
    assert clustered_mean(x, clusters).se == pytest.approx(float(fit.bse[0]))


def test_clustered_paired_difference_hand_case():
    # d = a - b = (1, 0 | 0, 1): mean 0.5, cluster sums of deviations 0 and 0 -> SE 0:
    # within-task noise that cancels across a task's keys does not count.
    r = clustered_paired_difference([1, 0, 1, 1], [0, 0, 1, 0], ["a", "a", "b", "b"])
    assert r.estimate == 0.5 and r.se == pytest.approx(0.0)


def test_clustered_bad_input():
    with pytest.raises(HarnessError, match="at least 2 clusters"):
        clustered_mean([1, 0], ["a", "a"])
    with pytest.raises(HarnessError, match="NaN"):
        clustered_mean([1, np.nan])
    with pytest.raises(HarnessError, match="non-empty"):
        clustered_mean([])
    with pytest.raises(HarnessError, match="shape"):
        clustered_mean([1, 0, 1], ["a", "b"])


# ---- policy-effect models ------------------------------------------------------------------
def _one_key_per_task(make_rows, concat, a, b, **kwargs):
    tasks = [f"t{i:02d}" for i in range(len(a))]
    return concat(make_rows("A", tasks, 0, a, **kwargs), make_rows("B", tasks, 0, b, **kwargs))


def test_gee_logit_hand_case(make_rows, concat):
    # One key per task: the GEE estimating equations sum y - mu over identical clusters, so
    # the fitted rates are the sample rates 0.6 and 0.3 and the effect is the log odds ratio
    # log(0.6/0.4) - log(0.3/0.7) = log(3.5).
    a = [1, 1, 1, 1, 1, 1, 0, 0, 0, 0]
    b = [1, 0, 1, 0, 0, 0, 1, 0, 0, 0]
    paired = paired_outcomes(_one_key_per_task(make_rows, concat, a, b), "A", "B")
    r = policy_effect(paired)
    assert r.scale == "log odds ratio" and "GEE logit" in r.model
    assert r.effect.estimate == pytest.approx(math.log(3.5), abs=1e-6)
    assert r.odds_ratio.estimate == pytest.approx(3.5, rel=1e-5)
    assert r.effect.low < r.effect.estimate < r.effect.high
    assert (r.n_obs, r.n_tasks) == (20, 10)


def test_gee_identity_on_scores_is_the_mean_difference(make_rows, concat):
    a = [1, 1, 1, 1, 1, 1, 0, 0, 0, 0]
    df = _one_key_per_task(make_rows, concat, a, a)
    df.loc[df["policy"] == "A", "score"] = np.linspace(0.2, 0.9, 10)
    df.loc[df["policy"] == "B", "score"] = np.linspace(0.1, 0.5, 10)
    paired = paired_outcomes(df, "A", "B", metric="score")
    r = policy_effect(paired)
    assert r.scale == "mean difference" and r.odds_ratio is None
    assert r.effect.estimate == pytest.approx(np.mean(paired.a - paired.b))


def test_logit_refuses_a_policy_that_always_succeeds(make_rows, concat):
    paired = paired_outcomes(_one_key_per_task(make_rows, concat, [1] * 4, [1, 0, 1, 0]),
                             "A", "B")
    with pytest.raises(HarnessError, match="'A' succeeds on every paired key"):
        policy_effect(paired)


def test_unknown_model_and_score_mixed_are_refused(make_rows, concat):
    paired = paired_outcomes(_one_key_per_task(make_rows, concat, [1, 0, 1], [0, 0, 1]),
                             "A", "B")
    with pytest.raises(UnknownNameError, match="unknown model 'glmm'"):
        policy_effect(paired, model="glmm")
    score = paired_outcomes(_one_key_per_task(make_rows, concat, [1, 0, 1], [0, 0, 1]),
                            "A", "B", metric="score")
    with pytest.raises(HarnessError, match="supports metric='success' only"):
        policy_effect(score, model="mixed")


def _simulated(make_rows, concat, n_seeds, rng):
    """A (trained, ``n_seeds`` seeds) is clearly better than B (untrained) on 30 tasks."""
    tasks = np.repeat([f"t{i:02d}" for i in range(30)], 4)
    evals = np.tile(np.arange(4), 30)
    ease = np.repeat(rng.normal(0, 1, 30), 4)
    parts = [make_rows("B", tasks, evals, rng.random(tasks.size) < 1 / (1 + np.exp(-ease)))]
    for seed in range(n_seeds):
        logit = ease + 1.2 + rng.normal(0, 0.3)
        parts.append(make_rows("A", tasks, evals, rng.random(tasks.size) < 1 / (1 + np.exp(-logit)),
                               train_seed=seed))
    return paired_outcomes(concat(*parts), "A", "B")


def test_long_outcomes_counts_an_untrained_policy_once_per_key(make_rows, concat):
    paired = _simulated(make_rows, concat, 3, np.random.default_rng(0))
    assert paired.n_keys == 3 * 120
    long = long_outcomes(paired)
    assert (long["is_a"] == 1).sum() == 360 and (long["is_a"] == 0).sum() == 120
    assert sorted(long.loc[long["is_a"] == 1, "model"].unique()) == ["A:0", "A:1", "A:2"]
    assert set(long.loc[long["is_a"] == 0, "model"]) == {""}


def test_mixed_model_with_training_seed_effect(make_rows, concat):
    paired = _simulated(make_rows, concat, 3, np.random.default_rng(1))
    mixed = policy_effect(paired, model="mixed")
    gee = policy_effect(paired, model="gee")
    assert mixed.n_models == 3 and "seed" in mixed.model and "VB" in mixed.model
    assert gee.n_models == 0 and "training seeds treated as fixed" in gee.note
    # both find the clear positive effect (true subject-specific log OR 1.2)
    assert mixed.effect.low > 0 and gee.effect.low > 0
    assert 0.5 < mixed.effect.estimate < 2.0
    # deterministic: no hidden randomness in the fit
    assert policy_effect(paired, model="mixed") == mixed


def test_mixed_model_with_a_single_training_seed_drops_the_seed_component(make_rows, concat):
    paired = _simulated(make_rows, concat, 1, np.random.default_rng(2))
    r = policy_effect(paired, model="mixed")
    assert r.n_models == 0 and "one training seed per policy" in r.note
    assert r.effect.low > 0
