"""Shared fixtures of the signal tests: a scripted language model (deterministic replies and
log-probabilities, so parsing paths can be driven exactly) and small evaluation points."""

import zlib

import numpy as np
import pytest

from signals.base import EvaluationPoint
from signals.model import TokenScores

FROZEN_OBS = "P___\n_O_O\n___O\nO__G\nActions: Left, Down, Right, Up"
SOKOBAN_OBS = "######\n#_P__#\n#_X__#\n#__O_#\n######\nAvailable actions: Up, Down, Left, Right, No-op"


class ScriptedModel:
    """A `LanguageModel` whose replies come from `reply(user_text)` and whose token
    log-probabilities are a fixed hash of (prompt, continuation): one token per character."""

    name = "scripted"

    def __init__(self, reply=lambda text: "7"):
        self.reply = reply
        self.calls = {"score": 0, "generate": 0}

    def score(self, prompts, continuations, *, with_entropy=False):
        self.calls["score"] += 1
        out = []
        for messages, text in zip(prompts, continuations, strict=True):
            key = repr(messages) + "\x00" + text
            values = np.array([-(zlib.crc32(f"{key}{k}".encode()) % 1000) / 100 - 0.01
                               for k in range(len(text))])
            out.append(TokenScores(values, -values / 3 if with_entropy else None))
        return out

    def generate(self, prompts, *, max_tokens, temperature=0.0, seed=0):
        self.calls["generate"] += 1
        return [self.reply(m[-1]["content"])[: max_tokens * 8] for m in prompts]


@pytest.fixture
def scripted():
    return ScriptedModel


def make_points(n=6, suite="frozenlake@1", observation=FROZEN_OBS,
                candidates=("Left", "Down", "Right", "Up")):
    return [EvaluationPoint(suite, f"4x4-{k:04d}", observation, tuple(candidates),
                            history=(("obs", "Down"),) * (k % 3), episode=f"ep{k // 2}", step=k,
                            env_seed=k, instructions="Reach the goal.",
                            metadata={"hindsight": {"future_actions": ["Down", "Right"],
                                                    "outcome": "won"}})
            for k in range(n)]


@pytest.fixture
def points():
    return make_points()


@pytest.fixture
def point_factory():
    return make_points


@pytest.fixture
def observations():
    return {"frozenlake": FROZEN_OBS, "sokoban": SOKOBAN_OBS}
