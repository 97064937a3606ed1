from dataclasses import replace

import numpy as np
import pytest

from harness.config import RunConfig
from harness.runner import run
from harness.signal_eval.points import NoPointsError, collect_points, returns_to_go
from harness.signal_eval.simulator import ReplayError, SuiteSimulator
from harness.store import Store
from signals.base import point_from_dict
from tasks import get_suite


@pytest.fixture(scope="module")
def behaviour(tmp_path_factory):
    db = str(tmp_path_factory.mktemp("points") / "b.db")
    summary = run(RunConfig(policies=("random",), suites=("sokoban@1",), n_tasks=4,
                            eval_seeds=(0, 1, 2), db=db))
    return db, summary.run_id


def test_points_replay_exactly_and_carry_what_signals_need(behaviour):
    db, run_id = behaviour
    suite = get_suite("sokoban@1")
    simulator = SuiteSimulator(suite)
    with Store(db) as store:
        first = collect_points(store, suite, run_id, n_points=30, seed=1, simulator=simulator)
        again = collect_points(store, suite, run_id, n_points=30, seed=1)
    assert first.points == again.points and first.set_id == again.set_id
    assert 0 < len(first.points) <= 30
    for point in first.points:
        env, info = simulator.env_at(point)  # replays and checks the stored observation
        assert point.candidates == tuple(info["admissible_actions"])
        assert point.metadata["hindsight"]["future_actions"]
        assert point.instructions == suite.instructions and point.env_seed is not None
        assert point_from_dict(point.to_dict()) == point
    fit_obs = {t.observation for t in first.transitions}
    assert first.transitions and len(fit_obs) > 1
    point_episodes = {p.episode for p in first.points}
    assert len(point_episodes) > 1


def test_critic_episodes_are_disjoint_from_point_episodes(behaviour):
    db, run_id = behaviour
    suite = get_suite("sokoban@1")
    with Store(db) as store:
        full = collect_points(store, suite, run_id, n_points=10_000, critic_fraction=0.0)
        split = collect_points(store, suite, run_id, n_points=10_000, critic_fraction=0.5)
    episodes = {p.episode for p in full.points}
    used = {p.episode for p in split.points}
    steps_by_episode = {}
    for p in full.points:
        steps_by_episode.setdefault(p.episode, []).append(p)
    held_out = episodes - used
    assert held_out and used
    # the critic's transitions are exactly the held-out episodes' steps
    assert len(split.transitions) == sum(len(steps_by_episode[e]) for e in held_out)


def test_a_history_that_does_not_replay_is_an_error(behaviour):
    db, run_id = behaviour
    suite = get_suite("sokoban@1")
    with Store(db) as store:
        point = collect_points(store, suite, run_id, n_points=1).points[0]
    wrong = replace(point, observation=point.observation + " ", step=point.step + 1000)
    with pytest.raises(ReplayError, match="did not reproduce"):
        SuiteSimulator(suite).env_at(wrong)


def test_no_episodes_is_one_clear_error(tmp_path):
    with Store(tmp_path / "empty.db") as store, pytest.raises(NoPointsError):
        collect_points(store, get_suite("frozenlake@1"), "nothing", n_points=5)


def test_returns_to_go_by_hand():
    np.testing.assert_allclose(returns_to_go(np.array([0.0, 0.0, 1.0]), 0.5), [0.25, 0.5, 1.0])


class _Replies:
    name = "replies"

    def __init__(self, replies):
        self.replies = replies

    def generate(self, prompts, *, max_tokens, temperature=0.0, seed=0):
        return [self.replies[k % len(self.replies)] for k in range(len(prompts))]


def test_sampled_candidates_map_to_admissible_actions(behaviour):
    from harness.signal_eval.points import sample_candidates

    db, run_id = behaviour
    with Store(db) as store:
        points = collect_points(store, get_suite("sokoban@1"), run_id, n_points=3).points
    model = _Replies([" up", "LEFT", "jump", "up", "Left", "up"])
    sampled = sample_candidates(points, model, 3)
    assert [p.candidates for p in sampled] == [("Up", "Left")] * 3
    raw = sample_candidates(points, model, 3, admissible_only=False)
    assert raw[0].candidates == ("Up", "Left", "jump")
    assert sample_candidates(points, _Replies(["up"]), 2) == ()


@pytest.mark.slow
def test_the_pipeline_scores_sampled_candidates_with_a_monte_carlo_reference(
        behaviour, local_model, tmp_path):
    from harness.signal_eval.pipeline import SignalsConfig, run_signals

    db, run_id = behaviour
    config = SignalsConfig(suite="sokoban", points=3, reference="mc", run_id=run_id, db=db,
                           signals=("random", "reference", "logprob-sum"), rollouts=4,
                           horizon=20, candidates="sampled:3", resamples=100)
    outcome = run_signals(config, model=local_model)
    assert outcome.point_set.points and all(
        p.metadata["candidates"] == "sampled:3" for p in outcome.point_set.points)
    assert all(s.error is None for s in outcome.scored)
    assert outcome.set_id.endswith("-sampled3-mc")
