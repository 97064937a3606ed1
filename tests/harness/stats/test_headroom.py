import numpy as np
import pytest

from harness.core import HarnessError, UnknownNameError
from harness.stats.headroom import sampling_headroom

# Hand table, sampled policy S: 2 eval seeds x 2 samples per task (n = 4), k = 2.
#   task  type  samples (seed0; seed1)   c   pass@2 = 1 - C(4-c, 2)/C(4, 2)   greedy G
#   a1    a     1 0 ; 1 0                2   1 - 1/6 = 5/6                     0 (0, 0)
#   a2    a     1 1 ; 1 1                4   1                                 1 (1, 1)
#   b1    b     0 0 ; 0 0                0   0                                 0 (0, 0)
#   b2    b     1 0 ; 0 0                1   1 - 3/6 = 1/2                     1/2 (1, 0)
# zero_signal (share of eval seeds whose samples agree): a1 0, a2 1, b1 1, b2 1/2.
TASKS = ["a1", "a2", "b1", "b2"]
OUTCOMES = {"a1": [1, 0, 1, 0], "a2": [1, 1, 1, 1], "b1": [0, 0, 0, 0], "b2": [1, 0, 0, 0]}
GREEDY = {"a1": [0, 0], "a2": [1, 1], "b1": [0, 0], "b2": [1, 0]}


@pytest.fixture
def frames(make_rows, concat):
    sampled = concat(*[make_rows("S", [t] * 4, [0, 0, 1, 1], OUTCOMES[t], samples=[0, 1, 0, 1],
                                 task_types=t[0]) for t in TASKS])
    greedy = concat(*[make_rows("G", [t] * 2, [0, 1], GREEDY[t], task_types=t[0])
                      for t in TASKS])
    return sampled, greedy


def test_hand_case_per_task(frames, concat):
    sampled, greedy = frames
    h = sampling_headroom(concat(sampled, greedy), sampled="S", greedy="G", k=2)
    t = h.per_task.set_index("task_id")
    np.testing.assert_allclose(t.loc[TASKS, "pass_at_k"], [5 / 6, 1, 0, 0.5])
    np.testing.assert_allclose(t.loc[TASKS, "greedy"], [0, 1, 0, 0.5])
    np.testing.assert_allclose(t.loc[TASKS, "headroom"], [5 / 6, 0, 0, 0])
    np.testing.assert_allclose(t.loc[TASKS, "zero_signal"], [0, 1, 1, 0.5])
    assert t.loc["a1", "n"] == 4 and t.loc["a1", "c"] == 2 and t.loc["a1", "greedy_n"] == 2


def test_hand_case_per_type(frames, concat):
    sampled, greedy = frames
    h = sampling_headroom(concat(sampled, greedy), sampled="S", greedy="G", k=2)
    by = h.per_type.set_index("task_type")
    np.testing.assert_allclose(by.loc[["a", "b"], "pass_at_k"], [11 / 12, 0.25])
    np.testing.assert_allclose(by.loc[["a", "b"], "greedy"], [0.5, 0.25])
    np.testing.assert_allclose(by.loc[["a", "b"], "share_with_headroom"], [0.5, 0.0])
    np.testing.assert_allclose(by.loc[["a", "b"], "zero_signal"], [0.5, 0.75])
    assert by.loc["a", "n_tasks"] == 2


def test_greedy_from_a_second_frame_uses_sample_zero(frames, make_rows, concat):
    sampled, greedy = frames
    # The separate greedy run stores the policy under the same id and has a sample 1 row
    # (ignored: a greedy decode is the same for every sample).
    other = concat(greedy.assign(policy="S"),
                   make_rows("S", ["a1"], [0], [1], samples=[1], task_types="a"))
    h = sampling_headroom(sampled, sampled="S", greedy="S", k=2, greedy_df=other)
    assert h.per_task.set_index("task_id").loc["a1", "greedy"] == 0


def test_bad_input(frames, concat):
    sampled, greedy = frames
    df = concat(sampled, greedy)
    with pytest.raises(HarnessError, match="at least k=5 samples"):
        sampling_headroom(df, sampled="S", greedy="G", k=5)
    with pytest.raises(UnknownNameError, match="unknown greedy policy 'X'"):
        sampling_headroom(df, sampled="S", greedy="X", k=2)
    with pytest.raises(HarnessError, match="empty"):
        sampling_headroom(df.iloc[0:0], sampled="S", greedy="G", k=2)
    with pytest.raises(HarnessError, match="same policy"):
        sampling_headroom(df, sampled="S", greedy="S", k=2)
    no_overlap = concat(sampled[sampled["task_id"] == "a1"], greedy[greedy["task_id"] == "b1"])
    with pytest.raises(HarnessError, match="share no task"):
        sampling_headroom(no_overlap, sampled="S", greedy="G", k=2)
    seeds = concat(sampled.assign(train_seed=sampled["train_seed"].fillna(0)),
                   sampled.assign(train_seed=sampled["train_seed"].fillna(1)), greedy)
    with pytest.raises(HarnessError, match="several training seeds"):
        sampling_headroom(seeds, sampled="S", greedy="G", k=2)
