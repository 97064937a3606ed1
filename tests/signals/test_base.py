import numpy as np

from signals import EvaluationPoint, Signal


class _Length:
    name = "length"

    def score(self, points):
        return [np.array([float(len(c)) for c in p.candidates]) for p in points]


def test_a_signal_satisfies_the_protocol_and_scores_each_candidate():
    point = EvaluationPoint("frozenlake@1", "4x4-0000", "P_G", ("Left", "Right", "Up"))
    signal = _Length()
    assert isinstance(signal, Signal)
    scores = signal.score([point])
    assert scores[0].shape == (3,) and scores[0].tolist() == [4.0, 5.0, 2.0]
    assert not isinstance(object(), Signal)
