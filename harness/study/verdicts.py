"""Per-cell verdicts of a study: the paired effect of each cell against the baseline arm,
its test, equivalence, multiplicity control across cells and the design's power.

Shapes. ``d``: paired differences ``cell - baseline`` of shape ``(..., n_train_seeds,
n_tasks, n_eval_seeds)`` (leading axes are independent problems: cells, simulated studies),
one value per (training seed, task, evaluation seed) with the samples of a key averaged
(`harness.stats.arrays.outcome_tensor` of the two arms, subtracted). A baseline with one
model is broadcast along the training-seed axis.

Model (tasks fixed, training seeds and evaluation seeds random and crossed). Averaging over
the study's tasks gives ``z[s, e]`` with ``z = theta + a_s + c_e + r_se``: ``a_s`` the
training seed's effect (the unit of replication of a recipe), ``c_e`` the evaluation seed's
(shared by every model evaluated on it, the baseline's noise included), ``r_se`` the rest.
The mean squares of the two-way ANOVA without replication (Montgomery, *Design and Analysis
of Experiments*, §13.3) estimate the variance components by moments, each truncated at zero;
``Var(mean z) = var_a / S + var_c / E + var_r / (S E)`` is estimated by the matching
combination of mean squares and referred to Student's t with Satterthwaite's (1946) degrees
of freedom. With one training seed (or one evaluation seed) it is the paired t-test over the
other axis. Inference is about *these* tasks; their difficulty cancels in the pairing.

Verdict rule (printed by the report, `VERDICT_RULE`): after adjusting the cells' two-sided
p-values across cells (Holm by default, statsmodels ``multipletests``), a cell is *better* /
*worse* when its adjusted p is below alpha and its estimate is positive / negative;
otherwise *equivalent* when the TOST p (two one-sided t-tests against ``±margin``, Schuirmann
1987), adjusted across cells by the same method, is below alpha; otherwise *inconclusive*.
A cell whose two arms each score one and the same value on every episode (every episode a
failure, say) has no variation to measure its noise from: its estimate is 0 with a standard
error of 0, which would pass any TOST, so it is *inconclusive* instead of equivalent (two
policies both at 0% on 22 tasks may each succeed up to 3/22 = 14% of the time: the rule of
three).

Power. The minimum detectable effect of a cell is the smallest ``|theta|`` that the
two-sided t-test at level ``alpha / n_cells`` (Holm's first step, the bar a single true effect
among null cells must clear) detects with probability ``power``, from the noncentral t
(scipy ``nct``) at the cell's standard error and degrees of freedom.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.optimize
import scipy.stats

from harness.core import HarnessError
from harness.stats.multiplicity import adjust_pvalues

__all__ = ["CrossedEffects", "crossed_effects", "Verdicts", "decide", "minimum_detectable_effect",
           "power_at", "VERDICTS", "VERDICT_RULE"]

VERDICTS = ("better", "worse", "equivalent", "inconclusive")
VERDICT_RULE = (
    "better/worse: {method}-adjusted two-sided p < {alpha:g} across {n} cells, by the sign of "
    "the estimate; else equivalent: {method}-adjusted TOST p < {alpha:g} with margin "
    "±{margin:g}, unless both arms score one same value on every episode (no variation); "
    "else inconclusive")


@dataclass(frozen=True, eq=False)
class CrossedEffects:
    """Paired effects of the two-way crossed model, one per problem (shape ``batch``).

    estimate, se, df, p_value: mean difference, its standard error, Satterthwaite degrees of
    freedom and the two-sided p of ``theta = 0``. low, high: the ``1 - alpha`` interval.
    tost_p: the TOST p against ``±margin`` (NaN without a margin). var_seed, var_eval,
    var_residual: the variance components of ``z`` (see module).
    """

    estimate: np.ndarray
    se: np.ndarray
    df: np.ndarray
    p_value: np.ndarray
    low: np.ndarray
    high: np.ndarray
    tost_p: np.ndarray
    var_seed: np.ndarray
    var_eval: np.ndarray
    var_residual: np.ndarray
    alpha: float
    margin: float | None
    shape: tuple[int, int, int]  # (n_train_seeds, n_tasks, n_eval_seeds)


def _check_alpha(alpha: float) -> None:
    if not 0 < alpha < 0.5:
        raise HarnessError(f"alpha must lie in (0, 0.5), got {alpha}")


def _components(z: np.ndarray) -> tuple[np.ndarray, ...]:
    """Variance components, ``Var(mean z)`` and its Satterthwaite df from ``z`` of shape
    ``(..., S, E)``."""
    n_s, n_e = z.shape[-2:]
    grand = z.mean(axis=(-2, -1))
    rows, cols = z.mean(axis=-1), z.mean(axis=-2)
    zeros = np.zeros(grand.shape)
    if n_s == 1 or n_e == 1:  # a paired t-test over the axis that has replicates
        units = cols if n_s == 1 else rows
        n = units.shape[-1]
        ms = units.var(axis=-1, ddof=1)
        var = ms / n
        df = np.full(grand.shape, float(n - 1))
        seed = ms if n_e == 1 else zeros
        return seed, (ms if n_s == 1 else zeros), zeros, var, df
    ms_a = n_e * ((rows - grand[..., None]) ** 2).sum(axis=-1) / (n_s - 1)
    ms_c = n_s * ((cols - grand[..., None]) ** 2).sum(axis=-1) / (n_e - 1)
    resid = z - rows[..., None] - cols[..., None, :] + grand[..., None, None]
    df_a, df_c, df_r = n_s - 1, n_e - 1, (n_s - 1) * (n_e - 1)
    ms_r = (resid**2).sum(axis=(-2, -1)) / df_r
    keep_a, keep_c = ms_a > ms_r, ms_c > ms_r  # else the component is truncated at zero
    var_a = np.where(keep_a, (ms_a - ms_r) / n_e, 0.0)
    var_c = np.where(keep_c, (ms_c - ms_r) / n_s, 0.0)
    n = n_s * n_e
    k_a, k_c = keep_a / n, keep_c / n  # Var = k_a MS_A + k_c MS_C + k_r MS_R
    k_r = (1.0 - keep_a - keep_c) / n
    var = k_a * ms_a + k_c * ms_c + k_r * ms_r
    denominator = (k_a * ms_a) ** 2 / df_a + (k_c * ms_c) ** 2 / df_c + (k_r * ms_r) ** 2 / df_r
    df = np.divide(var**2, denominator, out=np.full(var.shape, float(df_r)),
                   where=denominator > 0)
    return var_a, var_c, ms_r, var, np.maximum(df, 1.0)


def crossed_effects(d, *, alpha: float = 0.05, margin: float | None = None) -> CrossedEffects:
    """The paired effect of every problem in ``d`` (shape ``(..., S, T, E)``, see module)
    with its t-test, ``1 - alpha`` interval and, with ``margin``, its TOST p-value."""
    _check_alpha(alpha)
    d = np.asarray(d, dtype=float)
    if d.ndim < 3 or 0 in d.shape:
        raise HarnessError(f"differences need shape (..., n_train_seeds, n_tasks, "
                           f"n_eval_seeds), got {d.shape}")
    if not np.isfinite(d).all():
        raise HarnessError("paired differences hold NaN or infinite values")
    n_s, n_t, n_e = d.shape[-3:]
    if n_s == 1 and n_e == 1:
        raise HarnessError("a cell needs at least two training seeds or two evaluation seeds "
                           "to estimate its noise")
    if margin is not None and not margin > 0:
        raise HarnessError(f"the equivalence margin must be positive, got {margin}")
    z = d.mean(axis=-2)
    var_a, var_c, var_r, var, df = _components(z)
    estimate = z.mean(axis=(-2, -1))
    se = np.sqrt(np.maximum(var, 0.0))
    degenerate = se <= 1e-12 * np.maximum(1.0, np.abs(estimate))
    safe = np.where(degenerate, 1.0, se)
    t = estimate / safe
    p = np.where(degenerate, (np.abs(estimate) <= 1e-12).astype(float),
                 2 * scipy.stats.t.sf(np.abs(t), df))
    half = scipy.stats.t.ppf(1 - alpha / 2, df) * se
    if margin is None:
        tost = np.full(estimate.shape, np.nan)
    else:
        lower = scipy.stats.t.sf((estimate + margin) / safe, df)
        upper = scipy.stats.t.cdf((estimate - margin) / safe, df)
        tost = np.where(degenerate, (np.abs(estimate) >= margin).astype(float),
                        np.maximum(lower, upper))
    return CrossedEffects(estimate, se, df, np.clip(p, 0.0, 1.0), estimate - half,
                          estimate + half, tost, var_a, var_c, var_r, alpha, margin,
                          (n_s, n_t, n_e))


@dataclass(frozen=True, eq=False)
class Verdicts:
    """One family's decisions: ``verdict`` (shape ``(n_cells,)``, str from `VERDICTS`),
    the adjusted p-values of the difference and of the TOST, and the rule as text."""

    verdict: np.ndarray
    p_adjusted: np.ndarray
    tost_adjusted: np.ndarray
    rule: str


def decide(effects: CrossedEffects, *, method: str = "holm",
           no_variation: np.ndarray | None = None) -> Verdicts:
    """Verdicts of a family of cells (``effects`` of shape ``(n_cells,)``) by `VERDICT_RULE`;
    `no_variation` marks the cells whose two arms score one same value on every episode."""
    p = np.atleast_1d(effects.p_value)
    if p.ndim != 1:
        raise HarnessError(f"decide takes one family of cells, shape (n_cells,), got {p.shape}")
    alpha = effects.alpha
    adjusted = adjust_pvalues(p, method=method, alpha=alpha)
    estimate = np.atleast_1d(effects.estimate)
    verdict = np.full(p.shape, "inconclusive", dtype=object)
    tost_adjusted = np.full(p.shape, np.nan)
    if effects.margin is not None:
        tost = adjust_pvalues(np.atleast_1d(effects.tost_p), method=method, alpha=alpha)
        tost_adjusted = tost.p_adjusted
        verdict[tost.reject] = "equivalent"
        if no_variation is not None:
            verdict[np.asarray(no_variation, dtype=bool) & tost.reject] = "inconclusive"
    verdict[adjusted.reject & (estimate > 0)] = "better"
    verdict[adjusted.reject & (estimate < 0)] = "worse"
    rule = VERDICT_RULE.format(method=method, alpha=alpha, n=p.size,
                               margin=effects.margin if effects.margin is not None else np.nan)
    return Verdicts(verdict.astype(str), adjusted.p_adjusted, tost_adjusted, rule)


def power_at(effect, se, df, *, alpha: float) -> np.ndarray:
    """Power of the two-sided level-``alpha`` t-test (``df`` degrees of freedom) against a
    true difference ``effect`` when the estimate has standard error ``se`` (noncentral t)."""
    effect, se, df = np.broadcast_arrays(*(np.asarray(x, dtype=float) for x in (effect, se, df)))
    crit = scipy.stats.t.ppf(1 - alpha / 2, df)
    ncp = np.divide(np.abs(effect), se, out=np.full(se.shape, np.inf), where=se > 0)
    with np.errstate(all="ignore"):
        upper = scipy.stats.nct.sf(crit, df, ncp)
        lower = scipy.stats.nct.cdf(-crit, df, ncp)  # scipy gives NaN far in the tail: ~0
    return np.clip(np.nan_to_num(upper, nan=1.0) + np.nan_to_num(lower, nan=0.0), 0.0, 1.0)


def minimum_detectable_effect(se, df, *, alpha: float, power: float = 0.8) -> np.ndarray:
    """Smallest ``|theta|`` whose two-sided level-``alpha`` t-test has probability ``power``
    (`power_at` inverted by vectorised bisection, to 1e-6 of ``se``); 0 where ``se`` is 0.
    ``se``, ``df``: arrays of one shape (or scalars)."""
    if not 0 < power < 1:
        raise HarnessError(f"power must lie in (0, 1), got {power}")
    se, df = np.broadcast_arrays(np.asarray(se, dtype=float), np.asarray(df, dtype=float))
    low, high = np.zeros(se.shape), np.full(se.shape, 64.0)  # in units of se
    for _ in range(27):
        mid = (low + high) / 2
        short = power_at(mid, 1.0, df, alpha=alpha) < power
        low, high = np.where(short, mid, low), np.where(short, high, mid)
    return np.where(se > 0, high * se, 0.0)
