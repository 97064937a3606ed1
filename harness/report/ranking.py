"""Who leads, and who cannot be told apart from the leader: the data behind the tables.

Within a group (a suite, or one task type of a suite) each policy's success rate has a
Wilson 95% interval (as `harness leaderboard`). The best policy is the one with the highest
rate (all policies tied at the top count as best). Every other policy is compared with the
best on the tasks they share (`harness.stats.arrays.outcome_tensor`) by the two-sided
sign-flip permutation test that flips whole tasks (`harness.stats.paired.sign_flip_pvalues`
on per-task mean differences; exact up to 16 tasks, else ``n_resamples`` random flips from
a generator seeded by the group's name, so reruns give the same p-values). The family of
"best vs other" p-values of a group is Holm-adjusted (`harness.stats.multiplicity`); a policy
whose adjusted p is at least ``alpha`` is *not separable from the best*.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

import numpy as np
import pandas as pd

from harness.core import HarnessError, make_rng
from harness.stats.estimators import proportion_interval
from harness.stats.arrays import outcome_tensor
from harness.stats.frame import paired_outcomes
from harness.stats.multiplicity import adjust_pvalues
from harness.stats.paired import sign_flip_pvalues

__all__ = ["RANK_COLUMNS", "rank_policies"]

log = logging.getLogger(__name__)

RANK_COLUMNS = ["suite", "task_type", "policy", "n", "successes", "success", "low", "high",
                "best", "p_vs_best", "p_holm", "separable"]
"""``task_type`` is ``"all"`` for whole-suite rows; ``p_*`` are NaN and ``separable`` is
None for the best policies and for policies that share no keys with the best."""


def _rates(group: pd.DataFrame) -> pd.DataFrame:
    rows = []
    for policy, episodes in group.groupby("policy", sort=True):
        n, wins = len(episodes), int(episodes["success"].sum())
        interval = proportion_interval(wins, n, method="wilson")
        rows.append({"policy": policy, "n": n, "successes": wins, "success": interval.estimate,
                     "low": interval.low, "high": interval.high})
    return pd.DataFrame(rows)


def _task_sums(values: np.ndarray, tasks: np.ndarray) -> np.ndarray:
    """Per-task sums of ``values`` ``(n_keys, n_policies)`` -> ``(n_policies, n_tasks)``."""
    codes = np.unique(tasks, return_inverse=True)[1].reshape(-1)
    return np.stack([np.bincount(codes, weights=values[:, j]) for j in range(values.shape[1])])


def _p_against_best(group: pd.DataFrame, best: str, others: list[str], label: str,
                    n_resamples: int) -> np.ndarray:
    """Clustered sign-flip p-values of best vs each of ``others`` (NaN where untestable).

    Fast path: every policy on the tasks all of them completed (`outcome_tensor`, task
    means over training and eval seeds). Fallback when that is impossible (duplicate keys,
    no task shared by all): each policy paired with the best on its own shared keys."""
    rng = make_rng("report/separability", label)
    try:
        # all of the group's policies (passing ``policies=`` costs O(n_policies x rows))
        values, labels = outcome_tensor(group, metric="success", missing="drop_tasks")
    except HarnessError as exc:
        log.info("%s: no crossed design (%s); pairing each policy with the best", label, exc)
    else:
        means = values.mean(axis=(1, 3))  # (n_policies, n_tasks)
        index = {policy: i for i, policy in enumerate(labels.policies)}
        d = means[index[best]] - means[[index[o] for o in others]]
        return sign_flip_pvalues(d, rng, n_resamples=n_resamples)
    p = np.full(len(others), np.nan)
    for i, other in enumerate(others):
        try:
            paired = paired_outcomes(group, best, other, metric="success")
        except HarnessError:
            continue
        sums = _task_sums(np.column_stack([paired.a, paired.b]), paired.tasks)
        p[i] = sign_flip_pvalues(sums[:1] - sums[1:], rng, n_resamples=n_resamples)[0]
    return p


def _rank_group(group: pd.DataFrame, label: str, alpha: float,
                n_resamples: int) -> pd.DataFrame:
    table = _rates(group)
    top = table["success"].max()
    table["best"] = table["success"] == top
    table["p_vs_best"] = np.nan
    table["p_holm"] = np.nan
    table["separable"] = None
    others = table.loc[~table["best"], "policy"].tolist()
    if others:
        best = table.loc[table["best"], "policy"].iloc[0]
        p = _p_against_best(group, best, others, label, n_resamples)
        tested = ~np.isnan(p)
        index = table.index[~table["best"]]
        table.loc[index, "p_vs_best"] = p
        if tested.any():
            adjusted = adjust_pvalues(p[tested], method="holm", alpha=alpha)
            table.loc[index[tested], "p_holm"] = adjusted.p_adjusted
            table.loc[index[tested], "separable"] = [bool(r) for r in adjusted.reject]
    return table.sort_values(["success", "policy"], ascending=[False, True], ignore_index=True)


def rank_policies(df: pd.DataFrame, *, by_task_type: bool = False, alpha: float = 0.05,
                  n_resamples: int = 10_000,
                  suites: Sequence[str] | None = None) -> pd.DataFrame:
    """Success with Wilson intervals, the best, and separability from it (Holm), per suite
    (``task_type == "all"``) or, with ``by_task_type``, per (suite, task type).

    ``df``: the frame of `harness.store.load_episodes`. Columns `RANK_COLUMNS`; rows sorted by
    suite, task type, then success (best first).
    """
    if df.empty:
        raise HarnessError("no episodes to rank; run `harness run` first or check the filters")
    if not 0 < alpha < 1:
        raise HarnessError(f"alpha must lie in (0, 1), got {alpha}")
    keys = ["suite", "task_type"] if by_task_type else ["suite"]
    frames = []
    for labels, group in df.groupby(keys, sort=True):
        labels = labels if isinstance(labels, tuple) else (labels,)
        if suites is not None and labels[0] not in suites:
            continue
        table = _rank_group(group, "/".join(map(str, labels)), alpha, n_resamples)
        table.insert(0, "suite", labels[0])
        table.insert(1, "task_type", labels[1] if by_task_type else "all")
        frames.append(table)
    if not frames:
        raise HarnessError("no episodes of the requested suites")
    return pd.concat(frames, ignore_index=True)[RANK_COLUMNS]
