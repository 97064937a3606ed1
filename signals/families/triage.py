"""Role-typed judge (as TRIAGE does): the model labels the action's role and fixed constants
map roles to scores.

Roles and constants (`ROLE_SCORES`): decisive 1.0, exploration 0.25, no-progress 0.0,
regression -1.0.

- ``triage-generate``: the first role named in a greedy reply; an unparseable reply counts
  as no-progress (0.0), and `unparsed` counts them.
- ``triage-logprob``: the expected constant under the model's distribution over the four
  labels (softmax of each label's teacher-forced log-probability): never unparseable.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from signals.base import EvaluationPoint
from signals.families.common import per_candidate, regroup
from signals.model import LanguageModel
from signals.prompts import ROLE_LABELS, parse_role, role_prompt
from signals.registry import register_signal

__all__ = ["ROLE_SCORES", "RoleJudgeSignal", "RoleProbabilitySignal"]

ROLE_SCORES = {"decisive": 1.0, "exploration": 0.25, "no-progress": 0.0, "regression": -1.0}
UNPARSED_ROLE = "no-progress"


class RoleJudgeSignal:
    name = "triage-generate"

    def __init__(self, model: LanguageModel, max_tokens: int = 6):
        self.model, self.max_tokens = model, max_tokens
        self.unparsed = 0

    def score(self, points: Sequence[EvaluationPoint]) -> list[np.ndarray]:
        replies = self.model.generate(per_candidate(points, role_prompt),
                                      max_tokens=self.max_tokens)
        roles = [parse_role(r) for r in replies]
        self.unparsed = sum(role is None for role in roles)
        return regroup([ROLE_SCORES[role or UNPARSED_ROLE] for role in roles], points)


class RoleProbabilitySignal:
    name = "triage-logprob"

    def __init__(self, model: LanguageModel):
        self.model = model

    def score(self, points: Sequence[EvaluationPoint]) -> list[np.ndarray]:
        prompts = per_candidate(points, role_prompt)
        n = len(prompts)
        scored = self.model.score([p for _ in ROLE_LABELS for p in prompts],
                                  [label for label in ROLE_LABELS for _ in range(n)])
        logp = np.array([s.total for s in scored]).reshape(len(ROLE_LABELS), n)
        weights = np.exp(logp - logp.max(axis=0))
        weights /= weights.sum(axis=0)
        constants = np.array([ROLE_SCORES[label] for label in ROLE_LABELS])
        return regroup((constants @ weights).tolist(), points)


register_signal("triage-generate", "role-judge", lambda r: RoleJudgeSignal(r.model),
                "LLM labels the action's role; fixed constants map roles to scores",
                ("model",))
register_signal("triage-logprob", "role-judge", lambda r: RoleProbabilitySignal(r.model),
                "expected role constant under the label log-probabilities", ("model",))
