"""Point estimates and closed-form intervals."""

from __future__ import annotations

from dataclasses import dataclass

from statsmodels.stats.proportion import proportion_confint

from harness.core import HarnessError


@dataclass(frozen=True)
class Interval:
    """A point estimate with a two-sided confidence interval."""

    estimate: float
    low: float
    high: float
    confidence: float = 0.95
    method: str = ""


def proportion_interval(successes: int, n: int, *, method: str = "wilson",
                        confidence: float = 0.95) -> Interval:
    """Success rate ``successes / n`` with a binomial interval (statsmodels
    `proportion_confint`; ``method`` is ``"wilson"`` or ``"jeffreys"``)."""
    if n <= 0:
        raise HarnessError("a success rate needs at least one episode")
    if not 0 <= successes <= n:
        raise HarnessError(f"successes must lie in [0, n], got {successes} of {n}")
    low, high = proportion_confint(successes, n, alpha=1 - confidence, method=method)
    return Interval(successes / n, float(low), float(high), confidence, method)
