"""Ranking: the model orders the candidate list.

``rank-list``: one prompt per state listing the candidates; the reply's numbers, in order of
first appearance, rank them. A candidate at position ``k`` (0-based) of ``n`` scores
``n - k``; candidates the reply leaves out share the mean score of the positions left, so an
unparseable reply ties every candidate. `unparsed` counts replies that ranked nothing.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from signals.base import EvaluationPoint
from signals.model import LanguageModel
from signals.prompts import parse_ranking, ranking_prompt
from signals.registry import register_signal

__all__ = ["RankingSignal", "ranking_scores"]


def ranking_scores(order: Sequence[int], n: int) -> np.ndarray:
    """Scores, shape ``(n,)``, of a (possibly partial) ranking `order` of ``range(n)``."""
    scores = np.empty(n)
    ranked = list(order)
    for position, k in enumerate(ranked):
        scores[k] = n - position
    left = [k for k in range(n) if k not in ranked]
    if left:
        scores[left] = np.mean([n - p for p in range(len(ranked), n)])
    return scores


class RankingSignal:
    name = "rank-list"

    def __init__(self, model: LanguageModel, tokens_per_candidate: int = 4):
        self.model, self.tokens_per_candidate = model, tokens_per_candidate
        self.unparsed = 0

    def score(self, points: Sequence[EvaluationPoint]) -> list[np.ndarray]:
        longest = max((len(p.candidates) for p in points), default=1)
        replies = self.model.generate([ranking_prompt(p) for p in points],
                                      max_tokens=self.tokens_per_candidate * longest)
        out, self.unparsed = [], 0
        for point, reply in zip(points, replies):
            order = parse_ranking(reply, len(point.candidates))
            self.unparsed += not order
            out.append(ranking_scores(order, len(point.candidates)))
        return out


register_signal("rank-list", "ranking", lambda r: RankingSignal(r.model),
                "LLM ranks the candidate list best to worst", ("model",))
