import numpy as np
import pytest
import scipy.stats

from harness.signal_eval.evaluate import (_weighted_ranks, pooled_spearman_interval,
                                          score_signals, summarise)
from signals.base import EvaluationPoint
from signals.reference import ReferenceQ
from signals.registry import SignalResources


def _setup(n_points=120, n_candidates=4, seed=0):
    rng = np.random.default_rng(seed)
    points = [EvaluationPoint("toy@1", f"t{k % 10}", "obs", tuple(f"a{j}" for j in
                                                                    range(n_candidates)),
                              episode=f"ep{k // 4}", step=k) for k in range(n_points)]
    q = tuple(rng.integers(0, 4, n_candidates).astype(float) for _ in points)
    return points, ReferenceQ("exact", q, tuple(np.zeros(n_candidates) for _ in q))


def test_reference_is_perfect_and_random_covers_chance():
    points, reference = _setup()
    resources = SignalResources(reference=reference.by_point(points), seed=5)
    scored = score_signals(points, ["reference", "random", "progress"], resources)
    summary = summarise(points, reference, scored, np.random.default_rng(0), n_resamples=1000)
    tau = summary.interval("reference", "kendall_tau")
    assert (tau.estimate, tau.low, tau.high) == (1.0, 1.0, 1.0)
    assert summary.interval("reference", "top1").estimate == 1.0
    assert summary.interval("reference", "regret").estimate == 0.0
    random_tau = summary.interval("random", "kendall_tau")
    assert random_tau.low < 0 < random_tau.high
    assert summary.interval("random", "pairwise_accuracy").low < 0.5 < summary.interval(
        "random", "pairwise_accuracy").high
    assert summary.n_informative == sum(np.ptp(v) > 0 for v in reference.q)


def test_comparisons_exclude_the_reference_and_are_holm_adjusted():
    points, reference = _setup()

    class Noisy:
        def __init__(self, name, noise):
            self.name, self.noise = name, noise

        def score(self, pts):
            rng = np.random.default_rng(len(self.name))
            return [q + self.noise * rng.normal(size=q.size) for q in reference.q]

    from harness.signal_eval.evaluate import ScoredSignal, _check_scores

    scored = [ScoredSignal(s.name, "direct", _check_scores(s.name, s.score(points), points))
              for s in (Noisy("good", 0.3), Noisy("bad", 30.0), Noisy("worse", 300.0))]
    summary = summarise(points, reference, scored, np.random.default_rng(1), n_resamples=999)
    tau = [c for c in summary.comparisons if c.metric == "kendall_tau"]
    assert {c.best for c in tau} == {"good"} and {c.signal for c in tau} == {"bad", "worse"}
    for c in tau:
        assert c.reject and c.p_holm >= c.p_value and c.effect.low > 0


def test_failing_signals_are_recorded_not_raised():
    points, reference = _setup(8)
    scored = score_signals(points, ["judge-single", "random"], SignalResources())
    assert "needs a model" in scored[0].error and scored[1].error is None


def test_weighted_ranks_equal_ranking_the_expanded_sample():
    rng = np.random.default_rng(2)
    values = rng.integers(0, 5, 12).astype(float)
    weights = rng.integers(0, 3, (6, 12)).astype(float)
    ranks = _weighted_ranks(values, weights)
    for row, w in zip(ranks, weights):
        expanded = np.repeat(values, w.astype(int))
        expected = scipy.stats.rankdata(expanded)
        positions = np.repeat(np.arange(12), w.astype(int))
        for k in np.unique(positions):
            assert row[k] == pytest.approx(expected[positions == k][0])


def test_pooled_interval_brackets_the_estimate():
    points, reference = _setup(60)
    scores = [q + np.random.default_rng(k).normal(size=q.size) for k, q in
              enumerate(reference.q)]
    interval = pooled_spearman_interval(scores, reference.q, [p.episode for p in points],
                                        np.random.default_rng(3), n_resamples=500)
    flat = scipy.stats.spearmanr(np.concatenate(scores), np.concatenate(reference.q))[0]
    assert interval.estimate == pytest.approx(flat)
    assert interval.low < interval.estimate < interval.high
