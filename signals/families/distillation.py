"""Self-distillation (SEED / on-policy self-distillation style): how much an action's
log-probability rises when the context is augmented with privileged text.

``score = log p(action | state, hint) - log p(action | state)`` (summed over tokens), the
shift a distillation target would push the policy by.

- ``sd-hindsight``: the hint is hindsight from the behaviour episode the state came from
  (``point.metadata["hindsight"]``: the actions that followed and how the episode ended).
  Without hindsight the hint is empty text.
- ``sd-skill``: the hint is a skill text for the suite family (`SKILLS`; override with the
  option ``skill``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from signals.base import EvaluationPoint
from signals.families.common import per_candidate, regroup
from signals.model import LanguageModel
from signals.prompts import hint_prompt, state_prompt
from signals.registry import register_signal

__all__ = ["SKILLS", "DistillationSignal", "hindsight_hint", "skill_hint"]

SKILLS = {
    "frozenlake": "Walk only on frozen ice (_) towards the goal G; never step onto a hole (O). "
                  "The shortest safe path is best.",
    "sokoban": "Stand behind a box to push it towards a target (O). Never push a box into a "
               "corner or against a wall unless that cell is a target.",
}
DEFAULT_SKILL = "Make steady progress towards the goal and avoid moves that cannot be undone."
MAX_HINDSIGHT_ACTIONS = 8


def hindsight_hint(point: EvaluationPoint) -> str:
    """Text of ``point.metadata["hindsight"]`` (``future_actions``, ``outcome``), or ""."""
    hindsight = point.metadata.get("hindsight") or {}
    future = list(hindsight.get("future_actions", []))[:MAX_HINDSIGHT_ACTIONS]
    outcome = hindsight.get("outcome")
    if not future and not outcome:
        return ""
    text = f"in this episode the agent went on with: {', '.join(future) or 'nothing'}"
    return text + (f"; the episode was {outcome}." if outcome else ".")


def skill_hint(skill: str | None) -> Callable[[EvaluationPoint], str]:
    def hint(point: EvaluationPoint) -> str:
        return skill or SKILLS.get(point.suite.partition("@")[0].split("-")[0], DEFAULT_SKILL)
    return hint


class DistillationSignal:
    def __init__(self, name: str, model: LanguageModel,
                 hint: Callable[[EvaluationPoint], str]):
        self.name, self.model, self.hint = name, model, hint

    def score(self, points: Sequence[EvaluationPoint]) -> list[np.ndarray]:
        plain = per_candidate(points, lambda p, c: state_prompt(p))
        hinted = per_candidate(points, lambda p, c: hint_prompt(p, self.hint(p)))
        actions = per_candidate(points, lambda p, c: c)
        scored = self.model.score(hinted + plain, actions + actions)
        n = len(actions)
        shift = [scored[i].total - scored[n + i].total for i in range(n)]
        return regroup(shift, points)


register_signal("sd-hindsight", "self-distillation",
                lambda r: DistillationSignal("sd-hindsight", r.model, hindsight_hint),
                "log-prob shift of the action given a hindsight hint from the episode",
                ("model",))
register_signal("sd-skill", "self-distillation",
                lambda r: DistillationSignal("sd-skill", r.model,
                                             skill_hint(r.option("sd-skill", "skill", None))),
                "log-prob shift of the action given a skill text for the suite", ("model",))
