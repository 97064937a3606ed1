"""Synthetic tidy episode frames with the columns of `harness.store.load_episodes`."""

import numpy as np
import pandas as pd
import pytest

COLUMNS = ["run_id", "policy", "suite", "task_id", "task_type", "split", "train_seed",
           "eval_seed", "sample", "status", "success", "score", "total_reward", "n_steps",
           "n_invalid", "terminated", "truncated", "prompt_tokens", "completion_tokens",
           "wall_s", "error"]


def episode_rows(policy, task_ids, eval_seeds, success, *, samples=0, train_seed=None,
                 score=None, status="ok", suite="toy@1", task_types=None, run_id="run-1"):
    """One row per entry of ``task_ids`` / ``eval_seeds`` / ``success`` (scalars broadcast)."""
    task_ids = np.asarray(task_ids, dtype=object)
    n = task_ids.size
    success = np.broadcast_to(np.asarray(success, dtype=bool), (n,))
    status = np.broadcast_to(np.asarray(status, dtype=object), (n,))
    success = success & (status == "ok")
    score = success.astype(float) if score is None else np.broadcast_to(
        np.asarray(score, dtype=float), (n,))
    types = (np.array([f"type-{t[:2]}" for t in task_ids], dtype=object) if task_types is None
             else np.broadcast_to(np.asarray(task_types, dtype=object), (n,)))
    frame = pd.DataFrame({
        "run_id": run_id, "policy": policy, "suite": suite, "task_id": task_ids,
        "task_type": types, "split": "test",
        "train_seed": pd.array([train_seed] * n, dtype="Int64"),
        "eval_seed": np.broadcast_to(np.asarray(eval_seeds, dtype=int), (n,)),
        "sample": np.broadcast_to(np.asarray(samples, dtype=int), (n,)),
        "status": status, "success": success, "score": score, "total_reward": score,
        "n_steps": 3, "n_invalid": 0, "terminated": True, "truncated": False,
        "prompt_tokens": 10, "completion_tokens": 5, "wall_s": 0.01,
        "error": np.where(status == "ok", "", "boom"),
    })
    return frame[COLUMNS]


def episodes(*parts):
    """Concatenate `episode_rows` frames."""
    return pd.concat(parts, ignore_index=True)


@pytest.fixture
def make_rows():
    return episode_rows


@pytest.fixture
def concat():
    return episodes
