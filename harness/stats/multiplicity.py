"""Multiplicity control over a family of comparisons (statsmodels ``multipletests``).

``"holm"`` (Holm 1979) controls the family-wise error rate: the chance of any false claim.
Use it when a claim of "better" is acted on, e.g. marking leaderboard entries separable from
the leader. ``"fdr_bh"`` (Benjamini & Hochberg 1995) controls the expected share of false
claims among the claims made; use it when screening many signals or task types.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import numpy as np
from statsmodels.stats.multitest import multipletests

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
    "fdr_bh", passed to statsmodels ``multipletests``); ``reject`` holds at level ``alpha``."""
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
    reject, adjusted, _, _ = multipletests(p, alpha=alpha, method=method)
    return AdjustedPValues(method, alpha, p, adjusted, reject)


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
