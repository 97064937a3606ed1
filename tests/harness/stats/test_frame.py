import numpy as np
import pandas as pd
import pytest

from harness.core import HarnessError, UnknownNameError
from harness.stats.frame import aligned_outcomes, paired_outcomes

# Hand table: tasks t1, t2 x eval seeds 0, 1 (sample 0). B also ran t3/0, which A did not.
#   key      A  B
#   t1/0     1  0
#   t1/1     0  0
#   t2/0     1  1
#   t2/1     1  0
#   t3/0     -  1   (dropped: not shared)
TASKS = ["t1", "t1", "t2", "t2"]
SEEDS = [0, 1, 0, 1]


@pytest.fixture
def hand(make_rows, concat):
    return concat(make_rows("A", TASKS, SEEDS, [1, 0, 1, 1]),
                  make_rows("B", TASKS + ["t3"], SEEDS + [0], [0, 0, 1, 0, 1]))


def test_hand_table_is_aligned_on_shared_keys(hand):
    p = paired_outcomes(hand, "A", "B")
    assert p.n_keys == 4 and p.n_tasks == 2
    np.testing.assert_array_equal(p.a, [1, 0, 1, 1])
    np.testing.assert_array_equal(p.b, [0, 0, 1, 0])
    np.testing.assert_array_equal(p.differences, [1, 0, 0, 1])
    assert list(p.tasks) == ["toy@1/t1", "toy@1/t1", "toy@1/t2", "toy@1/t2"]
    assert list(p.keys.columns) == ["suite", "task_id", "task_type", "eval_seed", "sample"]
    assert np.isnan(p.seeds_a).all() and np.isnan(p.seeds_b).all()


def test_row_order_does_not_matter(hand):
    shuffled = hand.sample(frac=1.0, random_state=3)
    p, q = paired_outcomes(hand, "A", "B"), paired_outcomes(shuffled, "A", "B")
    np.testing.assert_array_equal(p.a, q.a)
    np.testing.assert_array_equal(p.b, q.b)


def test_errors_count_as_failures(make_rows, concat):
    # A's t1/0 episode errored (success True is overridden: an error is never a success).
    df = concat(make_rows("A", TASKS, SEEDS, [1, 1, 1, 1], status=["error", "ok", "ok", "ok"]),
                make_rows("B", TASKS, SEEDS, [0, 0, 0, 0]))
    df.loc[0, "success"] = True
    np.testing.assert_array_equal(paired_outcomes(df, "A", "B").a, [0, 1, 1, 1])


def test_score_metric_and_nan_scores(make_rows, concat):
    df = concat(make_rows("A", TASKS, SEEDS, 1, score=[0.5, 0.25, 1.0, 0.0]),
                make_rows("B", TASKS, SEEDS, 0, score=[0.5, 0.5, 0.5, 0.5]))
    np.testing.assert_allclose(paired_outcomes(df, "A", "B", metric="score").differences,
                               [0.0, -0.25, 0.5, -0.5])
    df.loc[1, "score"] = np.nan
    df.loc[1, "status"] = "error"
    with pytest.raises(HarnessError, match="1 episodes with a NaN score .*error: 1"):
        paired_outcomes(df, "A", "B", metric="score")
    # success metric is unaffected by NaN scores
    assert paired_outcomes(df, "A", "B").n_keys == 4


def test_bad_inputs_give_clear_errors(hand, make_rows, concat):
    with pytest.raises(HarnessError, match="empty"):
        paired_outcomes(hand.iloc[0:0], "A", "B")
    with pytest.raises(UnknownNameError, match=r"unknown policy 'C'.*known: A, B"):
        paired_outcomes(hand, "A", "C")
    with pytest.raises(UnknownNameError, match="unknown metric"):
        paired_outcomes(hand, "A", "B", metric="reward")
    with pytest.raises(HarnessError, match="two different policies"):
        paired_outcomes(hand, "A", "A")
    with pytest.raises(HarnessError, match="lacks columns"):
        paired_outcomes(hand.drop(columns="sample"), "A", "B")
    disjoint = concat(make_rows("A", ["t1"], [0], 1), make_rows("B", ["t2"], [0], 1))
    with pytest.raises(HarnessError, match="share no .* keys: 'A': 1 episodes on 1 tasks"):
        paired_outcomes(disjoint, "A", "B")


