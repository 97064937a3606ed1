"""Paired significance tests over shared evaluation keys.

Two policies: McNemar exact (binary outcomes, statsmodels), the sign-flip permutation test
(any outcome; optionally flipping whole task clusters), Wilcoxon signed-rank (scores, scipy).
More than two policies: Cochran's Q (binary, statsmodels) and Friedman (scores, scipy).

Inputs are arrays: ``a, b`` of shape ``(n_keys,)`` aligned key by key (see
`harness.stats.frame.paired_outcomes`), or ``values`` of shape ``(n_keys, n_policies)``.
Two-policy tests carry the effect size (mean of ``a - b``) with a paired bootstrap interval
when given an ``rng``; the omnibus tests carry none (follow them with pairwise comparisons
and `harness.stats.multiplicity`).

McNemar and Wilcoxon treat keys as independent pairs. When a task contributes several keys
(eval seeds, samples, training seeds) use ``clusters`` in `sign_flip_test`, which flips the
sign of a whole task at once and stays valid when outcomes within a task are correlated.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import scipy.stats
from statsmodels.stats.contingency_tables import cochrans_q, mcnemar

from harness.core import HarnessError
from harness.stats.bootstrap import paired_bootstrap
from harness.stats.estimators import Interval

__all__ = [
    "HypothesisTestResult", "mcnemar_test", "sign_flip_test", "sign_flip_pvalues",
    "wilcoxon_test", "cochran_q_test", "friedman_test", "as_pair", "as_clusters",
]

WILCOXON_ZERO_METHOD = "wilcox"
"""Zero differences (both policies scored the same on a key) are dropped before ranking.

