"""Direct prompting: the model judges actions with a number.

- ``judge-single``: one prompt per candidate, "rate 0-10", the first integer of a greedy
  reply.
- ``judge-batched``: one prompt per state listing every candidate, one ``k: score`` line each.
- ``value-prompt``: one prompt per candidate, "how likely is success from the resulting
  state, 0-100 %" (a state-value question about the state the action leads to).

An unparseable or out-of-range answer scores the scale's midpoint (5 or 50), a neutral tie;
`unparsed` counts them in the last `score` call.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from signals.base import EvaluationPoint
from signals.families.common import fill, per_candidate, regroup
from signals.model import LanguageModel
from signals.prompts import (batch_judge_prompt, judge_prompt, parse_batch_scores,
                             parse_number, value_prompt)
from signals.registry import register_signal

__all__ = ["JudgeSignal", "BatchJudgeSignal"]


class JudgeSignal:
    def __init__(self, name: str, model: LanguageModel, prompt, high: float, max_tokens: int):
        self.name, self.model, self.prompt = name, model, prompt
        self.high, self.max_tokens = high, max_tokens
        self.unparsed = 0

    def score(self, points: Sequence[EvaluationPoint]) -> list[np.ndarray]:
        replies = self.model.generate(per_candidate(points, self.prompt),
                                      max_tokens=self.max_tokens)
        values, self.unparsed = fill([parse_number(r, 0.0, self.high) for r in replies],
                                     self.high / 2)
        return regroup(values, points)


class BatchJudgeSignal:
    name = "judge-batched"

    def __init__(self, model: LanguageModel, tokens_per_candidate: int = 8):
        self.model, self.tokens_per_candidate = model, tokens_per_candidate
        self.unparsed = 0

    def score(self, points: Sequence[EvaluationPoint]) -> list[np.ndarray]:
        longest = max((len(p.candidates) for p in points), default=1)
        replies = self.model.generate([batch_judge_prompt(p) for p in points],
                                      max_tokens=self.tokens_per_candidate * longest)
        out, self.unparsed = [], 0
        for point, reply in zip(points, replies):
            values, missing = fill(parse_batch_scores(reply, len(point.candidates)), 5.0)
            self.unparsed += missing
            out.append(np.asarray(values))
        return out


_NEEDS = ("model",)
register_signal("judge-single", "direct",
                lambda r: JudgeSignal("judge-single", r.model, judge_prompt, 10.0, 4),
                "LLM judge scores each action 0-10, one prompt per action", _NEEDS)
register_signal("judge-batched", "direct", lambda r: BatchJudgeSignal(r.model),
                "LLM judge scores all candidates 0-10 in one prompt", _NEEDS)
register_signal("value-prompt", "direct",
                lambda r: JudgeSignal("value-prompt", r.model, value_prompt, 100.0, 5),
                "LLM estimates P(success) of the state the action leads to", _NEEDS)
