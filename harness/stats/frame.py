"""Align policies on shared evaluation keys of the tidy episode DataFrame.

A *key* is one evaluation unit both policies were run on: ``(suite, task_id, task_type,
eval_seed, sample)``, plus ``train_seed`` when a compared policy was trained here. Pairing on
keys is what makes the paired tests, the paired bootstrap and the clustered standard errors
valid: both policies saw the same task with the same environment randomness.

Training seeds. A policy whose rows carry a ``train_seed`` is one model per seed.

- Two trained policies are paired seed by seed (inner join on ``train_seed``).
- A trained policy against one not trained here (``train_seed`` is ``<NA>``): the untrained
  policy's outcome on a key is compared with every training seed's outcome on that key.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from harness.core import HarnessError, UnknownNameError

__all__ = ["BASE_KEYS", "AlignedOutcomes", "PairedOutcomes", "aligned_outcomes", "paired_outcomes"]

BASE_KEYS = ("suite", "task_id", "task_type", "eval_seed", "sample")
METRICS = ("success", "score")
_REQUIRED = ("policy", "train_seed", "status") + BASE_KEYS


@dataclass(frozen=True)
class AlignedOutcomes:
    """Outcomes of several policies on the keys they all share.

    keys: one row per key, columns ``BASE_KEYS`` (+ ``train_seed`` when any policy is trained).
    values: shape ``(n_keys, n_policies)``, float; column ``j`` belongs to ``policies[j]``.
    seeds: shape ``(n_keys, n_policies)``, float; the training seed behind each value, NaN for a
    policy not trained here.
    tasks: shape ``(n_keys,)``, str labels ``"suite/task_id"`` (the cluster of each key).
    """

    policies: tuple[str, ...]
    metric: str
    keys: pd.DataFrame
    values: np.ndarray
    seeds: np.ndarray
    tasks: np.ndarray

    @property
    def n_keys(self) -> int:
        return int(self.values.shape[0])

    @property
    def n_tasks(self) -> int:
        return int(np.unique(self.tasks).size)


@dataclass(frozen=True)
class PairedOutcomes:
    """Two policies' outcomes on shared keys.

    keys: one row per key (see `AlignedOutcomes.keys`).
    a, b: shape ``(n_keys,)``, float outcomes of ``policy_a`` and ``policy_b`` (0/1 for success).
    seeds_a, seeds_b: shape ``(n_keys,)``, float training seed behind each outcome (NaN: untrained).
    tasks: shape ``(n_keys,)``, str cluster labels ``"suite/task_id"``.
    task_types: shape ``(n_keys,)``, str.
    """

    policy_a: str
    policy_b: str
    metric: str
    keys: pd.DataFrame
    a: np.ndarray
    b: np.ndarray
    seeds_a: np.ndarray
    seeds_b: np.ndarray
    tasks: np.ndarray
    task_types: np.ndarray

    @property
    def n_keys(self) -> int:
        return int(self.a.shape[0])

    @property
    def n_tasks(self) -> int:
        return int(np.unique(self.tasks).size)

    @property
    def differences(self) -> np.ndarray:
        """Shape ``(n_keys,)``: ``a - b``."""
        return self.a - self.b


def paired_outcomes(df: pd.DataFrame, a: str, b: str, *, metric: str = "success",
                    suite: str | None = None) -> PairedOutcomes:
    """Align policies ``a`` and ``b`` of the episode frame ``df`` on their shared keys.

    ``metric="success"`` counts errored and timed-out episodes as failures; ``metric="score"``
    refuses NaN scores with a `HarnessError`. ``suite`` restricts to one suite (default: all
    suites both policies share). Keys are sorted, so the result does not depend on row order.
    """
    if a == b:
        raise HarnessError(f"compare two different policies (both are {a!r})")
    aligned = aligned_outcomes(df, (a, b), metric=metric, suite=suite)
    return PairedOutcomes(
        policy_a=a, policy_b=b, metric=metric, keys=aligned.keys,
        a=aligned.values[:, 0], b=aligned.values[:, 1],
        seeds_a=aligned.seeds[:, 0], seeds_b=aligned.seeds[:, 1],
        tasks=aligned.tasks, task_types=aligned.keys["task_type"].to_numpy(dtype=str),
    )


def aligned_outcomes(df: pd.DataFrame, policies: Sequence[str], *, metric: str = "success",
                     suite: str | None = None) -> AlignedOutcomes:
    """Align ``policies`` (two or more) of the episode frame ``df`` on the keys all of them share.

    Same rules as `paired_outcomes`; the result's ``values`` has shape ``(n_keys, n_policies)``.
    """
    policies = tuple(policies)
    if len(set(policies)) != len(policies) or len(policies) < 2:
        raise HarnessError(f"need at least two distinct policies, got {list(policies)}")
    if metric not in METRICS:
        raise UnknownNameError("metric", metric, METRICS)
    frame = _select(df, policies, suite)
    per_policy = {p: _policy_rows(frame, p, metric) for p in policies}
    trained = [p for p in policies if per_policy[p]["train_seed"].notna().all()]
    joined: pd.DataFrame | None = None
    for p in trained + [p for p in policies if p not in trained]:
        rows = per_policy[p]
        on = list(BASE_KEYS) + (["train_seed"] if p in trained else [])
        rows = rows[on + ["value"]].rename(columns={"value": f"value:{p}"})
        if p in trained:
            rows[f"seed:{p}"] = rows["train_seed"].astype("float64")
        if joined is None:
            joined = rows
        else:
            # an untrained policy's key matches every training seed of the trained ones
            shared = [c for c in on if c in joined.columns]
            joined = joined.merge(rows, on=shared, how="inner", validate="many_to_one")
    assert joined is not None
    if joined.empty:
        raise HarnessError(_no_shared_keys_message(per_policy, trained))
    key_cols = list(BASE_KEYS) + (["train_seed"] if trained else [])
    joined = joined.sort_values(key_cols, kind="stable").reset_index(drop=True)
    values = joined[[f"value:{p}" for p in policies]].to_numpy(dtype=float)
    seeds = np.column_stack([
        joined[f"seed:{p}"].to_numpy(dtype=float) if p in trained
        else np.full(len(joined), np.nan) for p in policies
    ])
    tasks = (joined["suite"].astype(str) + "/" + joined["task_id"].astype(str)).to_numpy(dtype=str)
    return AlignedOutcomes(policies, metric, joined[key_cols].copy(), values, seeds, tasks)


def _select(df: pd.DataFrame, policies: tuple[str, ...], suite: str | None) -> pd.DataFrame:
    if not isinstance(df, pd.DataFrame) or df.empty:
        raise HarnessError("no episodes to compare: the episode frame is empty")
    missing = [c for c in _REQUIRED if c not in df.columns]
    if missing:
        raise HarnessError(f"episode frame lacks columns {missing}; build it with "
                           "harness.store.load_episodes")
    if suite is not None:
        suites = df["suite"].astype(str).unique()
        if suite not in suites:
            raise UnknownNameError("suite", suite, suites)
        df = df[df["suite"] == suite]
    known = df["policy"].astype(str).unique()
    for p in policies:
        if p not in known:
            where = f" in suite {suite!r}" if suite is not None else ""
            raise UnknownNameError(f"policy{where}", p, known)
    return df[df["policy"].isin(policies)]


def _policy_rows(frame: pd.DataFrame, policy: str, metric: str) -> pd.DataFrame:
    """One policy's rows with a float ``value`` column; refuses NaN scores and duplicate keys."""
    rows = frame[frame["policy"] == policy].copy()
    seeds = rows["train_seed"]
    if seeds.notna().any() and seeds.isna().any():
        raise HarnessError(f"policy {policy!r} mixes episodes with and without a train_seed; "
                           "give each trained model its own policy id or seed")
    if metric == "success":
        ok = rows["status"] == "ok"
        rows["value"] = (rows["success"].fillna(False).astype(bool) & ok).astype(float)
    else:
        rows["value"] = pd.to_numeric(rows["score"], errors="coerce").astype(float)
        bad = rows["value"].isna()
        if bad.any():
            statuses = ", ".join(f"{s}: {n}" for s, n in rows.loc[bad, "status"]
                                 .value_counts().items())
            raise HarnessError(f"policy {policy!r} has {int(bad.sum())} episodes with a NaN score "
                               f"({statuses}); compare on metric='success' or rerun them")
    on = list(BASE_KEYS) + (["train_seed"] if seeds.notna().any() else [])
    dup = rows.duplicated(on, keep=False)
    if dup.any():
        runs = sorted(rows.loc[dup, "run_id"].astype(str).unique()) if "run_id" in rows else []
        raise HarnessError(f"policy {policy!r} has {int(dup.sum())} episodes sharing a key "
                           f"(runs {runs}); select one run_id per policy before comparing")
    return rows


def _no_shared_keys_message(per_policy: dict[str, pd.DataFrame], trained: list[str]) -> str:
    parts = []
    for p, rows in per_policy.items():
        suites = sorted(rows["suite"].astype(str).unique())
        desc = f"{p!r}: {len(rows)} episodes on {rows['task_id'].nunique()} tasks in {suites}"
        if p in trained:
            desc += f", train seeds {sorted(int(s) for s in rows['train_seed'].unique())}"
        parts.append(desc)
    return "the policies share no (suite, task, eval_seed, sample) keys: " + "; ".join(parts)
