"""Power planning for a paired comparison of two policies, from pilot data.

Model. A paired difference ``d = a - b`` on key ``j`` of task ``i`` has variance ``sigma2``
and intra-task correlation ``icc`` (the share of ``sigma2`` that is a per-task effect). The
mean difference over ``n_tasks`` tasks with ``m`` keys (eval seeds x samples) each has

    Var = sigma2 * (1 + (m - 1) * icc) / (n_tasks * m)        (the design effect, Kish 1965)

and a two-sided level-``alpha`` test of zero difference has power ``power`` against

    MDE = (z_{1 - alpha/2} + z_{power}) * sqrt(Var)

(closed-form normal approximation; the ignored far rejection tail makes it very slightly
conservative). Required tasks for an effect ``delta`` solve the same equation for
``n_tasks`` and round up. ``sigma2`` and ``icc`` come from a pilot by one-way ANOVA on the
differences grouped by task (moment estimators, unbalanced sizes allowed, negative task
variance truncated at zero). Keys within a task are treated as exchangeable; a training-seed
effect shared across all tasks is not modelled (plan seeds with the hierarchical bootstrap).
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


def _z_sum(alpha: float, power: float) -> float:
    if not 0 < alpha < 1 or not 0 < power < 1:
        raise HarnessError(f"alpha and power must lie in (0, 1), got {alpha} and {power}")
    return float(scipy.stats.norm.ppf(1 - alpha / 2) + scipy.stats.norm.ppf(power))


def minimum_detectable_effect(pilot: PilotVariance, *, n_tasks: int, seeds_per_task: int = 1,
                              alpha: float = 0.05, power: float = 0.8,
                              icc: float | None = None) -> float:
    """Smallest mean difference a two-sided level-``alpha`` paired test detects with
    probability ``power`` on ``n_tasks`` tasks x ``seeds_per_task`` keys (normal approx.)."""
    se = paired_standard_error(pilot, n_tasks=n_tasks, seeds_per_task=seeds_per_task, icc=icc)
    return _z_sum(alpha, power) * se


def required_tasks(pilot: PilotVariance, *, effect: float, seeds_per_task: int = 1,
                   alpha: float = 0.05, power: float = 0.8, icc: float | None = None) -> int:
    """Tasks needed, with ``seeds_per_task`` keys each, to detect a mean difference of
    ``effect`` with probability ``power`` at two-sided level ``alpha`` (normal approx.)."""
    if not math.isfinite(effect) or effect == 0:
        raise HarnessError(f"effect must be a non-zero number, got {effect}")
    deff = design_effect(seeds_per_task, _icc(pilot, seeds_per_task, icc))
    n = _z_sum(alpha, power) ** 2 * pilot.variance * deff / (seeds_per_task * effect**2)
    return max(1, math.ceil(n - 1e-9))


def power_at(pilot: PilotVariance, *, effect: float, n_tasks: int, seeds_per_task: int = 1,
             alpha: float = 0.05, icc: float | None = None) -> float:
    """Approximate power ``Phi(|effect| / SE - z_{1 - alpha/2})`` of the planned design."""
    se = paired_standard_error(pilot, n_tasks=n_tasks, seeds_per_task=seeds_per_task, icc=icc)
    if not 0 < alpha < 1:
        raise HarnessError(f"alpha must lie in (0, 1), got {alpha}")
    return float(scipy.stats.norm.cdf(abs(effect) / se - scipy.stats.norm.ppf(1 - alpha / 2)))
