import numpy as np
import pytest

from harness.core import HarnessError, UnknownNameError
from harness.stats.compare import NO_MARGIN, compare_policies, format_comparison
from harness.stats.multiplicity import adjust_results

# Hand table: 4 tasks x 2 eval seeds.
#   task   A (seed 0, 1)   B (seed 0, 1)   task difference sum
#   t1     1 1             0 1             +1
#   t2     1 0             0 0             +1
#   t3     1 1             1 1              0
#   t4     0 1             0 0             +1
# mean A 6/8, mean B 3/8, difference 3/8. Discordant: A only 3, B only 0 ->
# McNemar p = 2 * (1/2)^3 = 1/4. Clustered sign flip over the 3 non-zero task sums
# (1, 1, 1): |sum| = 3 in 2 of 8 patterns -> p = 1/4.
TASKS = ["t1", "t1", "t2", "t2", "t3", "t3", "t4", "t4"]
SEEDS = [0, 1] * 4
A = [1, 1, 1, 0, 1, 1, 0, 1]
B = [0, 1, 0, 0, 1, 1, 0, 0]


@pytest.fixture
def hand(make_rows, concat):
    return concat(make_rows("A", TASKS, SEEDS, A), make_rows("B", TASKS, SEEDS, B))


def test_hand_case(hand):
    c = compare_policies(hand, "A", "B", rng=np.random.default_rng(0), n_resamples=2000)
    assert (c.n_keys, c.n_tasks) == (8, 4)
    assert (c.mean_a, c.mean_b) == (0.75, 0.375)
    assert c.difference.estimate == pytest.approx(0.375)
    assert c.difference.low <= 0.375 <= c.difference.high
    assert c.test.method == "McNemar exact" and c.test.p_value == pytest.approx(0.25)
    assert c.permutation.p_value == pytest.approx(0.25) and c.p_value == c.permutation.p_value
    assert c.clustered.estimate == pytest.approx(0.375)
    assert c.equivalence is None and c.verdict == NO_MARGIN
    assert c.model is not None and c.model.effect.estimate > 0


def test_is_reproducible_with_the_same_seed(hand):
    one = compare_policies(hand, "A", "B", rng=np.random.default_rng(5), n_resamples=500)
    two = compare_policies(hand, "A", "B", rng=np.random.default_rng(5), n_resamples=500)
    assert one == two


def test_margin_gives_a_tost_verdict(hand, make_rows, concat):
    c = compare_policies(hand, "A", "B", rng=np.random.default_rng(0), n_resamples=500,
                         margin=0.02)
    assert c.equivalence is not None and c.verdict == "not shown equivalent"
    # 30 tasks x 2 seeds, B = A except one key: task-mean differences are 0 but one 0.5;
    # mean 1/60, 90% CI about [-0.012, +0.045], inside ±0.1.
    tasks = np.repeat([f"t{i:02d}" for i in range(30)], 2)
    a = np.tile([1, 0], 30)
    b = a.copy()
    b[0] = 0
    df = concat(make_rows("A", tasks, np.tile([0, 1], 30), a),
                make_rows("B", tasks, np.tile([0, 1], 30), b))
    same = compare_policies(df, "A", "B", rng=np.random.default_rng(0), n_resamples=500,
                            margin=0.1)
    assert same.verdict == "equivalent within ±0.1" and same.equivalence.n == 30


def test_score_metric_uses_wilcoxon(hand):
    df = hand.copy()
    df["score"] = np.where(df["policy"] == "A", 0.8, 0.3) * df["success"] + 0.1
    c = compare_policies(df, "A", "B", rng=np.random.default_rng(0), metric="score",
                         n_resamples=500)
    assert c.test.method.startswith("Wilcoxon") and c.model.scale == "mean difference"


def test_model_failure_is_reported_not_raised(make_rows, concat):
    df = concat(make_rows("A", ["t1", "t2", "t3"], 0, 1), make_rows("B", ["t1", "t2", "t3"], 0,
                                                                   [1, 0, 0]))
    c = compare_policies(df, "A", "B", rng=np.random.default_rng(0), n_resamples=500)
    assert c.model is None and "succeeds on every paired key" in c.model_note
    assert "model not estimated" in format_comparison(c)


def test_constant_scores_give_a_model_not_estimable_line(hand):
    df = hand.copy()
    df["score"] = 0.5  # every score the same: statsmodels' GEE raises ValueError
    c = compare_policies(df, "A", "B", rng=np.random.default_rng(0), metric="score",
                         n_resamples=200)
    assert c.model is None and "not estimable" in c.model_note
    assert "model not estimated: the GEE model is not estimable" in format_comparison(c)


def test_identical_policies_give_an_interval_around_zero(hand):
    df = hand.copy()
    df["score"] = df["task_id"].map({"t1": 0.1, "t2": 0.4, "t3": 0.7, "t4": 0.9})
    c = compare_policies(df, "A", "B", rng=np.random.default_rng(0), metric="score",
                         n_resamples=200)  # A equals B on every key
    effect = c.model.effect
    assert effect.low <= 0.0 <= effect.high and effect.high - effect.low < 1e-5


def test_format_comparison_lists_every_finding(hand):
    text = format_comparison(compare_policies(hand, "A", "B", rng=np.random.default_rng(0),
                                              n_resamples=500, margin=0.1))
    for needle in ("A (A) vs B (B)", "8 paired keys over 4 tasks", "difference A - B",
                   "+0.3750", "McNemar exact", "p = 0.2500", "A only 3, B only 0",
                   "permutation test", "equivalence (TOST)", "not shown equivalent",
                   "GEE logit", "clustered SE"):
        assert needle in text, needle
    text = format_comparison(compare_policies(hand, "A", "B", rng=np.random.default_rng(0),
                                              n_resamples=500))
    assert NO_MARGIN in text


def test_comparisons_feed_the_multiplicity_adjustment(hand):
    cs = [compare_policies(hand, "A", "B", rng=np.random.default_rng(s), n_resamples=500)
          for s in range(3)]
    adjusted = adjust_results(cs, method="holm")
    assert [a.p_adjusted for a in adjusted] == pytest.approx([0.75, 0.75, 0.75])


def test_bad_input(hand, make_rows, concat):
    rng = np.random.default_rng(0)
    with pytest.raises(HarnessError, match="empty"):
        compare_policies(hand.iloc[0:0], "A", "B", rng=rng)
    with pytest.raises(UnknownNameError, match="unknown policy 'C'"):
        compare_policies(hand, "A", "C", rng=rng)
    disjoint = concat(make_rows("A", ["t1"], 0, 1), make_rows("B", ["t2"], 0, 1))
    with pytest.raises(HarnessError, match="share no"):
        compare_policies(disjoint, "A", "B", rng=rng)
    for margin in (0, -0.05, float("nan")):
        with pytest.raises(HarnessError, match="margin"):
            compare_policies(hand, "A", "B", rng=rng, margin=margin)
    nan_score = hand.copy()
    nan_score.loc[3, "score"] = np.nan
    with pytest.raises(HarnessError, match="NaN score"):
        compare_policies(nan_score, "A", "B", rng=rng, metric="score")
    one_task = hand[hand["task_id"] == "t1"]
    with pytest.raises(HarnessError, match="at least 2"):
        compare_policies(one_task, "A", "B", rng=rng)
