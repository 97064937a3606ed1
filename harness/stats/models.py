"""Clustered standard errors and regression models of the policy effect.

Clustered standard errors (Miller 2024, "Adding Error Bars to Evals", sec. 2.3): keys of one
task are correlated, so the standard error of a mean uses per-cluster sums of deviations,

    SE = sqrt( C / (C - 1) * sum_c ( sum_{i in c} (x_i - mean) )**2 ) / n,

with ``C`` clusters and ``n`` observations. With one observation per cluster this is exactly
the CLT standard error ``sqrt(var(x, ddof=1) / n)``; it equals statsmodels' cluster-robust
standard error of an intercept-only OLS. Intervals are normal, ``mean ± z * SE``, as in Miller.
The paired version applies it to ``a - b`` (Miller sec. 4: paired differences).

Policy effect models, from `harness.stats.frame.PairedOutcomes`:

- ``"gee"`` (default): statsmodels GEE with task clusters and an exchangeable working
  correlation; logit link for success (effect: log odds ratio), identity link for scores
  (effect: mean difference). It is the default because its sandwich intervals are valid
  without assuming a distribution for task effects, it is deterministic and fast, and it
  estimates the population-averaged effect a leaderboard reports. It treats training seeds
  as fixed: the interval reflects task and evaluation noise only.
- ``"mixed"``: statsmodels ``BinomialBayesMixedGLM`` (variational Bayes) with random
  intercepts for tasks and for each trained model (policy x training seed), so
  training-seed variance widens the interval. The seed component is included only when some
  policy has two or more training seeds; with one seed per policy it is confounded with the
  policy effect and left out (the result's ``note`` says so). Success only; the interval is
  the approximate posterior mean ± z * sd (a subject-specific log odds ratio). Mean-field
  variational posteriors are known to understate uncertainty (Blei et al. 2017), another
  reason it is not the default.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd
import scipy.sparse
import scipy.stats
import statsmodels.api as sm
from statsmodels.genmod.bayes_mixed_glm import BinomialBayesMixedGLM
from statsmodels.tools.sm_exceptions import ConvergenceWarning

from harness.core import HarnessError, UnknownNameError
from harness.stats.estimators import Interval
from harness.stats.frame import BASE_KEYS, PairedOutcomes
from harness.stats.paired import as_clusters, as_pair

__all__ = [
    "MODELS", "ClusteredEstimate", "PolicyEffect", "clustered_mean",
    "clustered_paired_difference", "policy_effect", "long_outcomes",
]

MODELS = ("gee", "mixed")


@dataclass(frozen=True)
class ClusteredEstimate:
    """A mean with its cluster-robust standard error and normal interval."""

    estimate: float
    se: float
    n: int
    n_clusters: int
    interval: Interval


@dataclass(frozen=True)
class PolicyEffect:
    """The effect of being policy ``a`` rather than ``b`` from a regression model.

    scale: ``"log odds ratio"`` or ``"mean difference"``; odds_ratio: ``exp`` of the effect
    interval on the log-odds scale (None for scores). n_models: distinct trained models given
    a training-seed random effect (0 when none).
    """

    model: str
    scale: str
    effect: Interval
    odds_ratio: Interval | None
    n_obs: int
    n_tasks: int
    n_models: int
    note: str = ""


def _z(confidence: float) -> float:
    if not 0 < confidence < 1:
        raise HarnessError(f"confidence must lie in (0, 1), got {confidence}")
    return float(scipy.stats.norm.ppf(0.5 + confidence / 2))


def clustered_mean(x, clusters=None, *, confidence: float = 0.95) -> ClusteredEstimate:
    """Mean of ``x`` (shape ``(n,)``) with Miller's clustered standard error.

    clusters: shape ``(n,)`` labels (tasks); None puts each observation in its own cluster
    (the CLT standard error). Needs at least two clusters.
    """
    x = np.asarray(x, dtype=float)
    if x.ndim != 1 or x.size == 0:
        raise HarnessError(f"need a non-empty array of shape (n,), got {x.shape}")
    if not np.isfinite(x).all():
        raise HarnessError("values contain NaN or infinite entries")
    codes = np.arange(x.size) if clusters is None else as_clusters(clusters, x.size)
    n_clusters = int(codes.max()) + 1
    if n_clusters < 2:
        raise HarnessError("a clustered standard error needs at least 2 clusters (tasks)")
    mean = float(x.mean())
    sums = np.bincount(codes, weights=x - mean)
    se = math.sqrt(n_clusters / (n_clusters - 1) * float(np.sum(sums**2))) / x.size
    half = _z(confidence) * se
    method = "clustered SE (Miller 2024)" if clusters is not None else "CLT SE"
    return ClusteredEstimate(mean, se, x.size, n_clusters,
                             Interval(mean, mean - half, mean + half, confidence, method))


def clustered_paired_difference(a, b, clusters=None, *,
                                confidence: float = 0.95) -> ClusteredEstimate:
    """Mean of ``a - b`` (each shape ``(n,)``, aligned keys) with the clustered standard error;
    pairing removes the shared task difficulty from the variance (Miller 2024, sec. 4)."""
    a, b = as_pair(a, b)
    return clustered_mean(a - b, clusters, confidence=confidence)


def long_outcomes(paired: PairedOutcomes) -> pd.DataFrame:
    """One row per distinct episode behind ``paired``: columns ``y`` (outcome), ``is_a``
    (1 for policy a), ``task`` (cluster label) and ``model`` (``"policy:seed"`` for a trained
    model, ``""`` otherwise). An untrained policy broadcast across the other's training seeds
    appears once per key, not once per seed."""
    frames = []
    base = paired.keys[list(BASE_KEYS)].reset_index(drop=True)
    for is_a, policy, y, seeds in ((1, paired.policy_a, paired.a, paired.seeds_a),
                                   (0, paired.policy_b, paired.b, paired.seeds_b)):
        side = base.assign(y=y, is_a=is_a, task=paired.tasks, seed=seeds)
        side = side.drop_duplicates(list(BASE_KEYS) + ["seed"])
        side["model"] = np.where(side["seed"].isna(), "",
                                 policy + ":" + side["seed"].astype("Int64").astype(str))
        frames.append(side[["y", "is_a", "task", "model"]])
    return pd.concat(frames, ignore_index=True)


SE_FLOOR = 1e-6
"""Relative floor of a model's standard error (times the outcome SD or the estimate): when A
equals B on every key the fitted SE is ~0 and a zero-width interval around a rounding-error
estimate (1e-16) would exclude 0; the floor keeps 0 inside."""


def policy_effect(paired: PairedOutcomes, *, model: str = "gee",
                  confidence: float = 0.95) -> PolicyEffect:
    """The policy effect of ``paired.policy_a`` over ``policy_b`` with its interval, from the
    model named by ``model`` (``"gee"`` default or ``"mixed"``; see the module docstring).

    Raises `HarnessError` when the effect is not estimable (fewer than two tasks, a policy that
    succeeds on every key or on none under the logit link, a model that does not converge).
    """
    if model not in MODELS:
        raise UnknownNameError("model", model, MODELS)
    z = _z(confidence)
    data = long_outcomes(paired).sort_values("task", kind="stable").reset_index(drop=True)
    n_tasks = int(data["task"].nunique())
    if n_tasks < 2:
        raise HarnessError("a policy-effect model needs at least 2 tasks")
    binary = paired.metric == "success"
    if binary:
        _check_not_separated(data, paired)
    if model == "gee":
        estimate, se, n_models, note = _fit_gee(data, binary)
        name = "GEE " + ("logit" if binary else "identity") + " (task clusters, exchangeable)"
    else:
        if not binary:
            raise HarnessError("the mixed model supports metric='success' only; use model='gee'")
        estimate, se, n_models, note = _fit_mixed(data)
        name = "Bayesian mixed logit (VB; random task" + (" and seed" if n_models else "") + ")"
    if not (math.isfinite(estimate) and math.isfinite(se)):
        raise HarnessError(f"the {model} model gave no finite policy effect (estimate "
                           f"{estimate}, se {se})")
    se = max(se, SE_FLOOR * max(float(data["y"].std()), abs(estimate), 1e-12))
    effect = Interval(estimate, estimate - z * se, estimate + z * se, confidence, name)
    odds = (Interval(math.exp(estimate), math.exp(effect.low), math.exp(effect.high),
                     confidence, name) if binary else None)
    return PolicyEffect(name, "log odds ratio" if binary else "mean difference", effect, odds,
                        len(data), n_tasks, n_models, note)


def _check_not_separated(data: pd.DataFrame, paired: PairedOutcomes) -> None:
    for is_a, policy in ((1, paired.policy_a), (0, paired.policy_b)):
        rate = data.loc[data["is_a"] == is_a, "y"].mean()
        if rate in (0.0, 1.0):
            word = "every" if rate == 1.0 else "no"
            raise HarnessError(f"the log odds ratio is not estimable: policy {policy!r} "
                               f"succeeds on {word} paired key")


def _fit_gee(data: pd.DataFrame, binary: bool) -> tuple[float, float, int, str]:
    family = sm.families.Binomial() if binary else sm.families.Gaussian()
    exog = sm.add_constant(data["is_a"].to_numpy(dtype=float), has_constant="add")
    groups = pd.factorize(data["task"])[0]
    gee = sm.GEE(data["y"].to_numpy(dtype=float), exog, groups=groups, family=family,
                 cov_struct=sm.cov_struct.Exchangeable())
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            result = gee.fit(maxiter=100)
        except (ValueError, ArithmeticError, np.linalg.LinAlgError) as error:
            raise HarnessError(f"the GEE model is not estimable on these outcomes "
                               f"({str(error).splitlines()[0][:80]})") from None
    notes = ["training seeds treated as fixed"] if (data["model"] != "").any() else []
    notes += _convergence_notes(caught)
    return float(result.params[1]), float(result.bse[1]), 0, "; ".join(notes)


def _convergence_notes(caught: list[warnings.WarningMessage]) -> list[str]:
    if any(issubclass(w.category, ConvergenceWarning) for w in caught):
        return ["the fit reported non-convergence: treat the interval with caution"]
    return []


def _fit_mixed(data: pd.DataFrame) -> tuple[float, float, int, str]:
    task_codes = pd.factorize(data["task"])[0]
    columns = [task_codes]
    ident = [np.zeros(task_codes.max() + 1, dtype=int)]
    trained = data.loc[data["model"] != ""].groupby("is_a")["model"].nunique()
    n_models, note = 0, ""
    if (trained >= 2).any():
        model_codes, model_names = pd.factorize(data["model"])
        keep = np.asarray(model_names != "")
        n_models = int(keep.sum())
        remap = np.full(len(model_names), -1)
        remap[keep] = np.arange(n_models)
        columns.append(remap[model_codes])
        ident.append(np.ones(n_models, dtype=int))
    elif len(trained):
        note = ("one training seed per policy: seed variance is confounded with the policy "
                "and not modelled")
    n = len(data)
    blocks = []
    for codes in columns:
        rows = np.flatnonzero(codes >= 0)
        blocks.append(scipy.sparse.csr_matrix((np.ones(rows.size), (rows, codes[rows])),
                                              shape=(n, int(codes.max()) + 1)))
    exog_vc = scipy.sparse.hstack(blocks, format="csr")
    exog = sm.add_constant(data["is_a"].to_numpy(dtype=float), has_constant="add")
    glm = BinomialBayesMixedGLM(data["y"].to_numpy(dtype=float), exog, exog_vc,
                                np.concatenate(ident), vcp_p=1.0, fe_p=2.0)
    n_params = 2 + len(ident) + exog_vc.shape[1]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        # A fixed start (the library's default spread without its random jitter) keeps the fit
        # deterministic.
        result = glm.fit_vb(sd=np.full(n_params, math.exp(-0.5)))
    note = "; ".join([note] * bool(note) + _convergence_notes(caught))
    return float(result.fe_mean[1]), float(result.fe_sd[1]), n_models, note
