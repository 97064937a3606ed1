"""Grader determinism: re-grade stored trajectories and compare the rewards.

Re-grading a trajectory replays its stored actions in a fresh env (``suite.make_env``) reset
with the episode's own seed (`harness.episodes.env_seed`) and compares, step by step, the
reward and the ``won``/``score`` the env reports with the stored ones. The Env contract says
same seed + same actions => same rewards; a task whose replays disagree (with the record or
with each other) has a flaky grader.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd

from harness.records import EpisodeKey, StepRecord
from harness.episodes import env_seed
from harness.store import Store
from tasks.base import Suite

__all__ = ["regrade", "first_difference", "check_determinism", "FLAKY_COLUMNS"]

FLAKY_COLUMNS = ["run_id", "policy", "task_id", "task_type", "eval_seed", "sample", "detail"]

Grade = tuple[float, bool, float]
"""One step's (reward, won, score)."""


def _same(a: float, b: float) -> bool:
    return a == b or (math.isnan(a) and math.isnan(b))


def regrade(suite: Suite, task_id: str, eval_seed: int, actions: Sequence[str]) -> list[Grade]:
    """Replay ``actions`` on a fresh env of ``task_id`` seeded for ``eval_seed``; the grade
    after each step (the replay stops early if the env ends the episode)."""
    env = suite.make_env(task_id)
    env.reset(seed=env_seed(suite.id, task_id, eval_seed))
    grades: list[Grade] = []
    for action in actions:
        result = env.step(action)
        grades.append((float(result.reward), bool(result.info.get("won", False)),
                       float(result.info.get("score", float("nan")))))
        if result.terminated or result.truncated:
            break
    return grades


def _stored(steps: Sequence[StepRecord]) -> list[Grade]:
    return [(float(s.reward), bool(s.info.get("won", False)),
             float(s.info.get("score", float("nan")))) for s in steps]


def first_difference(expected: Sequence[Grade], actual: Sequence[Grade]) -> str | None:
    """A one-line description of where two grade sequences first differ (None if equal)."""
    for t, (e, a) in enumerate(zip(expected, actual, strict=False)):  # lengths checked below
        if not (_same(e[0], a[0]) and e[1] == a[1] and _same(e[2], a[2])):
            return f"step {t}: stored (reward, won, score) {e}, re-graded {a}"
    if len(expected) != len(actual):
        return f"stored {len(expected)} steps, re-grading ended after {len(actual)}"
    return None


def _pick(episodes: pd.DataFrame, limit: int) -> pd.DataFrame:
    """Up to ``limit`` episodes spread evenly over the (sorted) frame."""
    if len(episodes) <= limit:
        return episodes
    index = np.unique(np.linspace(0, len(episodes) - 1, limit).round().astype(int))
    return episodes.iloc[index]


def check_determinism(suite: Suite, store: Store, episodes: pd.DataFrame, *,
                      regrades: int = 3, limit: int = 100) -> tuple[int, pd.DataFrame]:
    """Re-grade up to ``limit`` finished episodes of ``episodes`` ``regrades`` times each.

    Returns ``(n_checked, flaky)``: how many trajectories were re-graded, and one row per
    trajectory that did not reproduce (columns `FLAKY_COLUMNS`). An exception while
    replaying counts as not reproducing; its message is the detail.
    """
    finished = episodes[(episodes["status"] == "ok") & (episodes["n_steps"] > 0)]
    chosen = _pick(finished.sort_values(["policy", "task_id", "eval_seed", "sample"]), limit)
    flaky = []
    for row in chosen.itertuples(index=False):
        key = EpisodeKey(row.policy, row.suite, row.task_id, int(row.eval_seed),
                         int(row.sample))
        steps = store.load_steps(row.run_id, key)
        expected, actions = _stored(steps), [s.action for s in steps]
        detail = None
        for attempt in range(regrades):
            try:
                detail = first_difference(expected, regrade(suite, row.task_id,
                                                            int(row.eval_seed), actions))
            except Exception as exc:  # noqa: BLE001 - a grader that raises is flaky
                detail = f"re-grading raised {type(exc).__name__}: {exc}"
            if detail is not None:
                detail = f"re-grade {attempt + 1} of {regrades}: {detail}"
                break
        if detail is not None:
            flaky.append({"run_id": row.run_id, "policy": row.policy, "task_id": row.task_id,
                          "task_type": row.task_type, "eval_seed": int(row.eval_seed),
                          "sample": int(row.sample), "detail": detail})
    return len(chosen), pd.DataFrame(flaky, columns=FLAKY_COLUMNS)
