"""The ``courage=`` option of model policies: a refusal threshold stated in the prompt.

A model policy with ``courage=C`` (0 <= C <= 1) gets one more line in its instructions (the
system message every scaffold renders from `EpisodeContext.instructions`): act only when at
least ``round(100 * (1 - C))`` percent sure, otherwise play the task's declared abstain action
(`tasks.base.Answerability.abstain_action`, e.g. OSWorld's ``FAIL``). ``courage=1`` always
answers, ``courage=0`` answers only when certain. A task that declares no answerability has no
abstain action, so it gets no line. The policy id (its spec string) and its provenance carry
the level, so every run stores it; policies that differ only in their courage form one
refusal family whose coverage-precision curve `harness report` draws (threshold = the
required confidence, ``1 - C``).
"""

from __future__ import annotations

import re
from dataclasses import replace

from harness.policies.base import EpisodeContext

__all__ = ["courage_instruction", "with_courage", "courage_threshold"]

_COURAGE = re.compile(r"([?&])courage=([^&]*)")


def courage_instruction(courage: float, abstain_action: str) -> str:
    """The prompt line of courage level `courage` for a task that abstains with
    `abstain_action`."""
    sure = round(100 * (1 - courage))
    return (f"Courage level {courage:g}: act on the task only if you are at least {sure}% "
            "sure that acting is right; if you are less sure, abstain by replying with "
            f"exactly this action: {abstain_action}")


def with_courage(context: EpisodeContext, courage: float | None) -> EpisodeContext:
    """`context` with the courage line appended to its instructions (a copy; `context`
    itself when `courage` is None or the task declares no answerability)."""
    declared = context.task.answerability
    if courage is None or declared is None:
        return context
    line = courage_instruction(courage, declared.abstain_action)
    instructions = f"{context.instructions}\n\n{line}" if context.instructions else line
    return replace(context, instructions=instructions)


def courage_threshold(policy_id: str) -> tuple[str, float] | None:
    """``(family, threshold)`` of a model policy id with a ``courage=C`` option: the id with
    C replaced by ``*``, and the confidence it requires, ``1 - C``; None for any other id."""
    if ":" not in policy_id or "?" not in policy_id:
        return None
    found = _COURAGE.search(policy_id)
    if found is None:
        return None
    try:
        courage = float(found.group(2))
    except ValueError:
        return None
    if not 0 <= courage <= 1:
        return None
    family = policy_id[:found.start()] + f"{found.group(1)}courage=*" + policy_id[found.end():]
    return family, 1 - courage
