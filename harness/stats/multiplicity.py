"""Multiplicity control over a family of comparisons.

``"holm"`` (Holm 1979) controls the family-wise error rate: the chance of any false claim.
Use it when a claim of "better" is acted on, e.g. marking leaderboard entries separable from
the leader. ``"fdr_bh"`` (Benjamini & Hochberg 1995) controls the expected share of false
claims among the claims made; use it when screening many signals or task types.

Both are computed here, equal to statsmodels ``multipletests`` to the bit (the tests check it):
its Holm branch calls ``gc.collect()`` on every call, which takes seconds per call in a process
holding a large heap (a study's calibration makes thousands of calls).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import numpy as np

from harness.core import HarnessError, UnknownNameError

__all__ = ["METHODS", "AdjustedPValues", "Adjusted", "adjust_pvalues", "adjust_results"]

METHODS = ("holm", "fdr_bh")
R = TypeVar("R")


@dataclass(frozen=True)
class AdjustedPValues:
    """Adjusted p-values of one family. p_values, p_adjusted, reject: shape ``(n_tests,)``."""

    method: str
    alpha: float
    p_values: np.ndarray
    p_adjusted: np.ndarray
    reject: np.ndarray


@dataclass(frozen=True)
class Adjusted(Generic[R]):
    """One comparison result with its family-adjusted p-value and decision."""

    result: R
    p_value: float
    p_adjusted: float
    reject: bool
    method: str


def adjust_pvalues(p_values: Sequence[float], *, method: str,
                   alpha: float = 0.05) -> AdjustedPValues:
    """Adjust ``p_values`` (shape ``(n_tests,)``) for multiplicity with ``method`` ("holm" or
    "fdr_bh"); ``reject`` holds at level ``alpha``."""
    if method not in METHODS:
        raise UnknownNameError("multiplicity method", method, METHODS)
    if not 0 < alpha < 1:
        raise HarnessError(f"alpha must lie in (0, 1), got {alpha}")
    p = np.asarray(p_values, dtype=float)
    if p.ndim != 1 or p.size == 0:
        raise HarnessError("need a non-empty family of p-values of shape (n_tests,), got "
                           f"{p.shape}")
    if not (np.isfinite(p).all() and ((p >= 0) & (p <= 1)).all()):
        raise HarnessError(f"p-values must lie in [0, 1], got {p.tolist()}")
    order = np.argsort(p)
    step = _holm if method == "holm" else _benjamini_hochberg
    sorted_reject, sorted_adjusted = step(p[order], alpha)
    reject = np.empty_like(sorted_reject)
    adjusted = np.empty_like(sorted_adjusted)
    reject[order] = sorted_reject
    adjusted[order] = np.minimum(sorted_adjusted, 1.0)
    return AdjustedPValues(method, alpha, p, adjusted, reject)


def _holm(p_sorted: np.ndarray, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """Holm's step-down on ascending p-values: reject until the first p above alpha / (n - i)."""
    remaining = np.arange(p_sorted.size, 0, -1)
    kept = p_sorted > alpha / remaining
    first_kept = int(np.argmax(kept)) if kept.any() else p_sorted.size
    reject = np.arange(p_sorted.size) < first_kept
    return reject, np.maximum.accumulate(p_sorted * remaining)


def _benjamini_hochberg(p_sorted: np.ndarray,
                        alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """Benjamini-Hochberg's step-up on ascending p-values: reject up to the last p at or below
    alpha * rank / n."""
    rank_share = np.arange(1, p_sorted.size + 1) / p_sorted.size
    below = p_sorted <= rank_share * alpha
    last_below = int(np.nonzero(below)[0].max()) + 1 if below.any() else 0
    reject = np.arange(p_sorted.size) < last_below
    return reject, np.minimum.accumulate((p_sorted / rank_share)[::-1])[::-1]


def adjust_results(results: Sequence[R], *, method: str, alpha: float = 0.05,
                   p_value: str | Callable[[R], float] = "p_value") -> list[Adjusted[R]]:
    """Adjust a family of comparison results, in order.

    ``p_value`` names the attribute holding each result's p-value (default ``"p_value"``, which
    `HypothesisTestResult`, `EquivalenceResult` and `Comparison` all have) or is a function of
    a result returning it.
    """
    results = list(results)
    get: Callable[[Any], float] = (p_value if callable(p_value)
                                   else lambda r: getattr(r, p_value))
    try:
        raw = [float(get(r)) for r in results]
    except AttributeError as error:
        raise HarnessError(f"a result has no p-value attribute {p_value!r}: {error}") from None
    adjusted = adjust_pvalues(raw, method=method, alpha=alpha)
    return [Adjusted(r, raw[i], float(adjusted.p_adjusted[i]), bool(adjusted.reject[i]), method)
            for i, r in enumerate(results)]
