"""Intrinsic signals: what the policy model itself says about an action, teacher-forced.

The action is scored as the assistant's reply to `signals.prompts.state_prompt`.

- ``logprob-sum``: log p(action | state), summed over the action's tokens.
- ``logprob-mean``: the same, averaged per token (length-normalised).
- ``entropy``: minus the mean next-token entropy along the action's tokens (a confident
  model is taken to prefer the action).
- ``entropy-normalised``: minus the action's mean entropy divided by the state's average
  over its candidates (as STAPO normalises). Within a state this is a positive rescaling of
  ``entropy``, so the within-state metrics agree; the pooled Spearman differs.
- ``verifier``: ``P(Yes) / (P(Yes) + P(No))`` for "Is this action correct?".
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from signals.base import EvaluationPoint
from signals.families.common import per_candidate, regroup
from signals.model import LanguageModel, TokenScores
from signals.prompts import state_prompt, verifier_prompt
from signals.registry import MissingResourceError, register_signal

__all__ = ["LogProbSignal", "EntropySignal", "VerifierSignal", "mean_entropy"]


def _score_actions(model: LanguageModel, points: Sequence[EvaluationPoint], *,
                   with_entropy: bool = False) -> list[TokenScores]:
    prompts = per_candidate(points, lambda p, c: state_prompt(p))
    actions = per_candidate(points, lambda p, c: c)
    return model.score(prompts, actions, with_entropy=with_entropy)


class LogProbSignal:
    def __init__(self, name: str, model: LanguageModel, reduce: Callable[[TokenScores], float]):
        self.name, self.model, self.reduce = name, model, reduce

    def score(self, points: Sequence[EvaluationPoint]) -> list[np.ndarray]:
        return regroup([self.reduce(s) for s in _score_actions(self.model, points)], points)


def mean_entropy(scores: TokenScores) -> float:
    """Mean next-token entropy (nats) over the continuation's tokens."""
    if scores.entropies is None:
        raise MissingResourceError("this model backend reports no token distributions, so "
                                   "the entropy signals cannot run")
    return float(np.mean(scores.entropies)) if scores.entropies.size else 0.0


class EntropySignal:
    def __init__(self, name: str, model: LanguageModel, normalise: bool):
        self.name, self.model, self.normalise = name, model, normalise

    def score(self, points: Sequence[EvaluationPoint]) -> list[np.ndarray]:
        scored = _score_actions(self.model, points, with_entropy=True)
        entropies = regroup([mean_entropy(s) for s in scored], points)
        if not self.normalise:
            return [-h for h in entropies]
        out = []
        for h in entropies:
            average = float(h.mean()) if h.size else 0.0
            out.append(-h / average if average > 0 else -h)
        return out


class VerifierSignal:
    name = "verifier"

    def __init__(self, model: LanguageModel):
        self.model = model

    def score(self, points: Sequence[EvaluationPoint]) -> list[np.ndarray]:
        prompts = per_candidate(points, verifier_prompt)
        scored = self.model.score(prompts + prompts, ["Yes"] * len(prompts) + ["No"] * len(prompts))
        yes = np.array([s.total for s in scored[:len(prompts)]])
        no = np.array([s.total for s in scored[len(prompts):]])
        top = np.maximum(yes, no)
        p_yes = np.exp(yes - top) / (np.exp(yes - top) + np.exp(no - top))
        return regroup(p_yes.tolist(), points)


_NEEDS = ("model",)
register_signal("logprob-sum", "intrinsic",
                lambda r: LogProbSignal("logprob-sum", r.model, lambda s: s.total),
                "log-probability of the action, summed over tokens", _NEEDS)
register_signal("logprob-mean", "intrinsic",
                lambda r: LogProbSignal("logprob-mean", r.model, lambda s: s.mean),
                "log-probability of the action, mean per token", _NEEDS)
register_signal("entropy", "intrinsic", lambda r: EntropySignal("entropy", r.model, False),
                "minus the mean next-token entropy along the action", _NEEDS)
register_signal("entropy-normalised", "intrinsic",
                lambda r: EntropySignal("entropy-normalised", r.model, True),
                "minus the action's entropy over the state's average (STAPO)", _NEEDS)
register_signal("verifier", "intrinsic", lambda r: VerifierSignal(r.model),
                "P(Yes) to 'is this action correct?'", _NEEDS)
