"""Every registered method returns finite scores of the right shape, and the LLM families
turn unparseable model output into their documented neutral scores."""

import numpy as np
import pytest

from signals.base import EvaluationPoint
from signals.families.ranking import ranking_scores
from signals.families.triage import ROLE_SCORES
from signals.registry import SignalResources, Transition, make_signal, signal_names


class ChainSimulator:
    """A deterministic 1-D walk: state k of 0..4, Right moves up, Left down, 4 is the goal."""

    class Env:
        def __init__(self, k):
            self.k = k

        def step(self, action):
            self.k = min(4, self.k + 1) if action == "Right" else max(0, self.k - 1)
            done = self.k == 4
            return type("R", (), {"observation": f"at {self.k}", "reward": float(done),
                                  "terminated": done, "truncated": False,
                                  "info": {"admissible_actions": ["Left", "Right"]}})()

        def snapshot(self):
            return self.k

        def restore(self, k):
            self.k = k

    def env_at(self, point):
        return self.Env(point.step % 4), {"admissible_actions": ["Left", "Right"]}

    def reseed(self, env, seed):
        pass


@pytest.fixture
def mixed(points):
    return points[:3] + [EvaluationPoint("sokoban@1", "6x6-b1-0000", "#P X O#",
                                         ("Up", "Down", "Left", "Right", "No-op"),
                                         episode="s", step=1, env_seed=0)]


@pytest.fixture
def resources(scripted, points, mixed):
    transitions = [Transition("frozenlake@1", p.observation, c, float(k))
                   for p in points for k, c in enumerate(p.candidates)]
    reference = {p.point_id: np.arange(len(p.candidates), dtype=float) for p in points + mixed}
    from signals.families.embedding import default_encoder

    return SignalResources(model=scripted(lambda text: "8"), reference=reference,
                           simulator=ChainSimulator(), encoder=default_encoder(),
                           transitions=transitions, seed=1)


@pytest.mark.parametrize("name", signal_names())
def test_every_method_returns_finite_scores_of_the_right_shape(name, resources, mixed):
    signal = make_signal(name, resources)
    scores = signal.score(mixed)
    assert len(scores) == len(mixed)
    for point, values in zip(mixed, scores):
        assert values.shape == (len(point.candidates),) and np.isfinite(values).all()


GARBAGE = ["", "lorem ipsum", "11", "-3", "\x00\ufffd", "score: banana", "999 1 2"]
NEUTRAL = {"judge-single": 5.0, "judge-batched": 5.0, "value-prompt": 50.0,
           "triage-generate": ROLE_SCORES["no-progress"]}


@pytest.mark.parametrize("reply", GARBAGE)
@pytest.mark.parametrize("name", sorted(NEUTRAL))
def test_unparseable_judge_output_gives_neutral_scores(name, reply, scripted, points):
    if name == "value-prompt" and reply == "11":
        reply = "101"  # 11 % is a valid answer there; 101 is out of range
    signal = make_signal(name, SignalResources(model=scripted(lambda text: reply)))
    scores = signal.score(points)
    assert all((values == NEUTRAL[name]).all() for values in scores)
    assert signal.unparsed == sum(len(p.candidates) for p in points)


RANKED = {"": [], "lorem ipsum": [], "11": [], "-3": [2], "\x00\ufffd": [], "score: banana": [],
          "999 1 2": [0, 1]}


@pytest.mark.parametrize("reply", GARBAGE)
def test_unparseable_rankings_tie_what_they_leave_out(reply, scripted, points):
    signal = make_signal("rank-list", SignalResources(model=scripted(lambda text: reply)))
    expected = {(): [2.5] * 4, (2,): [2.0, 2.0, 4.0, 2.0], (0, 1): [4.0, 3.0, 1.5, 1.5]}
    for values in signal.score(points):
        assert values.tolist() == expected[tuple(RANKED[reply])]
    assert signal.unparsed == (len(points) if not RANKED[reply] else 0)


def test_judges_read_well_formed_answers(scripted, points):
    replies = {"judge-single": "9", "value-prompt": "75 percent"}
    for name, reply in replies.items():
        scores = make_signal(name, SignalResources(model=scripted(lambda t, r=reply: r))
                             ).score(points)
        assert all((v == float(reply.split()[0])).all() for v in scores)
    batched = make_signal("judge-batched", SignalResources(
        model=scripted(lambda t: "1: 3\n2: 10\n3: x\n4: 0"))).score(points[:1])[0]
    assert batched.tolist() == [3.0, 10.0, 5.0, 0.0]
    ranked = make_signal("rank-list", SignalResources(
        model=scripted(lambda t: "3, 1"))).score(points[:1])[0]
    assert ranked.tolist() == ranking_scores([2, 0], 4).tolist() == [3.0, 1.5, 4.0, 1.5]
    role = make_signal("triage-generate", SignalResources(
        model=scripted(lambda t: "Regression."))).score(points[:1])[0]
    assert (role == ROLE_SCORES["regression"]).all()


def test_intrinsic_signals_follow_the_token_scores(scripted, points):
    model = scripted()
    resources = SignalResources(model=model)
    total = make_signal("logprob-sum", resources).score(points)
    mean = make_signal("logprob-mean", resources).score(points)
    scored = model.score([[{"role": "x", "content": "y"}]], ["Left"])[0]
    assert scored.total == pytest.approx(scored.mean * 4)
    for p, t, m in zip(points, total, mean):
        lengths = np.array([len(c) for c in p.candidates])
        np.testing.assert_allclose(t, m * lengths)
    entropy = make_signal("entropy", resources).score(points)
    normalised = make_signal("entropy-normalised", resources).score(points)
    for e, n in zip(entropy, normalised):
        np.testing.assert_allclose(n, e / -e.mean())
    verifier = make_signal("verifier", resources).score(points)
    assert all(((v > 0) & (v < 1)).all() for v in verifier)


def test_self_distillation_is_the_log_prob_shift(scripted, points):
    model = scripted()
    shift = make_signal("sd-skill", SignalResources(model=model)).score(points[:1])[0]
    from signals.families.distillation import skill_hint
    from signals.prompts import hint_prompt, state_prompt

    p = points[0]
    hinted = model.score([hint_prompt(p, skill_hint(None)(p))] * 4, list(p.candidates))
    plain = model.score([state_prompt(p)] * 4, list(p.candidates))
    np.testing.assert_allclose(shift, [h.total - q.total for h, q in zip(hinted, plain)])


def test_mc_behaviour_and_embedding_simulator_use_the_snapshot(resources, points):
    q = make_signal("mc-behaviour", resources).score(points)
    # in the chain, Right is never worse than Left for reaching the goal
    assert all(v[2] >= v[0] for v in q)
    sim = make_signal("embed-sim-next-obs", resources).score(points)
    assert all(np.isfinite(v).all() for v in sim)
