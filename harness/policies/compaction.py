"""Context compaction: when the rendered context passes a token budget, the policy summarises
the history so far and the episode continues from the summary.

One set of rules serves `harness run` (the ``compaction`` harness layer of
`harness.policies.layers`: ``SPEC?layers=compaction&compact_budget=512``) and the trainer's
whole-episode rollouts (`harness.train.rollout` with ``rollout.compact_budget``):

- A *segment* is a run of steps shown to the policy in full. Segment 0 starts at step 0;
  each compaction starts the next one at the current step.
- Before a step is chosen, the context the policy would see (the scaffold's messages of the
  segment's view: `segment_view`) is counted. When it passes the budget and the segment holds
  at least one step, the policy is asked to summarise: the same context with the summary
  prompt (`SummaryPrompt.request`) appended to the current observation (`summary_request`).
- The reply, less any reasoning tags, is the summary (`summary_text`). The next segment's view
  is the instructions followed by the summary (`SummaryPrompt.header`), no earlier turns, and
  the current observation; the policy then chooses the step's action from it.
- Every stored step logs, under ``info["layers"]["compaction"]``, the segment it was chosen
  in and, on the step whose turn compacted, ``fired`` and the summary (`compaction_log`).
  `segments_of` reads the segments and compaction events back from stored steps.

Summary prompts are registered and versioned (``summary@1``); the one used is stored with
the run (the layer's options in the policy provenance, the rollout config in a checkpoint).
Changing a prompt's text is a new version.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from harness.core import UnknownNameError
from harness.policies.base import LAYERS_INFO_KEY, EpisodeContext

__all__ = ["SummaryPrompt", "SUMMARY_PROMPTS", "summary_prompt", "Segments", "segment_view",
           "summary_request", "summary_text", "over_budget", "compaction_log", "Segment",
           "segments_of", "COMPACTION"]

COMPACTION = "compaction"
"""The layer name under which a step's compaction log is stored."""


@dataclass(frozen=True)
class SummaryPrompt:
    """What the policy is asked when its context passes the budget (`request`, appended to
    the current observation after a blank line) and how the summary is shown afterwards
    (`header`, then the summary, appended to the instructions after a blank line)."""

    id: str
    request: str
    header: str

    def to_dict(self) -> dict[str, str]:
        return {"id": self.id, "request": self.request, "header": self.header}


SUMMARY_PROMPTS: dict[str, SummaryPrompt] = {
    "summary@1": SummaryPrompt(
        "summary@1",
        "Context limit reached. Instead of an action, summarise the episode so far: the "
        "goal, what you tried, what worked and what is left to do.",
        "Summary of the earlier steps of this episode:"),
}
"""Registered summary prompts by ``name@version``."""


def summary_prompt(name: str) -> SummaryPrompt:
    """The registered prompt `name` (``summary@1``); unknown: `UnknownNameError`."""
    if name not in SUMMARY_PROMPTS:
        raise UnknownNameError("summary prompt", name, SUMMARY_PROMPTS)
    return SUMMARY_PROMPTS[name]


@dataclass
class Segments:
    """One episode's compaction memory (mutable): where the current segment starts, its
    summary ("" in segment 0) and its index."""

    start: int = 0
    summary: str = ""
    index: int = 0

    def advance(self, step: int, summary: str) -> None:
        """Start the next segment at `step` from `summary`."""
        self.start, self.summary, self.index = step, summary, self.index + 1


def segment_view(context: EpisodeContext, segments: Segments,
                 prompt: SummaryPrompt) -> EpisodeContext:
    """What the policy sees in the current segment: the steps since it started and, after the
    first compaction, the summary after the instructions."""
    if segments.start == 0 and not segments.summary:
        return context
    summary = f"{prompt.header}\n{segments.summary}"
    instructions = f"{context.instructions}\n\n{summary}" if context.instructions else summary
    return replace(context, history=list(context.history[segments.start:]),
                   instructions=instructions)


def summary_request(view: EpisodeContext, prompt: SummaryPrompt) -> EpisodeContext:
    """The context of the summary turn: `view` with the summary request after the current
    observation, no layer notes, and an RNG spawned from the episode's (so the action stream
    of the episode is the one it would have been without the summary turn)."""
    return replace(view, observation=f"{view.observation}\n\n{prompt.request}", notes=(),
                   rng=view.rng.spawn(1)[0])


def summary_text(raw_output: str, action: str = "") -> str:
    """The summary in a reply: the reply without reasoning tags, stripped; `action` when
    nothing is left (a scripted policy's reply is its action)."""
    from harness.policies.scaffold import strip_reasoning

    text, error = strip_reasoning(raw_output or "")
    text = (raw_output if error else text).strip()
    for tag in ("<action>", "</action>"):
        text = text.replace(tag, "")
    return text.strip() or action.strip()


def over_budget(context_tokens: int, budget: int | None, steps_in_segment: int) -> bool:
    """Whether to compact: the context passes `budget` (None: never) and the segment holds at
    least one step (a fresh segment has nothing to summarise)."""
    return budget is not None and context_tokens > budget and steps_in_segment > 0


def compaction_log(segment: int, context_tokens: int, *, fired: bool = False,
                   tokens: int = 0, summary: str = "", detail: str = "") -> dict[str, Any]:
    """A step's compaction entry (under ``info["layers"]["compaction"]``): the segment the
    step was chosen in, the context tokens counted before it, and on a compaction its cost
    (`tokens`: the summary turn's prompt and completion tokens), summary and detail."""
    entry: dict[str, Any] = {"fired": fired, "tokens": tokens, "segment": segment,
                             "context_tokens": context_tokens}
    if fired:
        entry.update(summary=summary, detail=detail)
    return entry


@dataclass(frozen=True)
class Segment:
    """One segment of a stored episode: its index, its steps ``[start, stop)`` and the
    summary it started from ("" for segment 0)."""

    index: int
    start: int
    stop: int
    summary: str = ""
    context_tokens: Sequence[int] = field(default=(), repr=False)


def segments_of(steps: Sequence[Any]) -> list[Segment]:
    """The segments of an episode from its stored steps (`harness.records.StepRecord`s, or
    anything with ``.info``): steps without a compaction log form one segment."""
    out: list[Segment] = []
    for t, step in enumerate(steps):
        entry = (step.info.get(LAYERS_INFO_KEY) or {}).get(COMPACTION) \
            if isinstance(step.info, Mapping) else None
        index = int(entry["segment"]) if entry else 0
        tokens = int(entry.get("context_tokens", 0)) if entry else 0
        if not out or index != out[-1].index:
            summary = str(entry.get("summary", "")) if entry else ""
            out.append(Segment(index, t, t + 1, summary, (tokens,)))
        else:
            last = out[-1]
            out[-1] = replace(last, stop=t + 1, context_tokens=(*last.context_tokens, tokens))
    return out
