"""Power planning for a paired comparison of two policies, from pilot data.

Model. A paired difference ``d = a - b`` on key ``j`` of task ``i`` has variance ``sigma2``
and intra-task correlation ``icc`` (the share of ``sigma2`` that is a per-task effect). The
mean difference over ``n_tasks`` tasks with ``m`` keys (eval seeds x samples) each has

    Var = sigma2 * (1 + (m - 1) * icc) / (n_tasks * m)        (the design effect, Kish 1965)

and a two-sided level-``alpha`` test of zero difference has power ``power`` against

    MDE = (t_{1 - alpha/2, df} + t_{power, df}) * sqrt(Var),     df = n_tasks - 1

the closed-form normal approximation with Student-t quantiles on the task count (tasks are
the independent units of the clustered analysis). It tracks the exact noncentral-t power of a
paired t-test on task means to within 0.002 from 10 tasks up; with normal quantiles the same
formula promises 0.80 where 0.70 is delivered at 10 tasks (0.77 at 30). Required tasks for an
effect ``delta`` is the smallest ``n_tasks`` whose MDE is at most ``|delta|``, found from the
normal-quantile solution upward.

``sigma2`` and ``icc`` come from a pilot by one-way ANOVA on the differences grouped by task
(moment estimators, unbalanced sizes allowed, negative task variance truncated at zero).
Keys within a task are treated as exchangeable; a training-seed effect shared across all
tasks is not modelled (plan seeds with the hierarchical bootstrap).

McNemar's exact test on independent binary pairs is discrete and conservative: at the MDE
above it falls short of the promised power (0.76 instead of 0.80 at 150 pairs, 40%
discordant). `mcnemar_power` computes its power exactly instead (a sum over the binomial
number of discordant pairs of the exact conditional rejection probability), and
`mcnemar_minimum_detectable_effect` / `mcnemar_required_pairs` invert it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import scipy.stats

from harness.core import HarnessError
from harness.stats.frame import PairedOutcomes
from harness.stats.paired import as_clusters, as_pair

__all__ = [
    "PilotVariance", "pilot_variance", "pilot_from_paired", "design_effect",
    "paired_standard_error", "minimum_detectable_effect", "required_tasks", "power_at",
    "mcnemar_power", "mcnemar_minimum_detectable_effect", "mcnemar_required_pairs",
]


@dataclass(frozen=True)
class PilotVariance:
    """Variance structure of paired differences estimated from a pilot.

    variance: total variance of one paired difference (task + within-task components).
    icc: intra-task correlation of differences; None when every task has one key (then
    not estimable).
    """

    mean: float
    variance: float
    icc: float | None
    n_tasks: int
    n_keys: int


def pilot_variance(a, b, clusters) -> PilotVariance:
    """Estimate `PilotVariance` from pilot outcomes ``a, b`` (shape ``(n_keys,)``) and task
    labels ``clusters`` (shape ``(n_keys,)``) by one-way ANOVA of ``a - b`` on task."""
    a, b = as_pair(a, b)
    d = a - b
    codes = as_clusters(clusters, d.size)
    k, n = int(codes.max()) + 1, d.size
    if k < 2:
        raise HarnessError("a pilot needs at least 2 tasks")
    sizes = np.bincount(codes)
    means = np.bincount(codes, weights=d) / sizes
    if n == k:
        variance, icc = float(np.var(d, ddof=1)), None
    else:
        within = float(np.sum((d - means[codes]) ** 2)) / (n - k)
        between = float(np.sum(sizes * (means - d.mean()) ** 2)) / (k - 1)
        n0 = (n - float(np.sum(sizes**2)) / n) / (k - 1)
        task_var = max(0.0, (between - within) / n0)
        variance = task_var + within
        icc = task_var / variance if variance > 0 else 0.0
    if variance <= 0:
        raise HarnessError("the pilot's paired differences have zero variance: every key gave "
                           "the same difference, so power cannot be planned from it")
    return PilotVariance(float(d.mean()), variance, icc, k, n)


def pilot_from_paired(paired: PairedOutcomes) -> PilotVariance:
    """`pilot_variance` of a `PairedOutcomes` (clusters = tasks)."""
    return pilot_variance(paired.a, paired.b, paired.tasks)


def design_effect(seeds_per_task: int, icc: float) -> float:
    """Variance inflation ``1 + (m - 1) * icc`` of a mean over ``m`` correlated keys per task."""
    if seeds_per_task < 1:
        raise HarnessError(f"seeds_per_task must be at least 1, got {seeds_per_task}")
    if not 0 <= icc <= 1:
        raise HarnessError(f"icc must lie in [0, 1], got {icc}")
    return 1.0 + (seeds_per_task - 1) * icc


def _icc(pilot: PilotVariance, seeds_per_task: int, icc: float | None) -> float:
    if icc is not None:
        return float(icc)
    if pilot.icc is not None:
        return pilot.icc
    if seeds_per_task == 1:
        return 0.0
    raise HarnessError("the pilot has one key per task, so the intra-task correlation is not "
                       "estimable; pass icc=... (1.0 is the conservative choice)")


def paired_standard_error(pilot: PilotVariance, *, n_tasks: int, seeds_per_task: int = 1,
                          icc: float | None = None) -> float:
    """Standard error of the mean paired difference for the planned design."""
    if n_tasks < 1:
        raise HarnessError(f"n_tasks must be at least 1, got {n_tasks}")
    deff = design_effect(seeds_per_task, _icc(pilot, seeds_per_task, icc))
    return math.sqrt(pilot.variance * deff / (n_tasks * seeds_per_task))


def _quantile_sum(alpha: float, power: float, n_tasks: int) -> float:
    if not 0 < alpha < 1 or not 0 < power < 1:
        raise HarnessError(f"alpha and power must lie in (0, 1), got {alpha} and {power}")
    if n_tasks < 2:
        raise HarnessError(f"power planning needs at least 2 tasks, got {n_tasks}")
    df = n_tasks - 1
    return float(scipy.stats.t.ppf(1 - alpha / 2, df) + scipy.stats.t.ppf(power, df))


def minimum_detectable_effect(pilot: PilotVariance, *, n_tasks: int, seeds_per_task: int = 1,
                              alpha: float = 0.05, power: float = 0.8,
                              icc: float | None = None) -> float:
    """Smallest mean difference a two-sided level-``alpha`` paired test detects with
    probability ``power`` on ``n_tasks`` tasks x ``seeds_per_task`` keys (see module)."""
    se = paired_standard_error(pilot, n_tasks=n_tasks, seeds_per_task=seeds_per_task, icc=icc)
    return _quantile_sum(alpha, power, n_tasks) * se


def required_tasks(pilot: PilotVariance, *, effect: float, seeds_per_task: int = 1,
                   alpha: float = 0.05, power: float = 0.8, icc: float | None = None) -> int:
    """Fewest tasks, with ``seeds_per_task`` keys each, whose minimum detectable effect at
    ``alpha`` and ``power`` is at most ``|effect|`` (see module)."""
    if not math.isfinite(effect) or effect == 0:
        raise HarnessError(f"effect must be a non-zero number, got {effect}")
    deff = design_effect(seeds_per_task, _icc(pilot, seeds_per_task, icc))
    if not 0 < alpha < 1 or not 0 < power < 1:
        raise HarnessError(f"alpha and power must lie in (0, 1), got {alpha} and {power}")
    z = scipy.stats.norm.ppf(1 - alpha / 2) + scipy.stats.norm.ppf(power)
    n = max(2, math.ceil(z**2 * pilot.variance * deff / (seeds_per_task * effect**2) - 1e-9))
    def mde(n_tasks: int) -> float:
        return minimum_detectable_effect(pilot, n_tasks=n_tasks, seeds_per_task=seeds_per_task,
                                         alpha=alpha, power=power, icc=icc)

    while mde(n) > abs(effect) * (1 + 1e-12):
        n += 1
    return n


def power_at(pilot: PilotVariance, *, effect: float, n_tasks: int, seeds_per_task: int = 1,
             alpha: float = 0.05, icc: float | None = None) -> float:
    """Approximate power ``T_df(|effect| / SE - t_{1 - alpha/2, df})`` of the planned design,
    the inverse of `minimum_detectable_effect` (``df = n_tasks - 1``)."""
    se = paired_standard_error(pilot, n_tasks=n_tasks, seeds_per_task=seeds_per_task, icc=icc)
    crit = _quantile_sum(alpha, 0.5, n_tasks)  # t_{0.5} = 0
    return float(scipy.stats.t.cdf(abs(effect) / se - crit, n_tasks - 1))


def _check_rates(alpha: float, power: float | None = None) -> None:
    if not 0 < alpha < 1 or (power is not None and not 0 < power < 1):
        raise HarnessError(f"alpha and power must lie in (0, 1), got {alpha} and {power}")


def mcnemar_power(n_pairs: int, *, p10: float, p01: float, alpha: float = 0.05) -> float:
    """Exact power of the two-sided McNemar exact test (`harness.stats.paired.mcnemar_test`)
    on ``n_pairs`` independent pairs where A alone succeeds with probability ``p10`` and B
    alone with ``p01``. Given ``D ~ Binomial(n_pairs, p10 + p01)`` discordant pairs the test
    rejects when ``min(n10, n01) <= c_D``, the largest ``c`` with ``2 * Binom(D, 1/2).cdf(c)
    <= alpha``; ``n10 | D ~ Binomial(D, p10 / (p10 + p01))``."""
    _check_rates(alpha)
    if n_pairs < 1 or p10 < 0 or p01 < 0 or p10 + p01 > 1:
        raise HarnessError(f"need n_pairs >= 1 and p10, p01 >= 0 with p10 + p01 <= 1, got "
                           f"{n_pairs}, {p10}, {p01}")
    psi = p10 + p01
    if psi == 0:
        return 0.0
    d = np.arange(n_pairs + 1)
    c = scipy.stats.binom.ppf(alpha / 2, d, 0.5)
    c = np.where(2 * scipy.stats.binom.cdf(c, d, 0.5) > alpha * (1 + 1e-12), c - 1, c)
    q = p10 / psi
    reject = scipy.stats.binom.cdf(c, d, q) + scipy.stats.binom.sf(d - c - 1, d, q)
    reject = np.where(c >= 0, reject, 0.0)
    return float(np.sum(scipy.stats.binom.pmf(d, n_pairs, psi) * reject))


def mcnemar_minimum_detectable_effect(n_pairs: int, *, discordant: float, alpha: float = 0.05,
                                      power: float = 0.8) -> float:
    """Smallest ``p10 - p01`` that McNemar's exact test detects with probability ``power`` on
    ``n_pairs`` pairs, of which a share ``discordant`` (``p10 + p01``, e.g. from a pilot's
    ``mean(a != b)``) disagree; by bisection on `mcnemar_power`."""
    _check_rates(alpha, power)
    if not 0 < discordant <= 1:
        raise HarnessError(f"discordant must lie in (0, 1], got {discordant}")

    def power_of(effect: float) -> float:
        return mcnemar_power(n_pairs, p10=(discordant + effect) / 2,
                             p01=(discordant - effect) / 2, alpha=alpha)

    if power_of(discordant) < power:
        raise HarnessError(f"{n_pairs} pairs with {discordant:.0%} discordant cannot reach "
                           f"power {power} at any effect; add pairs")
    low, high = 0.0, discordant
    for _ in range(60):
        mid = (low + high) / 2
        low, high = (mid, high) if power_of(mid) < power else (low, mid)
    return high


def mcnemar_required_pairs(effect: float, *, discordant: float, alpha: float = 0.05,
                           power: float = 0.8, max_pairs: int = 1_000_000) -> int:
    """Fewest pairs with which McNemar's exact test reaches ``power`` against ``p10 - p01 =
    |effect|`` given a discordant share ``discordant``. Exact power is saw-toothed in
    ``n``; this is the first ``n`` that reaches it, searched upward from the normal
    approximation of Connor (1987) less 10%."""
    _check_rates(alpha, power)
    effect = abs(effect)
    if not 0 < discordant <= 1 or not 0 < effect <= discordant:
        raise HarnessError(f"need 0 < |effect| <= discordant <= 1, got {effect}, {discordant}")
    za, zb = scipy.stats.norm.ppf(1 - alpha / 2), scipy.stats.norm.ppf(power)
    guess = (za * math.sqrt(discordant) + zb * math.sqrt(discordant - effect**2)) ** 2 / effect**2
    n = max(1, int(0.9 * guess))
    while mcnemar_power(n, p10=(discordant + effect) / 2, p01=(discordant - effect) / 2,
                        alpha=alpha) < power:
        n += 1
        if n > max_pairs:
            raise HarnessError(f"more than {max_pairs} pairs needed")
    return n
