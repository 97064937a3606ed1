"""Prompts of the LLM-based families and the parsers of their answers.

Every prompt is one system message (the suite's rules) and one user message: the last
`HISTORY_TURNS` turns, the current observation, the candidates where the question needs
them, and the question. Parsers never raise: text they cannot read gives None (or a partial
answer), and each family maps that to a neutral score it documents.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from signals.base import EvaluationPoint
from signals.model import Messages

__all__ = ["HISTORY_TURNS", "MAX_OBSERVATION_CHARS", "ROLE_LABELS", "state_prompt",
           "judge_prompt", "batch_judge_prompt", "value_prompt", "ranking_prompt",
           "verifier_prompt", "role_prompt", "next_observation_prompt", "hint_prompt",
           "parse_number", "parse_batch_scores", "parse_ranking", "parse_role"]

HISTORY_TURNS = 2
MAX_OBSERVATION_CHARS = 1200
ROLE_LABELS = ("decisive", "exploration", "no-progress", "regression")
"""TRIAGE's action roles, best to worst."""

_NUMBER = re.compile(r"[-+]?\d+(?:\.\d+)?")
_LINE_SCORE = re.compile(r"^\s*\(?(\d+)\)?\s*[:.)=-]\s*([-+]?\d+(?:\.\d+)?)", re.MULTILINE)


def _clip(text: str) -> str:
    return text if len(text) <= MAX_OBSERVATION_CHARS else "..." + text[-MAX_OBSERVATION_CHARS:]


def _context(point: EvaluationPoint, extra: str = "") -> str:
    parts = []
    turns = point.history[-HISTORY_TURNS:] if HISTORY_TURNS else ()
    for observation, action in turns:
        parts.append(f"Observation:\n{_clip(observation)}\nAction: {action}")
    parts.append(f"Current observation:\n{_clip(point.observation)}")
    if extra:
        parts.append(extra)
    return "\n\n".join(parts)


def _messages(point: EvaluationPoint, user: str) -> Messages:
    system = point.instructions or "You are an agent acting in a text environment."
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def _numbered(candidates: Sequence[str]) -> str:
    return "\n".join(f"{k + 1}. {c}" for k, c in enumerate(candidates))


def state_prompt(point: EvaluationPoint, extra: str = "") -> Messages:
    """The policy's view of the state; the assistant's reply is the action."""
    actions = ", ".join(point.candidates)
    return _messages(point, _context(point, extra) + f"\n\nAvailable actions: {actions}\n"
                     "Answer with one action.")


def hint_prompt(point: EvaluationPoint, hint: str) -> Messages:
    """`state_prompt` with a hint (hindsight or skill text) placed before the question."""
    return state_prompt(point, f"Hint: {hint}")


def judge_prompt(point: EvaluationPoint, action: str) -> Messages:
    return _messages(point, _context(point) + f"\n\nProposed action: {action}\nRate how good "
                     "this action is for reaching the goal, from 0 (worst) to 10 (best). "
                     "Answer with a single integer.")


def batch_judge_prompt(point: EvaluationPoint) -> Messages:
    return _messages(point, _context(point) + "\n\nCandidate actions:\n"
                     f"{_numbered(point.candidates)}\nRate each candidate from 0 (worst) to "
                     "10 (best), one line per candidate, as `number: score`.")


def value_prompt(point: EvaluationPoint, action: str) -> Messages:
    return _messages(point, _context(point) + f"\n\nThe agent now takes the action: {action}\n"
                     "How likely is the agent to succeed from the resulting state? Answer "
                     "with a probability in percent, from 0 to 100.")


def ranking_prompt(point: EvaluationPoint) -> Messages:
    return _messages(point, _context(point) + "\n\nCandidate actions:\n"
                     f"{_numbered(point.candidates)}\nRank the candidates from best to worst. "
                     "Answer with their numbers separated by commas, for example 2, 1, 3.")


def verifier_prompt(point: EvaluationPoint, action: str) -> Messages:
    return _messages(point, _context(point) + f"\n\nProposed action: {action}\nIs this action "
                     "correct? Answer Yes or No.")


def role_prompt(point: EvaluationPoint, action: str) -> Messages:
    labels = ", ".join(ROLE_LABELS)
    return _messages(point, _context(point) + f"\n\nProposed action: {action}\nClassify the "
                     f"action's role as exactly one of: {labels}. decisive: makes clear "
                     "progress towards the goal; exploration: gathers information or "
                     "repositions; no-progress: changes nothing useful; regression: makes "
                     "the goal harder or impossible. Answer with the label only.")


def next_observation_prompt(point: EvaluationPoint, action: str) -> Messages:
    return _messages(point, _context(point) + f"\n\nThe agent takes the action: {action}\n"
                     "Write the observation that follows, in the same format, and nothing "
                     "else.")


def parse_number(text: str, low: float, high: float) -> float | None:
    """The first number in `text` if it lies in ``[low, high]``, else None."""
    match = _NUMBER.search(text or "")
    if match is None:
        return None
    value = float(match.group())
    return value if low <= value <= high else None


def parse_batch_scores(text: str, n: int, low: float = 0.0, high: float = 10.0
                       ) -> list[float | None]:
    """Scores of candidates 1..n from lines ``k: score``; None for a candidate with no (or an
    out-of-range) score. A later line for the same candidate does not override the first."""
    scores: list[float | None] = [None] * n
    for number, value in _LINE_SCORE.findall(text or ""):
        k, v = int(number) - 1, float(value)
        if 0 <= k < n and scores[k] is None and low <= v <= high:
            scores[k] = v
    return scores


def parse_ranking(text: str, n: int) -> list[int]:
    """Candidate indices (0-based) in the order the text ranks them: the numbers 1..n in
    order of first appearance; repeats and out-of-range numbers are ignored, so the result
    may be partial (or empty)."""
    order: list[int] = []
    for match in re.findall(r"\d+", text or ""):
        k = int(match) - 1
        if 0 <= k < n and k not in order:
            order.append(k)
    return order


def parse_role(text: str) -> str | None:
    """The first role label named in `text` (case and hyphens/spaces ignored), or None."""
    folded = re.sub(r"[\s_-]+", "", (text or "").lower())
    found = [(folded.find(label.replace("-", "")), label) for label in ROLE_LABELS
             if label.replace("-", "") in folded]
    return min(found)[1] if found else None
