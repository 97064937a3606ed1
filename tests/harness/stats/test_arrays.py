"""outcome_tensor: layout, sample averaging, seeds, unbalanced designs, bad input."""

import itertools

import numpy as np
import pandas as pd
import pytest

from harness.core import HarnessError
from harness.stats.arrays import as_finite_array, outcome_tensor


def frame(rows):
    """Tidy episode frame from ``(policy, train_seed, task_id, eval_seed, sample, success)``
    tuples, with every column `load_episodes` gives (suite ``toy@1`` unless the task id is
    ``"suite:task"``)."""
    records = []
    for policy, seed, task, eval_seed, sample, success in rows:
        suite, task_id = task.split(":") if ":" in task else ("toy@1", task)
        records.append({
            "run_id": "run-1", "policy": policy, "suite": suite, "task_id": task_id,
            "task_type": "t", "split": "test", "train_seed": seed, "eval_seed": eval_seed,
            "sample": sample, "status": "ok", "success": bool(success),
            "score": float(success), "total_reward": float(success), "n_steps": 2,
            "n_invalid": 0, "terminated": True, "truncated": False, "prompt_tokens": 1,
            "completion_tokens": 1, "wall_s": 0.1, "error": None})
    df = pd.DataFrame.from_records(records)
    df["train_seed"] = df["train_seed"].astype("Int64")
    return df


def full(policies, seeds, tasks, eval_seeds, outcome=lambda *key: 1):
    return [(p, s, t, e, 0, outcome(p, s, t, e))
            for p, s, t, e in itertools.product(policies, seeds, tasks, eval_seeds)]


def test_layout_by_hand():
    # policy "b" fails only task y at eval seed 1 with training seed 7.
    rows = full(["a", "b"], [3, 7], ["x", "y"], [0, 1],
                lambda p, s, t, e: 0 if (p, s, t, e) == ("b", 7, "y", 1) else 1)
    values, labels = outcome_tensor(frame(rows))
    assert values.shape == (2, 2, 2, 2)
    assert labels.policies == ("a", "b")
    assert labels.train_seeds == ((3, 7), (3, 7))
    assert labels.tasks == (("toy@1", "x"), ("toy@1", "y"))
    assert labels.eval_seeds == (0, 1)
    assert values[1, 1, 1, 1] == 0 and values.sum() == 15


def test_samples_are_averaged_within_a_cell():
    # task x, eval seed 0: samples 1, 0, 1 -> 2/3; eval seed 1: one sample 0.
    rows = [("p", None, "x", 0, 0, 1), ("p", None, "x", 0, 1, 0), ("p", None, "x", 0, 2, 1),
            ("p", None, "x", 1, 0, 0)]
    values, labels = outcome_tensor(frame(rows))
    assert values.shape == (1, 1, 1, 2)
    np.testing.assert_allclose(values[0, 0, 0], [2 / 3, 0])
    assert labels.train_seeds == ((None,),)


def test_untrained_policy_is_broadcast_along_seeds():
    rows = full(["trained"], [0, 1, 2], ["x", "y"], [0], lambda p, s, t, e: s % 2)
    rows += full(["api"], [None], ["x", "y"], [0], lambda p, s, t, e: t == "x")
    values, labels = outcome_tensor(frame(rows), policies=["trained", "api"])
    assert values.shape == (2, 3, 2, 1)
    assert labels.policies == ("trained", "api") and labels.n_train_seeds == (3, 1)
    np.testing.assert_array_equal(values[0, :, 0, 0], [0, 1, 0])
    np.testing.assert_array_equal(values[1, :, :, 0], [[1, 0]] * 3)


def test_unequal_seed_counts_raise():
    rows = full(["a"], [0, 1, 2], ["x"], [0]) + full(["b"], [0, 1], ["x"], [0])
    with pytest.raises(HarnessError, match="different numbers of training seeds"):
        outcome_tensor(frame(rows))


def test_missing_cells_raise_or_drop_tasks():
    rows = full(["a", "b"], [0], ["x", "y", "z"], [0, 1])
    rows = [r for r in rows if not (r[0] == "b" and r[2] == "y" and r[3] == 1)]
    with pytest.raises(HarnessError, match="1 of 12 .* cells have no episode"):
        outcome_tensor(frame(rows))
    values, labels = outcome_tensor(frame(rows), missing="drop_tasks")
    assert values.shape == (2, 1, 2, 2)
    assert labels.tasks == (("toy@1", "x"), ("toy@1", "z"))
    assert labels.dropped_tasks == (("toy@1", "y"),)


def test_suites_are_kept_apart_and_filtered():
    rows = full(["a"], [0], ["s@1:x", "t@1:x"], [0], lambda p, s, t, e: t.startswith("s"))
    values, labels = outcome_tensor(frame(rows))
    assert labels.tasks == (("s@1", "x"), ("t@1", "x"))
    np.testing.assert_array_equal(values.ravel(), [1, 0])
    values, labels = outcome_tensor(frame(rows), suite="t@1")
    assert labels.tasks == (("t@1", "x"),) and values.ravel().tolist() == [0.0]


def test_score_nan_raises_unless_an_error_score_is_given():
    df = frame(full(["a"], [0], ["x", "y"], [0]))
    df.loc[1, ["status", "success", "score"]] = ["error", False, np.nan]
    with pytest.raises(HarnessError, match="NaN or infinite score"):
        outcome_tensor(df, metric="score")
    values, _ = outcome_tensor(df, metric="score", error_score=0.0)
    np.testing.assert_array_equal(values.ravel(), [1.0, 0.0])
    values, _ = outcome_tensor(df, metric="success")  # errors are failures
    np.testing.assert_array_equal(values.ravel(), [1.0, 0.0])


@pytest.mark.parametrize("kwargs, message", [
    ({"metric": "accuracy"}, "unknown metric"),
    ({"suite": "nope@1"}, "no episodes of suite"),
    ({"policies": ["zzz"]}, "no episodes of policy"),
    ({"missing": "ignore"}, "missing must be"),
])
def test_bad_options_raise(kwargs, message):
    with pytest.raises(HarnessError, match=message):
        outcome_tensor(frame(full(["a"], [0], ["x"], [0])), **kwargs)


def test_empty_frame_duplicates_and_mixed_seeds_raise():
    df = frame(full(["a"], [0], ["x"], [0]))
    with pytest.raises(HarnessError, match="empty"):
        outcome_tensor(df.iloc[:0])
    with pytest.raises(HarnessError, match="filter it by run_id"):
        outcome_tensor(pd.concat([df, df.assign(run_id="run-2")]))
    mixed = frame(full(["a"], [0], ["x"], [0]) + full(["a"], [None], ["x"], [1]))
    with pytest.raises(HarnessError, match="with and without a train_seed"):
        outcome_tensor(mixed)
    with pytest.raises(HarnessError, match="lacks column"):
        outcome_tensor(df.drop(columns=["eval_seed"]))


def test_as_finite_array():
    np.testing.assert_array_equal(as_finite_array([1, 2]), [1.0, 2.0])
    for bad in ([], [np.nan], [np.inf, 1], ["a"]):
        with pytest.raises(HarnessError):
            as_finite_array(bad)
    with pytest.raises(HarnessError, match="dimension"):
        as_finite_array([[1.0]], ndim=1)
