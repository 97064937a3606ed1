"""Paired equivalence testing (TOST): the only way a report may call two policies
"statistically indistinguishable".

A failed difference test is not evidence of equivalence. TOST (Schuirmann 1987) tests the two
one-sided nulls ``mean(a - b) <= -margin`` and ``mean(a - b) >= +margin``; equivalence is shown
when both are rejected at ``alpha``, i.e. when the ``1 - 2 alpha`` confidence interval of the
mean difference lies inside ``(-margin, +margin)``. The margin is a judgement about what
difference does not matter, so the user must state it: there is no default.

The paired t-based TOST is statsmodels ``ttost_paired``. With ``clusters`` (tasks), the test
runs on per-cluster mean outcomes (one pair per task), which stays valid when a task's keys
are correlated; without, each key is one pair.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np
from statsmodels.stats.weightstats import DescrStatsW, ttost_paired

from harness.core import HarnessError
from harness.stats.paired import as_clusters, as_pair

__all__ = ["EquivalenceResult", "check_margin", "paired_tost", "NOT_SHOWN"]

NOT_SHOWN = "not shown equivalent"


@dataclass(frozen=True)
class EquivalenceResult:
    """A TOST verdict.

    estimate, low, high: mean difference ``a - b`` and its ``1 - 2 alpha`` interval.
    p_value: the TOST p (the larger of the two one-sided p-values).
    n: pairs analysed (keys, or clusters when clustered).
    """

    method: str
    margin: float
    alpha: float
    estimate: float
    low: float
    high: float
    p_value: float
    n: int
    equivalent: bool
    verdict: str


def check_margin(margin: float | None) -> float:
    """The equivalence margin as a positive float; `HarnessError` when missing or not > 0."""
    if margin is None:
        raise HarnessError("equivalence needs a margin: state the largest difference you would "
                           "call negligible (e.g. margin=0.02 for two points of success rate)")
    try:
        value = float(margin)
    except (TypeError, ValueError):
        raise HarnessError(f"equivalence margin must be a number, got {margin!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise HarnessError(f"equivalence margin must be a positive number, got {margin!r}")
    return value


def verdict_text(equivalent: bool, margin: float) -> str:
    return f"equivalent within ±{margin:g}" if equivalent else NOT_SHOWN


def paired_tost(a, b, *, margin: float | None, alpha: float = 0.05,
                clusters=None) -> EquivalenceResult:
    """Paired TOST of ``|mean(a - b)| < margin`` (statsmodels ``ttost_paired``).

    a, b: shape ``(n_keys,)`` aligned outcomes; clusters: optional shape ``(n_keys,)`` labels
    (tasks), analysed as one pair of cluster means each. ``margin`` is required and in the
    units of the outcome (0.02 = two points of success rate). When every pair has the same
    difference the t statistic is undefined; the interval then collapses to that difference
    and equivalence holds exactly when it lies inside the margin.
    """
    m = check_margin(margin)
    if not 0 < alpha < 0.5:
        raise HarnessError(f"alpha must lie in (0, 0.5), got {alpha}")
    a, b = as_pair(a, b)
    method = "paired TOST (statsmodels ttost_paired)"
    if clusters is not None:
        codes = as_clusters(clusters, a.size)
        sizes = np.bincount(codes)
        a, b = np.bincount(codes, weights=a) / sizes, np.bincount(codes, weights=b) / sizes
        method = "paired TOST on cluster means (statsmodels ttost_paired)"
    n = a.size
    if n < 2:
        unit = "clusters" if clusters is not None else "pairs"
        raise HarnessError(f"equivalence needs at least 2 {unit}, got {n}")
    d = a - b
    estimate = float(d.mean())
    if np.ptp(d) == 0:
        equivalent = abs(estimate) < m
        return EquivalenceResult(method + "; all differences equal", m, alpha, estimate, estimate,
                                 estimate, 0.0 if equivalent else 1.0, n, equivalent,
                                 verdict_text(equivalent, m))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        p_value = float(ttost_paired(a, b, -m, m)[0])
        low, high = DescrStatsW(d).tconfint_mean(alpha=2 * alpha)
    equivalent = p_value < alpha
    return EquivalenceResult(method, m, alpha, estimate, float(low), float(high), p_value, n,
                             equivalent, verdict_text(equivalent, m))