def test_duplicate_keys_are_refused(hand, make_rows, concat):
    twice = concat(hand, make_rows("A", TASKS, SEEDS, 1, run_id="run-2"))
    with pytest.raises(HarnessError, match=r"sharing a key \(runs \['run-1', 'run-2'\]\)"):
        paired_outcomes(twice, "A", "B")


def test_suite_filter(make_rows, concat):
    df = concat(make_rows("A", ["t1", "t2"], 0, [1, 0]), make_rows("B", ["t1", "t2"], 0, [0, 0]),
                make_rows("A", ["t1"], 0, 1, suite="other@1"),
                make_rows("B", ["t1"], 0, 1, suite="other@1"))
    assert paired_outcomes(df, "A", "B").n_keys == 3
    p = paired_outcomes(df, "A", "B", suite="toy@1")
    np.testing.assert_array_equal(p.a, [1, 0])
    with pytest.raises(UnknownNameError, match="unknown suite 'toy@2'.*did you mean 'toy@1'"):
        paired_outcomes(df, "A", "B", suite="toy@2")


def test_trained_policy_against_untrained_broadcasts_the_untrained(make_rows, concat):
    # A trained with seeds 0 and 1; B (no train seed) is compared with each of A's seeds.
    df = concat(make_rows("A", ["t1", "t2"], 0, [1, 0], train_seed=0),
                make_rows("A", ["t1", "t2"], 0, [1, 1], train_seed=1),
                make_rows("B", ["t1", "t2"], 0, [0, 1]))
    p = paired_outcomes(df, "A", "B")
    assert "train_seed" in p.keys.columns and p.n_keys == 4
    # sorted by (task, eval_seed, sample, train_seed): t1/s0, t1/s1, t2/s0, t2/s1
    np.testing.assert_array_equal(p.a, [1, 1, 0, 1])
    np.testing.assert_array_equal(p.b, [0, 0, 1, 1])
    np.testing.assert_array_equal(p.seeds_a, [0, 1, 0, 1])
    assert np.isnan(p.seeds_b).all()
    # the same holds with the roles swapped
    q = paired_outcomes(df, "B", "A")
    np.testing.assert_array_equal(q.a, p.b)


def test_two_trained_policies_pair_seed_by_seed(make_rows, concat):
    df = concat(make_rows("A", ["t1"], 0, 1, train_seed=0), make_rows("A", ["t1"], 0, 0,
                                                                      train_seed=1),
                make_rows("B", ["t1"], 0, 1, train_seed=1), make_rows("B", ["t1"], 0, 1,
                                                                      train_seed=2))
    p = paired_outcomes(df, "A", "B")
    assert p.n_keys == 1 and p.keys["train_seed"].tolist() == [1]
    np.testing.assert_array_equal([p.a[0], p.b[0]], [0, 1])
    no_shared = df[df["train_seed"] != 1]
    with pytest.raises(HarnessError, match=r"train seeds \[0\].*train seeds \[2\]"):
        paired_outcomes(no_shared, "A", "B")


def test_policy_mixing_trained_and_untrained_rows_is_refused(make_rows, concat):
    df = concat(make_rows("A", ["t1"], 0, 1, train_seed=0), make_rows("A", ["t2"], 0, 1),
                make_rows("B", ["t1", "t2"], 0, 1))
    with pytest.raises(HarnessError, match="mixes episodes with and without a train_seed"):
        paired_outcomes(df, "A", "B")


def test_aligned_outcomes_for_three_policies(hand, make_rows, concat):
    df = concat(hand, make_rows("C", TASKS[:3], SEEDS[:3], [0, 1, 0]))
    al = aligned_outcomes(df, ["A", "B", "C"])
    assert al.values.shape == (3, 3) and al.n_tasks == 2
    np.testing.assert_array_equal(al.values, [[1, 0, 0], [0, 0, 1], [1, 1, 0]])
    with pytest.raises(HarnessError, match="at least two distinct"):
        aligned_outcomes(df, ["A"])
    assert isinstance(al.keys, pd.DataFrame)
