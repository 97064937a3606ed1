"""Point estimates and closed-form intervals.

Every function states its method and source. Array arguments give their shapes; NaN or
empty input raises `HarnessError` (never a silent NaN result).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
import scipy.stats
from statsmodels.stats.proportion import proportion_confint
from statsmodels.stats.weightstats import DescrStatsW

from harness.core import HarnessError
from harness.stats.arrays import as_finite_array

__all__ = [
    "Interval", "proportion_interval", "success_rate", "mean_score", "iqm",
    "optimality_gap", "pass_at_k", "pass_hat_k", "pass_at_k_table",
    "probability_of_improvement", "paired_probability_of_improvement",
]


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
    if method not in ("wilson", "jeffreys"):
        raise HarnessError(f"proportion interval method must be 'wilson' or 'jeffreys', "
                           f"got {method!r}")
    low, high = proportion_confint(successes, n, alpha=1 - confidence, method=method)
    return Interval(successes / n, float(low), float(high), confidence, method)


def success_rate(success, *, method: str = "wilson", confidence: float = 0.95) -> Interval:
    """Fraction of successful episodes with a Wilson (default) or Jeffreys interval.

    ``success``: shape ``(n_episodes,)``, bool or 0/1. The interval treats episodes as
    independent; with several episodes per task use `bootstrap.cluster_bootstrap` instead.
    """
    values = as_finite_array(success, name="success", ndim=1)
    if not np.isin(values, (0.0, 1.0)).all():
        raise HarnessError("success must be boolean (0/1) per episode")
    return proportion_interval(int(values.sum()), values.size, method=method,
                               confidence=confidence)


def mean_score(scores, *, confidence: float = 0.95) -> Interval:
    """Mean score with a Student-t interval (statsmodels ``DescrStatsW.tconfint_mean``).

    ``scores``: shape ``(n_episodes,)``; at least two values. Independent episodes assumed.
    """
    values = as_finite_array(scores, name="scores", ndim=1)
    if values.size < 2:
        raise HarnessError("a mean-score interval needs at least two episodes")
    low, high = DescrStatsW(values).tconfint_mean(alpha=1 - confidence)
    return Interval(float(values.mean()), float(low), float(high), confidence, "t")


def iqm(scores) -> float:
    """Interquartile mean, as rliable's ``aggregate_iqm`` (Agarwal et al. 2021): the 25%
    trimmed mean (`scipy.stats.trim_mean`, ``proportiontocut=0.25``) of all scores pooled.

    ``scores``: any shape, rliable's being ``(n_runs, n_tasks)``.
    """
    values = as_finite_array(scores, name="scores")
    return float(scipy.stats.trim_mean(values, proportiontocut=0.25, axis=None))


def optimality_gap(scores, *, gamma: float = 1.0) -> float:
    """Optimality gap, as rliable's ``aggregate_optimality_gap`` (Agarwal et al. 2021):
    ``mean(max(gamma - score, 0))`` over all scores, i.e. how far below the target ``gamma``
    scores fall, with scores above ``gamma`` counting as ``gamma``.

    ``scores``: any shape, rliable's being ``(n_runs, n_tasks)``.
    """
    values = as_finite_array(scores, name="scores")
    return float(np.mean(np.maximum(gamma - values, 0.0)))


def _counts(n, c, k: int) -> tuple[np.ndarray, np.ndarray]:
    n_arr = np.asarray(n)
    c_arr = np.asarray(c)
    if n_arr.size == 0 or c_arr.size == 0:
        raise HarnessError("pass@k needs at least one task")
    if not (np.issubdtype(n_arr.dtype, np.integer) and np.issubdtype(c_arr.dtype, np.integer)):
        raise HarnessError("pass@k needs integer sample counts n and success counts c")
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise HarnessError(f"k must be a positive integer, got {k!r}")
    n_arr, c_arr = np.broadcast_arrays(n_arr.astype(np.int64), c_arr.astype(np.int64))
    if ((c_arr < 0) | (c_arr > n_arr)).any():
        raise HarnessError("success counts c must lie in [0, n]")
    if (n_arr < k).any():
        raise HarnessError(f"pass@{k} needs at least k={k} samples per task; smallest n is "
                           f"{int(n_arr.min())}")
    return n_arr, c_arr


def _ratio_of_choose(top: np.ndarray, n: np.ndarray, k: int) -> np.ndarray:
    """``C(top, k) / C(n, k)`` as ``prod_{i<k} (top - i) / (n - i)`` (0 when top < k)."""
    out = np.ones(n.shape, dtype=np.float64)
    for i in range(k):  # k factors, not a loop over data
        out *= np.maximum(top - i, 0) / (n - i)
    return out


def pass_at_k(n, c, k: int) -> np.ndarray:
    """Unbiased pass@k per task (Chen et al. 2021, "Evaluating Large Language Models Trained
    on Code", eq. 1): ``1 - C(n - c, k) / C(n, k)``, the chance that at least one of k samples
    drawn without replacement from the n generated ones succeeds. Computed as the stable
    product ``1 - prod_{i<k} (n - c - i) / (n - i)`` (the paper's numpy form).

    ``n``, ``c``: integer arrays broadcastable to ``(n_tasks,)`` (samples, successes per task).
    Returns shape ``(n_tasks,)``; average it over tasks for the benchmark's pass@k.
    """
    n_arr, c_arr = _counts(n, c, k)
    return 1.0 - _ratio_of_choose(n_arr - c_arr, n_arr, k)


def pass_hat_k(n, c, k: int) -> np.ndarray:
    """pass^k per task (Yao et al. 2024, tau-bench): ``C(c, k) / C(n, k)``, the unbiased
    chance that *all* of k samples drawn from the n succeed (reliability, not coverage).

    ``n``, ``c``: integer arrays broadcastable to ``(n_tasks,)``. Returns ``(n_tasks,)``.
    """
    n_arr, c_arr = _counts(n, c, k)
    return _ratio_of_choose(c_arr, n_arr, k)


def pass_at_k_table(df: pd.DataFrame, k: int, *,
                    by: Sequence[str] = ("policy", "train_seed", "suite", "task_id"),
                    ) -> pd.DataFrame:
    """Per-group pass@k and pass^k from the tidy episode frame.

    Each group (default: one task of one trained policy, pooling its eval seeds and samples)
    gives ``n`` episodes and ``c`` successes; columns ``n, c, pass_at_k, pass_hat_k`` are
    added. Errored episodes count as failures (their ``success`` is False). Groups with fewer
    than k episodes raise `HarnessError`.
    """
    if df.empty:
        raise HarnessError("the episode frame is empty: nothing to estimate")
    missing = [col for col in [*by, "success"] if col not in df.columns]
    if missing:
        raise HarnessError(f"episode frame lacks column(s) {missing}")
    if df["success"].isna().any():
        raise HarnessError("success has missing values")
    grouped = df.groupby(list(by), dropna=False, sort=True)["success"]
    table = pd.DataFrame({"n": grouped.size(), "c": grouped.sum().astype(np.int64)})
    table["pass_at_k"] = pass_at_k(table["n"].to_numpy(), table["c"].to_numpy(), k)
    table["pass_hat_k"] = pass_hat_k(table["n"].to_numpy(), table["c"].to_numpy(), k)
    return table.reset_index()


def probability_of_improvement(scores_x, scores_y) -> float:
    """Probability of improvement of X over Y, as rliable (Agarwal et al. 2021): for each
    task m, ``P(X_m > Y_m) + 0.5 P(X_m = Y_m)`` estimated by the Mann-Whitney U statistic
    ``U / (n_x n_y)`` over all pairs of runs, then averaged over tasks (each task weighs
    the same). U comes from mid-ranks (`scipy.stats.rankdata`), vectorised over tasks.

    ``scores_x``: ``(n_runs_x, n_tasks)``; ``scores_y``: ``(n_runs_y, n_tasks)`` (runs of X
    and Y are unpaired; see `paired_probability_of_improvement` for shared seeds).
    """
    x = as_finite_array(scores_x, name="scores_x", ndim=2)
    y = as_finite_array(scores_y, name="scores_y", ndim=2)
    if x.shape[1] != y.shape[1]:
        raise HarnessError(f"scores_x and scores_y must cover the same tasks, got "
                           f"{x.shape[1]} and {y.shape[1]} columns")
    n_x, n_y = x.shape[0], y.shape[0]
    ranks = scipy.stats.rankdata(np.concatenate([x, y], axis=0), axis=0)
    u_x = ranks[:n_x].sum(axis=0) - n_x * (n_x + 1) / 2
    return float(np.mean(u_x / (n_x * n_y)))


def paired_probability_of_improvement(scores_x, scores_y) -> float:
    """Paired probability of improvement: for each task, the fraction of shared keys
    (row ``r`` of X and Y is the same eval seed, or training+eval seed) on which X beats Y,
    ties counting one half, ``mean_r [x > y] + 0.5 [x = y]``; then averaged over tasks.
    The paired analogue of rliable's definition: it compares X and Y on the same seeds
    instead of over all pairs of runs.

    ``scores_x``, ``scores_y``: the same shape ``(n_keys_per_task, n_tasks)``, aligned.
    """
    x = as_finite_array(scores_x, name="scores_x", ndim=2)
    y = as_finite_array(scores_y, name="scores_y", ndim=2)
    if x.shape != y.shape:
        raise HarnessError(f"paired scores must have the same shape, got {x.shape} and "
                           f"{y.shape}")
    wins = (x > y).astype(np.float64) + 0.5 * (x == y)
    return float(wins.mean(axis=0).mean())