Here a zero is an exact tie (the same benchmark score), not a small difference rounded to
zero, so it carries no information about which policy is better. Dropping ties conditions the
test on the informative keys exactly as McNemar conditions on discordant pairs, so on 0/1
outcomes Wilcoxon reduces to the sign test instead of disagreeing with McNemar. Pratt's
variant (``"pratt"``, Pratt 1959) ranks the zeros with the rest and then drops their ranks;
it suits measurements where zero stands for "smaller than any other difference"."""


@dataclass(frozen=True)
class HypothesisTestResult:
    """One significance test.

    n: keys (pairs or blocks) tested; n_informative: the ones that bear on the test (discordant
    pairs, non-zero differences, sign-flip units, blocks that are not all tied).
    effect: mean of ``a - b`` with a paired bootstrap interval, when computed.
    """

    method: str
    statistic: float
    p_value: float
    n: int
    n_informative: int
    effect: Interval | None = None


def as_pair(a, b, *, binary: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Validate two outcome arrays of shape ``(n_keys,)``: same shape, non-empty, finite."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if a.ndim != 1 or a.shape != b.shape:
        raise HarnessError(f"paired outcomes need two arrays of shape (n_keys,), got {a.shape} "
                           f"and {b.shape}")
    if a.size == 0:
        raise HarnessError("no paired keys: the outcome arrays are empty")
    if not (np.isfinite(a).all() and np.isfinite(b).all()):
        raise HarnessError("paired outcomes contain NaN or infinite values")
    if binary and not (np.isin(a, (0.0, 1.0)).all() and np.isin(b, (0.0, 1.0)).all()):
        raise HarnessError("this test needs binary (0/1) outcomes; use metric='success'")
    return a, b


def as_clusters(clusters, n: int) -> np.ndarray:
    """Validate cluster labels of shape ``(n,)``; return integer codes of shape ``(n,)``."""
    labels = np.asarray(clusters)
    if labels.shape != (n,):
        raise HarnessError(f"clusters must have shape ({n},), got {labels.shape}")
    return np.unique(labels, return_inverse=True)[1].reshape(n)


def _effect(a, b, rng, clusters, n_resamples, confidence) -> Interval | None:
    if rng is None:
        return None
    return paired_bootstrap(a, b, rng, clusters=clusters, n_resamples=n_resamples,
                            confidence=confidence, method="percentile")


def mcnemar_test(a, b, *, rng: np.random.Generator | None = None, clusters=None,
                 n_resamples: int = 10_000, confidence: float = 0.95) -> HypothesisTestResult:
    """McNemar's exact test of equal success rates (statsmodels ``mcnemar(exact=True)``).

    a, b: shape ``(n_keys,)``, 0/1 outcomes. The statistic is ``min(n10, n01)``, the smaller
    discordant count; p is the two-sided binomial(n10 + n01, 1/2) tail. With ``rng`` the result
    carries the mean difference with a paired bootstrap interval (clustered by ``clusters``).
    """
    a, b = as_pair(a, b, binary=True)
    n10 = int(np.sum((a == 1) & (b == 0)))
    n01 = int(np.sum((a == 0) & (b == 1)))
    n11 = int(np.sum((a == 1) & (b == 1)))
    table = np.array([[n11, n10], [n01, a.size - n11 - n10 - n01]])
    res = mcnemar(table, exact=True)
    return HypothesisTestResult("McNemar exact", float(res.statistic), float(res.pvalue), a.size,
                                n10 + n01, _effect(a, b, rng, clusters, n_resamples, confidence))


def sign_flip_pvalues(d, rng: np.random.Generator | None = None, *, n_resamples: int = 10_000,
                      exact_max_units: int = 16) -> np.ndarray:
    """Two-sided sign-flip permutation p-values, vectorised over independent problems.

    d: shape ``(n_problems, n_units)``, per-unit differences (a unit is a key, or a cluster's
    summed differences). Statistic ``|sum(d)|``. With ``n_units <= exact_max_units`` all
    ``2**n_units`` sign patterns are enumerated (exact p, no ``rng`` needed); otherwise
    ``n_resamples`` random patterns, shared across problems, give ``(1 + count) / (1 +
    n_resamples)`` (Phipson & Smyth 2010). Returns shape ``(n_problems,)``.
    """
    d = np.asarray(d, dtype=float)
    if d.ndim != 2 or d.shape[1] == 0:
        raise HarnessError(f"sign-flip differences need shape (n_problems, n_units), got {d.shape}")
    n_units = d.shape[1]
    observed = np.abs(d.sum(axis=1))
    threshold = observed - 1e-12 * np.maximum(np.abs(d).sum(axis=1), 1.0)
    exact = n_units <= exact_max_units
    if exact:
        total = 2**n_units
    elif rng is None:
        raise HarnessError(f"a sign-flip test on {n_units} units needs an rng "
                           f"(exact enumeration stops at {exact_max_units})")
    else:
        total = n_resamples
    chunk = max(1, 4_000_000 // max(d.shape[0], 1))
    count = np.zeros(d.shape[0], dtype=np.int64)
    for start in range(0, total, chunk):
        size = min(chunk, total - start)
        if exact:
            codes = np.arange(start, start + size)[:, None] >> np.arange(n_units)
            signs = 1.0 - 2.0 * (codes & 1)
        else:
            signs = 1.0 - 2.0 * rng.integers(0, 2, size=(size, n_units))
        count += (np.abs(signs @ d.T) >= threshold).sum(axis=0)
    return count / total if exact else (count + 1) / (n_resamples + 1)


def sign_flip_test(a, b, *, rng: np.random.Generator | None = None, clusters=None,
                   n_resamples: int = 10_000, exact_max_units: int = 16,
                   confidence: float = 0.95) -> HypothesisTestResult:
    """Paired sign-flip permutation test of ``mean(a - b) == 0``.

    a, b: shape ``(n_keys,)``. Under the null each unit's difference is as likely to be
    negated; a unit is one key, or with ``clusters`` (shape ``(n_keys,)``) one cluster whose
    differences are flipped together. Units with zero difference are dropped (their sign does
    not move the statistic), so exact enumeration applies when at most ``exact_max_units``
    units are non-zero. The statistic reported is the mean difference. With ``rng`` the result
    also carries the paired bootstrap interval of the mean difference.
    """
    a, b = as_pair(a, b)
    d = a - b
    if clusters is None:
        units, method = d, "sign-flip permutation"
    else:
        units = np.bincount(as_clusters(clusters, d.size), weights=d)
        method = "sign-flip permutation (clustered)"
    units = units[units != 0]
    if units.size == 0:
        p = 1.0
    else:
        p = float(sign_flip_pvalues(units[None, :], rng, n_resamples=n_resamples,
                                    exact_max_units=exact_max_units)[0])
        method += ", exact" if units.size <= exact_max_units else f", {n_resamples} resamples"
    return HypothesisTestResult(method, float(d.mean()), p, a.size, int(units.size),
                                _effect(a, b, rng, clusters, n_resamples, confidence))


def wilcoxon_test(a, b, *, rng: np.random.Generator | None = None, clusters=None,
                  n_resamples: int = 10_000, confidence: float = 0.95) -> HypothesisTestResult:
    """Wilcoxon signed-rank test of ``a - b`` symmetric about zero (scipy ``wilcoxon``).

    a, b: shape ``(n_keys,)``. Zero differences are dropped (``zero_method="wilcox"``, see
    `WILCOXON_ZERO_METHOD`); scipy picks exact or normal-approximation p (``method="auto"``).
    The statistic is scipy's: the smaller of the positive and negative rank sums. With no
    non-zero difference there is no evidence either way: statistic 0, p = 1.
    """
    a, b = as_pair(a, b)
    d = a - b
    nonzero = int(np.count_nonzero(d))
    effect = _effect(a, b, rng, clusters, n_resamples, confidence)
    method = f"Wilcoxon signed-rank (zero_method={WILCOXON_ZERO_METHOD!r})"
    if nonzero == 0:
        return HypothesisTestResult(method, 0.0, 1.0, a.size, 0, effect)
    res = scipy.stats.wilcoxon(d, zero_method=WILCOXON_ZERO_METHOD, alternative="two-sided",
                               method="auto")
    return HypothesisTestResult(method, float(res.statistic), float(res.pvalue), a.size, nonzero,
                                effect)


def _as_blocks(values, *, binary: bool) -> np.ndarray:
    x = np.asarray(values, dtype=float)
    if x.ndim != 2 or x.shape[0] == 0:
        raise HarnessError(f"outcomes must have shape (n_keys, n_policies), got {x.shape}")
    if x.shape[1] < 3:
        raise HarnessError(f"omnibus tests need at least 3 policies, got {x.shape[1]}; "
                           "use a paired test for two")
    if not np.isfinite(x).all():
        raise HarnessError("outcomes contain NaN or infinite values")
    if binary and not np.isin(x, (0.0, 1.0)).all():
        raise HarnessError("Cochran's Q needs binary (0/1) outcomes; use Friedman for scores")
    return x


def cochran_q_test(values) -> HypothesisTestResult:
    """Cochran's Q test that k >= 3 policies share one success rate (statsmodels).

    values: shape ``(n_keys, n_policies)``, 0/1; rows are blocks (shared keys). Q is referred
    to chi-squared with ``k - 1`` degrees of freedom. When every block is tied (all policies
    agree on every key) Q is 0 and p is 1.
    """
    x = _as_blocks(values, binary=True)
    informative = int(np.sum(x.min(axis=1) != x.max(axis=1)))
    if informative == 0:
        return HypothesisTestResult("Cochran's Q", 0.0, 1.0, x.shape[0], 0)
    res = cochrans_q(x)
    return HypothesisTestResult("Cochran's Q", float(res.statistic), float(res.pvalue),
                                x.shape[0], informative)


def friedman_test(values) -> HypothesisTestResult:
    """Friedman rank test that k >= 3 policies score alike (scipy ``friedmanchisquare``).

    values: shape ``(n_keys, n_policies)``; rows are blocks, ranked within each row with ties
    averaged (scipy applies the tie correction). When every block is tied, statistic 0, p 1.
    """
    x = _as_blocks(values, binary=False)
    informative = int(np.sum(x.min(axis=1) != x.max(axis=1)))
    if informative == 0:
        return HypothesisTestResult("Friedman", 0.0, 1.0, x.shape[0], 0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        res = scipy.stats.friedmanchisquare(*x.T)
    return HypothesisTestResult("Friedman", float(res.statistic), float(res.pvalue), x.shape[0],
                                informative)
