"""The study's verdict statistics: hand-computed cases, cross-checks against scipy and
statsmodels, the decision rule, and (slow) calibration by simulation."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import scipy.stats
import statsmodels.formula.api as smf
from statsmodels.stats.anova import anova_lm
from statsmodels.stats.weightstats import ttost_paired

from harness.core import HarnessError
from harness.study.config import load_study_config
from harness.study.verdicts import (CrossedEffects, crossed_effects, decide,
                                    minimum_detectable_effect, power_at)
from tests.harness.train.example_recipes import EXAMPLES


def test_hand_computed_two_by_two():
    # z = [[1, 3], [3, 9]] (one task): grand 4, rows 2 and 6, cols 2 and 6
    d = np.array([[[1.0, 3.0]], [[3.0, 9.0]]])
    e = crossed_effects(d)
    # MS_A = 2 * ((2-4)^2 + (6-4)^2) / 1 = 16 = MS_C; residual r = z - row - col + grand = ±1
    # MS_R = 4 / 1 = 4; var_a = var_c = (16 - 4) / 2 = 6; Var = (16 + 16 - 4) / 4 = 7
    assert e.estimate == pytest.approx(4.0)
    assert e.var_seed == pytest.approx(6.0) and e.var_eval == pytest.approx(6.0)
    assert e.var_residual == pytest.approx(4.0)
    assert e.se == pytest.approx(np.sqrt(7.0))
    # Satterthwaite: 28^2 / (16^2/1 + 16^2/1 + 4^2/1) / 16 ... in units of MS: (7*4)^2/(...)
    assert e.df == pytest.approx(28.0**2 / (16.0**2 + 16.0**2 + 4.0**2))


def test_mean_squares_match_statsmodels_anova():
    rng = np.random.default_rng(0)
    d = rng.normal(size=(4, 3, 6)) + rng.normal(size=(4, 1, 1)) * 0.8
    z = d.mean(axis=1)
    frame = pd.DataFrame([(s, e, z[s, e]) for s in range(4) for e in range(6)],
                         columns=["s", "e", "z"])
    table = anova_lm(smf.ols("z ~ C(s) + C(e)", frame).fit())
    ms_a, ms_c, ms_r = table["mean_sq"].to_numpy()
    e = crossed_effects(d)
    var = (max(ms_a - ms_r, 0) / 6 / 4 + max(ms_c - ms_r, 0) / 4 / 6 + ms_r / 24)
    assert e.se**2 == pytest.approx(var)
    assert e.var_residual == pytest.approx(ms_r)


def test_one_model_axis_is_the_paired_t_test_and_tost():
    rng = np.random.default_rng(1)
    d = rng.normal(0.05, 0.2, size=(1, 5, 12))
    e = crossed_effects(d, margin=0.2)
    per_seed = d.mean(axis=1)[0]
    t = scipy.stats.ttest_1samp(per_seed, 0.0)
    assert e.p_value == pytest.approx(t.pvalue)
    assert e.df == 11
    tost = ttost_paired(per_seed, np.zeros_like(per_seed), -0.2, 0.2)[0]
    assert e.tost_p == pytest.approx(tost)
    low, high = t.confidence_interval(0.95)
    assert (e.low, e.high) == pytest.approx((low, high))


def test_batches_equal_single_problems():
    rng = np.random.default_rng(2)
    d = rng.normal(size=(5, 3, 4, 6))
    batch = crossed_effects(d, margin=0.3)
    for i in range(5):
        one = crossed_effects(d[i], margin=0.3)
        assert batch.p_value[i] == pytest.approx(one.p_value)
        assert batch.tost_p[i] == pytest.approx(one.tost_p)


def test_constant_differences_are_certain():
    e = crossed_effects(np.full((3, 2, 4), 0.25), margin=0.5)
    assert e.p_value == 0.0 and e.tost_p == 0.0 and e.se == 0.0
    zero = crossed_effects(np.zeros((3, 2, 4)))
    assert zero.p_value == 1.0


def test_bad_shapes_are_user_errors():
    with pytest.raises(HarnessError, match="shape"):
        crossed_effects(np.zeros((3, 4)))
    with pytest.raises(HarnessError, match="two training seeds or two evaluation"):
        crossed_effects(np.zeros((1, 4, 1)))
    with pytest.raises(HarnessError, match="NaN"):
        crossed_effects(np.full((2, 2, 2), np.nan))


def _family(estimates, p, tost, margin=0.1) -> CrossedEffects:
    n = len(p)
    z = np.zeros(n)
    return CrossedEffects(np.asarray(estimates, float), z + 1, z + 10, np.asarray(p, float),
                          z, z, np.asarray(tost, float), z, z, z, 0.05, margin, (3, 4, 5))


def test_decision_rule_by_hand():
    # BH below: 0.03 <= 3/4 * 0.05 rejects the first three. Holm over 4: sorted p 0.001 (x4 = 0.004), 0.01 (x3 = 0.03), 0.04 (x2 = 0.08), 0.5
    v = decide(_family([0.3, -0.2, 0.05, 0.0], [0.001, 0.01, 0.04, 0.5],
                       [0.9, 0.9, 0.001, 0.2]))
    assert list(v.verdict) == ["better", "worse", "equivalent", "inconclusive"]
    assert v.p_adjusted == pytest.approx([0.004, 0.03, 0.08, 0.5])
    assert "holm" in v.rule and "±0.1" in v.rule
    bh = decide(_family([0.3, 0.2, 0.1, 0.0], [0.001, 0.02, 0.03, 0.5], [1, 1, 1, 1]),
                method="fdr_bh")
    assert list(bh.verdict) == ["better", "better", "better", "inconclusive"]


def test_a_cell_without_variation_is_never_equivalent():
    """Both arms at 0% on every episode: estimate 0, standard error 0, TOST p 0, yet nothing
    was measured; better/worse (constant but different arms) stand."""
    zero = crossed_effects(np.zeros((1, 2, 22, 1)), margin=0.05)  # 2 seeds x 22 tasks
    assert zero.tost_p == 0.0 and zero.se == 0.0  # what the t machinery says
    assert list(decide(zero).verdict) == ["equivalent"]
    assert list(decide(zero, no_variation=np.array([True])).verdict) == ["inconclusive"]
    v = decide(_family([0.3, 0.0], [0.001, 1.0], [1.0, 0.0]), no_variation=np.array([
        True, True]))
    assert list(v.verdict) == ["better", "inconclusive"]
    assert "no variation" in v.rule


def test_minimum_detectable_effect_inverts_power():
    mde = minimum_detectable_effect(0.02, 9.0, alpha=0.05 / 12, power=0.8)
    assert float(power_at(mde, 0.02, 9.0, alpha=0.05 / 12)) == pytest.approx(0.8, abs=1e-5)
    # the normal approximation with t quantiles is close for large df
    approx = (scipy.stats.t.ppf(1 - 0.025, 200) + scipy.stats.t.ppf(0.8, 200)) * 0.02
    assert minimum_detectable_effect(0.02, 200.0, alpha=0.05) == pytest.approx(approx, rel=0.01)
    assert minimum_detectable_effect(0.0, 5.0, alpha=0.05) == 0.0


# ---- calibration: 500 simulated studies of the example's shape --------------------------

def _example_shape() -> tuple[int, int, int, int, float]:
    """Cells, training seeds, tasks, evaluation seeds and margin of the README's example
    study, read from its file, so the calibration follows the example if it changes."""
    study = load_study_config(EXAMPLES / "study_grpo_null.toml")
    cells = sum(a.role == "cell" for a in study.arms_resolved())
    return (cells, len(study.seeds), study.eval.n_tasks, len(study.eval.eval_seeds),
            study.analysis.margin)


N_CELLS, SEEDS, TASKS, EVAL_SEEDS, MARGIN = _example_shape()


def simulate(rng, n_studies, effects=None, *, sd_seed=0.02, shared=0.5):
    """Paired differences ``(n_studies, n_cells, S, T, E)`` of binary outcomes: task rates
    U(0.2, 0.8), a normal training-seed shift per (cell, seed), a fixed one-model baseline,
    and common random numbers across models on the same (task, eval seed)."""
    pi = rng.uniform(0.2, 0.8, size=(n_studies, 1, 1, TASKS, 1))
    a = rng.normal(0, sd_seed, size=(n_studies, N_CELLS, SEEDS, 1, 1))
    effect = 0.0 if effects is None else np.asarray(effects).reshape(1, N_CELLS, 1, 1, 1)
    common = rng.random((n_studies, 1, 1, TASKS, EVAL_SEEDS))
    size = (n_studies, N_CELLS, SEEDS, TASKS, EVAL_SEEDS)
    u = np.where(rng.random(size) < shared, common, rng.random(size))
    y = u < pi + a + effect
    size_b = (n_studies, 1, 1, TASKS, EVAL_SEEDS)
    u_b = np.where(rng.random(size_b) < shared, common, rng.random(size_b))
    return y.astype(float) - (u_b < pi).astype(float)


def _verdicts(d):
    e = crossed_effects(d, margin=MARGIN)
    out = []
    for i in range(d.shape[0]):
        fields = ("estimate", "se", "df", "p_value", "low", "high", "tost_p", "var_seed",
                  "var_eval", "var_residual")
        one = CrossedEffects(*(getattr(e, f)[i] for f in fields), e.alpha, e.margin, e.shape)
        out.append(decide(one).verdict)
    return np.array(out), e


@pytest.mark.slow
@pytest.mark.timeout(120)  # about 5 s on 2 idle cores (1,500 simulated studies)
def test_calibration_null_and_power():
    rng = np.random.default_rng(20240528)
    verdicts, e = _verdicts(simulate(rng, 500))
    false_claims = np.isin(verdicts, ("better", "worse")).any(axis=1).mean()
    better = (verdicts == "better").any(axis=1).mean()
    assert false_claims <= 0.05, false_claims
    assert better <= 0.05
    # the design's minimum detectable effect as the report states it (Holm's first step)
    mde = minimum_detectable_effect(e.se[:, 0], e.df[:, 0], alpha=0.05 / N_CELLS).mean()
    effects = np.zeros(N_CELLS)
    effects[0] = mde
    verdicts, _ = _verdicts(simulate(rng, 500, effects))
    found = (verdicts[:, 0] == "better").mean()
    assert abs(found - 0.8) <= 0.05, (mde, found)
    # coverage of the unadjusted 95% interval of a null cell
    _, e = _verdicts(simulate(rng, 500))
    covered = ((e.low <= 0) & (0 <= e.high)).mean()
    assert covered >= 0.93, covered
