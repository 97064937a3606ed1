"""From the tidy episode DataFrame to the arrays the estimators and bootstraps take.

The central shape is ``(n_policies, n_train_seeds, n_tasks, n_eval_seeds)``: one value per
cell, where a cell is one policy trained with one training seed, evaluated on one task with
one evaluation seed. Tasks and evaluation seeds are *crossed* with policies and training
seeds: cell ``[p, s, t, e]`` and cell ``[q, r, t, e]`` saw the same task and the same
environment randomness.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from harness.core import HarnessError

__all__ = ["TensorLabels", "as_finite_array", "outcome_tensor", "METRICS"]

log = logging.getLogger(__name__)

METRICS = ("success", "score", "total_reward", "n_steps", "n_invalid", "wall_s",
           "prompt_tokens", "completion_tokens")
"""Numeric episode columns that `outcome_tensor` accepts as ``metric``."""

_KEY = ["policy", "train_seed", "suite", "task_id", "eval_seed", "sample"]


def as_finite_array(values, *, name: str = "values", ndim: int | None = None) -> np.ndarray:
    """``values`` as a float64 array; `HarnessError` if it is empty, has the wrong number of
    dimensions, or holds a NaN or an infinity (never a silent NaN result downstream)."""
    try:
        array = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError) as error:
        raise HarnessError(f"{name} must be numeric: {error}") from None
    if ndim is not None and array.ndim != ndim:
        raise HarnessError(f"{name} must have {ndim} dimension(s), got shape {array.shape}")
    if array.size == 0:
        raise HarnessError(f"{name} is empty: nothing to estimate")
    bad = ~np.isfinite(array)
    if bad.any():
        raise HarnessError(f"{name} holds {int(bad.sum())} NaN or infinite value(s) of "
                           f"{array.size}; drop or fill them before estimating")
    return array


@dataclass(frozen=True)
class TensorLabels:
    """What each axis of an `outcome_tensor` means.

    ``train_seeds[p]`` lists policy ``p``'s own training seeds in axis order (``(None,)`` for
    a policy not trained here); ``n_train_seeds[p]`` is how many it really has (a policy with
    one seed is broadcast along the seed axis, see `outcome_tensor`).
    """

    policies: tuple[str, ...]
    train_seeds: tuple[tuple[int | None, ...], ...]
    tasks: tuple[tuple[str, str], ...]  # (suite, task_id)
    eval_seeds: tuple[int, ...]
    metric: str
    n_train_seeds: tuple[int, ...]
    dropped_tasks: tuple[tuple[str, str], ...] = ()


def _select(df: pd.DataFrame, metric: str, policies: Sequence[str] | None,
            suite: str | None, error_score: float | None) -> pd.DataFrame:
    if metric not in METRICS:
        raise HarnessError(f"unknown metric {metric!r}; choose one of {', '.join(METRICS)}")
    missing = [c for c in _KEY + [metric] if c not in df.columns]
    if missing:
        raise HarnessError(f"episode frame lacks column(s) {missing}; load it with "
                           "harness.store.load_episodes")
    if suite is not None:
        if suite not in set(df["suite"]):
            raise HarnessError(f"no episodes of suite {suite!r} (present: "
                               f"{sorted(set(df['suite']))})")
        df = df[df["suite"] == suite]
    if policies is not None:
        absent = [p for p in policies if p not in set(df["policy"])]
        if absent:
            raise HarnessError(f"no episodes of policy/policies {absent} (present: "
                               f"{sorted(set(df['policy']))})")
        df = df[df["policy"].isin(list(policies))]
    if df.empty:
        raise HarnessError("the episode frame is empty: nothing to estimate")
    df = df[_KEY + [metric]].copy()
    value = pd.to_numeric(df[metric].astype("float64"), errors="coerce")
    if error_score is not None:
        value = value.fillna(float(error_score))
    bad = ~np.isfinite(value.to_numpy(dtype=np.float64, na_value=np.nan))
    if bad.any():
        raise HarnessError(f"{int(bad.sum())} episode(s) have a NaN or infinite {metric} "
                           "(errored episodes?); pass error_score=... to count them as a "
                           "fixed score, or filter them out")
    df["value"] = value.to_numpy(dtype=np.float64)
    dup = df.duplicated(_KEY, keep=False)
    if dup.any():
        first = df.loc[dup, _KEY].iloc[0].to_dict()
        raise HarnessError(f"{int(dup.sum())} episodes share a (policy, train_seed, suite, "
                           f"task_id, eval_seed, sample) key, e.g. {first}; the frame mixes "
                           "runs of the same policy: filter it by run_id")
    return df


def _seed_axes(cells: pd.DataFrame, policies: list[str]):
    """Per-policy sorted training seeds and the common seed-axis length."""
    seeds: dict[str, tuple[int | None, ...]] = {}
    for policy in policies:
        present = cells.loc[cells["policy"] == policy, "train_seed"]
        has_na = bool(present.isna().any())
        numbers = sorted(int(s) for s in present.dropna().unique())
        if has_na and numbers:
            raise HarnessError(f"policy {policy!r} has episodes both with and without a "
                               "train_seed; give every episode of a policy the same kind")
        seeds[policy] = (None,) if has_na else tuple(numbers)
    counts = {p: len(s) for p, s in seeds.items()}
    multi = {c for c in counts.values() if c > 1}
    if len(multi) > 1:
        raise HarnessError("policies have different numbers of training seeds "
                           f"({counts}); evaluate the same number per policy, or compare "
                           "subsets with policies=[...]")
    return seeds, (multi.pop() if multi else 1)


def outcome_tensor(df: pd.DataFrame, *, metric: str = "success",
                   policies: Sequence[str] | None = None, suite: str | None = None,
                   missing: str = "raise", error_score: float | None = None,
                   ) -> tuple[np.ndarray, TensorLabels]:
    """The tidy episode frame as values of shape
    ``(n_policies, n_train_seeds, n_tasks, n_eval_seeds)`` and their `TensorLabels`.

    - A cell's value is the mean of ``metric`` over its ``sample``s (k samples of the same
      task and eval seed are averaged, so every cell weighs the same whatever its k; use
      `estimators.pass_at_k_table` for pass@k).
    - Tasks are ``(suite, task_id)`` pairs, so ``suite=None`` pools suites without id clashes.
    - Training seeds sit on the axis in sorted order, per policy (seed axis position ``j`` of
      two policies need not be the same seed number). A ``<NA>`` train_seed (a policy not
      trained here) is one seed. A policy with a single seed is broadcast along the seed
      axis when others have more: it then carries no training-seed variance, as befits one
      fixed artefact. Other unequal seed counts raise `HarnessError`.
    - Missing cells (a policy/seed that lacks a (task, eval seed) another one has): with
      ``missing="raise"`` (default) a `HarnessError` says how many and shows one; with
      ``missing="drop_tasks"`` every task with a missing cell is dropped (listed in
      ``labels.dropped_tasks`` and logged), keeping the design crossed and balanced.
    - ``metric`` NaN (errored episodes have NaN score) raises `HarnessError` unless
      ``error_score`` gives the value to count them as. ``success`` is False for errors.
    - Duplicate episode keys (the same policy's episodes from two runs) raise `HarnessError`.
    """
    if missing not in ("raise", "drop_tasks"):
        raise HarnessError(f"missing must be 'raise' or 'drop_tasks', got {missing!r}")
    df = _select(df, metric, policies, suite, error_score)
    cells = (df.groupby(_KEY[:-1], dropna=False, sort=True)["value"].mean().reset_index())
    policy_order = (list(policies) if policies is not None
                    else sorted(cells["policy"].unique().tolist()))
    seeds, n_seeds = _seed_axes(cells, policy_order)
    task_frame = cells[["suite", "task_id"]].drop_duplicates()
    tasks = sorted(zip(task_frame["suite"].tolist(), task_frame["task_id"].tolist()))
    eval_seeds = sorted(int(e) for e in cells["eval_seed"].unique())

    p_idx = pd.Index(policy_order).get_indexer(cells["policy"])
    # seed axis position = rank of the seed among its policy's seeds (<NA> alone: 0)
    s_idx = (cells.groupby("policy")["train_seed"].rank(method="dense") - 1)
    s_idx = s_idx.fillna(0).to_numpy(dtype=np.intp)
    t_idx = pd.MultiIndex.from_tuples(tasks).get_indexer(
        pd.MultiIndex.from_arrays([cells["suite"], cells["task_id"]]))
    e_idx = pd.Index(eval_seeds).get_indexer(cells["eval_seed"].astype(int))

    shape = (len(policy_order), n_seeds, len(tasks), len(eval_seeds))
    values = np.full(shape, np.nan)
    values[p_idx, s_idx, t_idx, e_idx] = cells["value"].to_numpy()
    for p, policy in enumerate(policy_order):
        if len(seeds[policy]) == 1 and n_seeds > 1:
            values[p, 1:] = values[p, :1]

    values, tasks, dropped = _handle_missing(values, tasks, missing, policy_order, seeds,
                                             eval_seeds)
    labels = TensorLabels(
        policies=tuple(policy_order),
        train_seeds=tuple(seeds[p] for p in policy_order),
        tasks=tuple(tasks), eval_seeds=tuple(eval_seeds), metric=metric,
        n_train_seeds=tuple(len(seeds[p]) for p in policy_order), dropped_tasks=dropped)
    return values, labels


def _handle_missing(values: np.ndarray, tasks: list, missing: str, policy_order: list[str],
                    seeds: dict, eval_seeds: list[int]
                    ) -> tuple[np.ndarray, list, tuple[tuple[str, str], ...]]:
    """`outcome_tensor`'s missing cells: a `HarnessError` (``missing="raise"``) or the tasks
    with a hole dropped (``"drop_tasks"``); returns the values, tasks and dropped tasks."""
    hole = np.isnan(values)
    if not hole.any():
        return values, tasks, ()
    bad_tasks = hole.any(axis=(0, 1, 3))
    if missing == "raise":
        p, s, t, e = (int(i[0]) for i in np.nonzero(hole))
        raise HarnessError(
            f"{int(hole.sum())} of {hole.size} (policy, train seed, task, eval seed) "
            f"cells have no episode, e.g. policy {policy_order[p]!r} seed "
            f"{seeds[policy_order[p]][min(s, len(seeds[policy_order[p]]) - 1)]} task "
            f"{tasks[t]} eval seed {eval_seeds[e]}; finish the runs, or pass "
            "missing='drop_tasks'")
    dropped = tuple(t for t, b in zip(tasks, bad_tasks) if b)
    if bad_tasks.all():
        raise HarnessError("no task is complete for every policy, training seed and "
                           "eval seed; nothing left after missing='drop_tasks'")
    log.warning("dropping %d of %d tasks with missing cells", len(dropped), len(tasks))
    return values[:, :, ~bad_tasks], [t for t, b in zip(tasks, bad_tasks) if not b], dropped

