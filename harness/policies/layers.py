"""Harness layers: what a harness adds around a policy, switchable by name.

A layer either *guides* the turn (adds text to the instructions, the system message, or a
note after the observation: `EpisodeContext.notes`) or *reviews* the action before the env
sees it. `LayeredPolicy` (`harness.policies.layered`) runs a policy's layers every turn and
logs, per layer, whether it fired and the prompt tokens it cost; the runner stores that log
in the step's info (``info["layers"]``). Layers are registered and versioned like scaffolds:

- ``repair@1`` (review): an action that is not one of the admissible actions is mapped to
  the one it clearly means (case, spacing, quotes and end punctuation ignored; one admissible
  action named in it; or one close spelling with the same numbers,
  `LayerOptions.repair_cutoff`); an unparsed
  reply is salvaged from the raw output (one admissible action named in it, or a think/react
  action). What cannot be repaired is rejected: the policy is asked again with the reason
  as a note (`LayerOptions.repair_retries` times); an action still malformed goes to the
  env as it is (the env counts it invalid). Tokens: the extra turns' prompt and completion.
- ``contract@1`` (guide): the action's constraints stated with the tool, in the
  instructions: one action per turn, on one line or not, its length limit, that only listed
  admissible actions are accepted, what an invalid action costs, and the step limit.
- ``regulation@1`` (guide): trajectory regulation. Notes when the last
  `LayerOptions.stall_patience` actions were invalid (repeated failure) or left the
  observation unchanged (stagnation), and when at most `LayerOptions.budget_warning` steps
  are left (the step budget).
- ``skills@1`` (guide): procedures retrieved from a skills store for the task
  (`harness.policies.skills`) at the first step and stated in the instructions every turn.

- ``compaction@1`` (context): runs before the others and shapes the context they see. When
  the context the policy's scaffold renders passes `LayerOptions.compact_budget` tokens, the
  policy is asked to summarise the episode so far (the versioned summary prompt
  `LayerOptions.compact_prompt`) and the episode continues from the summary
  (`harness.policies.compaction`, shared with the trainer's rollouts). Its log adds the
  step's ``segment`` and ``context_tokens``, and on a compaction the ``summary``. Tokens: the
  summary turn's prompt and completion.
"""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from harness.core import ConfigError, UnknownNameError
from harness.policies.base import Decision, EpisodeContext, admissible
from harness.policies.compaction import (Segments, compaction_log, over_budget, segment_view,
                                         summary_prompt, summary_request, summary_text)
from harness.policies.scaffold import INVALID_ACTION, parse_action, strip_reasoning
from harness.policies.skills import load_skill_store

CHARS_PER_TOKEN = 3.0
"""Characters per token of the estimate used when the policy cannot count tokens."""

__all__ = ["Guidance", "Review", "Layer", "LayerSpec", "LayerOptions", "RESERVED_LAYERS",
           "register_layer", "layer_names", "check_layer_names", "make_layer", "repair_action",
           "contract_text"]

Ask = Callable[[str], Awaitable[Decision]]
"""Asks the policy again for this turn's action, with one more note (the reason)."""
Summarise = Callable[[EpisodeContext], Awaitable[Decision]]
"""Asks the policy for one turn in the given context (the compaction layer's summary turn)."""


@dataclass(frozen=True)
class LayerOptions:
    """Harness options of a policy spec (``SPEC?layers=repair,contract&repair_retries=2``);
    every policy takes them, scripted or model-backed. Defaults are this harness's choices
    (the layer study that motivates them publishes none)."""

    layers: tuple[str, ...] = ()
    """Harness layers, comma-separated: compaction, repair, contract, regulation, skills."""
    stream: int = 0
    """The policy's sampling stream: layers never change it (a layer's ablation is paired on
    the same sampling seeds); another stream draws other samples (the repeated control arm
    of `harness ablate` uses stream=1)."""
    repair_retries: int = 1
    """repair: times an action it cannot repair is sent back to the policy."""
    repair_cutoff: float = 0.85
    """repair: least difflib similarity for mapping a misspelt action to an admissible one."""
    stall_patience: int = 2
    """regulation: consecutive invalid actions (or unchanged observations) before it warns."""
    budget_warning: int = 3
    """regulation: it warns when this many steps or fewer are left."""
    skills_store: str | None = None
    """skills: the store's TOML file; unset: the bundled store."""
    skills_k: int = 1
    """skills: procedures injected per task (at most)."""
    compact_budget: int = 4096
    """compaction: the rendered context's token budget; past it the policy summarises."""
    compact_prompt: str = "summary@1"
    """compaction: the summary prompt (`harness.policies.compaction.SUMMARY_PROMPTS`)."""
    compact_tokens: int | None = None
    """compaction: completion tokens of the summary turn (a model policy's; unset: its
    max_tokens)."""

    def check(self) -> None:
        """`ConfigError` on a value out of range."""
        for name, low in (("repair_retries", 0), ("stall_patience", 1), ("budget_warning", 0),
                          ("skills_k", 1), ("stream", 0), ("compact_budget", 1),
                          ("compact_tokens", 1)):
            if getattr(self, name) is None:
                continue
            if getattr(self, name) < low:
                raise ConfigError(f"option {name} must be >= {low}, got {getattr(self, name)}")
        if not 0 < self.repair_cutoff <= 1:
            raise ConfigError(f"option repair_cutoff must lie in (0, 1], got "
                              f"{self.repair_cutoff}")
        summary_prompt(self.compact_prompt)  # unknown names: did you mean


@dataclass(frozen=True)
class LayerSpec:
    """A layer's name, version and the options it reads (stored with the run)."""

    name: str
    version: int = 1
    options: Mapping[str, Any] = field(default_factory=dict)

    @property
    def id(self) -> str:
        return f"{self.name}@{self.version}"

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "name": self.name, "version": self.version,
                "options": dict(self.options)}


@dataclass(frozen=True)
class Guidance:
    """What a guide layer adds this turn: text for the instructions and/or a note; `detail`
    says why, for the step's log. Nothing added: the layer did not fire."""

    instructions: str = ""
    note: str = ""
    detail: str = ""

    @property
    def fired(self) -> bool:
        return bool(self.instructions or self.note)


@dataclass(frozen=True)
class Review:
    """A review layer's verdict: the decision to play, whether the layer changed or
    re-asked it, the tokens the extra turns cost and why."""

    decision: Decision
    fired: bool = False
    tokens: int = 0
    detail: str = ""


class Layer(Protocol):
    """One harness layer: `compact` the context first, `guide` before the policy acts,
    `review` after."""

    spec: LayerSpec

    async def compact(self, context: EpisodeContext, summarise: Summarise
                      ) -> tuple[EpisodeContext, dict[str, Any] | None]: ...

    def guide(self, context: EpisodeContext) -> Guidance: ...

    async def review(self, context: EpisodeContext, decision: Decision, ask: Ask) -> Review: ...


class _Base:
    """Neither compacts, guides nor reviews (subclasses do one)."""

    spec: LayerSpec

    async def compact(self, context: EpisodeContext, summarise: Summarise
                      ) -> tuple[EpisodeContext, dict[str, Any] | None]:
        return context, None

    def guide(self, context: EpisodeContext) -> Guidance:
        return Guidance()

    async def review(self, context: EpisodeContext, decision: Decision, ask: Ask) -> Review:
        return Review(decision)


# ---- repair ---------------------------------------------------------------------------------

_EDGES = re.compile(r"^[\s`'\"*]+|[\s`'\"*.!,;:]+$")
_DIGITS = re.compile(r"\d+")


def _canonical(text: str) -> str:
    return " ".join(_EDGES.sub("", text).split()).casefold()


def _named_in(text: str, allowed: Sequence[str]) -> list[str]:
    """The admissible actions named in `text` as whole words, less those inside a longer
    named one (``go to desk 1`` is not named by ``go to desk 10``)."""
    folded = " ".join(text.split()).casefold()
    found = [a for a in allowed if a.strip() and re.search(
        rf"(?<![\w]){re.escape(' '.join(a.split()).casefold())}(?![\w])", folded)]
    return [a for a in found if not any(a != b and a.casefold() in b.casefold() for b in found)]


def repair_action(action: str, raw_output: str, allowed: Sequence[str], *,
                  cutoff: float = 0.85) -> tuple[str | None, str]:
    """The admissible action `action` clearly means: ``(action, how)``, or ``(None,
    reason)``. `raw_output` is searched when `action` is `INVALID_ACTION` (an unparsed reply).
    An action already admissible comes back with ``how == ""``."""
    if action in allowed:
        return action, ""
    text = strip_reasoning(raw_output)[0] if action == INVALID_ACTION else action
    canonical: dict[str, str] = {}
    for candidate in allowed:
        canonical.setdefault(_canonical(candidate), candidate)
    if action != INVALID_ACTION and _canonical(action) in canonical:
        return canonical[_canonical(action)], "normalised"
    named = list(dict.fromkeys(_named_in(text, allowed)))
    if len(named) == 1:
        return named[0], "named in the reply"
    if len(named) > 1:
        return None, f"it names {len(named)} admissible actions"
    if action != INVALID_ACTION:  # a misspelling never changes a number (desk 3 != desk 1)
        digits = _DIGITS.findall(action)
        close = difflib.get_close_matches(
            _canonical(action), [c for c in canonical if _DIGITS.findall(c) == digits], n=2,
            cutoff=cutoff)
        if len(close) == 1:
            return canonical[close[0]], "respelt"
    what = "no action could be read" if action == INVALID_ACTION else "it is not admissible"
    return None, what


def _salvage(raw_output: str, multiline: bool) -> str | None:
    """An action of an unparsed reply in either tagged format (no admissible list)."""
    for output_format in ("think", "react"):
        parsed = parse_action(raw_output, output_format, multiline=multiline)
        if parsed.ok:
            return parsed.action
    return None


class RepairLayer(_Base):
    """``repair@1`` (module docstring)."""

    def __init__(self, options: LayerOptions):
        self.retries, self.cutoff = options.repair_retries, options.repair_cutoff
        self.spec = LayerSpec("repair", 1, {"repair_retries": self.retries,
                                            "repair_cutoff": self.cutoff})

    def _check(self, context: EpisodeContext, decision: Decision
               ) -> tuple[str | None, str]:
        allowed = admissible(context.info)
        if allowed:
            return repair_action(decision.action, decision.raw_output, allowed,
                                 cutoff=self.cutoff)
        if decision.action != INVALID_ACTION:
            return decision.action, ""
        salvaged = _salvage(decision.raw_output, context.multiline_actions)
        return (salvaged, "salvaged") if salvaged else (None, "no action could be read")

    async def review(self, context: EpisodeContext, decision: Decision, ask: Ask) -> Review:
        action, how = self._check(context, decision)
        if action is not None:
            if not how:
                return Review(decision)
            return Review(replace(decision, action=action), True, 0,
                          f"{how}: {decision.action!r} -> {action!r}")
        tokens, reason, current = 0, how, decision
        listed = " from the admissible actions" if admissible(context.info) else ""
        for attempt in range(self.retries):
            note = (f"Your action {current.action!r} was rejected before it reached the "
                    f"environment ({reason}). Reply with exactly one action{listed}.")
            retry = await ask(note)
            tokens += retry.prompt_tokens + retry.completion_tokens
            current = _merged(current, retry)
            action, how = self._check(context, retry)
            if action is not None:
                return Review(replace(current, action=action), True, tokens,
                              f"rejected, re-asked {attempt + 1}x: {action!r}")
            reason = how
        return Review(current, True, tokens, f"rejected {self.retries}x; sent as it is")


def _merged(first: Decision, retry: Decision) -> Decision:
    """`retry` carrying the token counts, latency and request retries of both turns."""
    return replace(retry, prompt_tokens=first.prompt_tokens + retry.prompt_tokens,
                   completion_tokens=first.completion_tokens + retry.completion_tokens,
                   latency_s=first.latency_s + retry.latency_s,
                   retries=first.retries + retry.retries)


# ---- contract -------------------------------------------------------------------------------

def contract_text(context: EpisodeContext, max_action_chars: int | None) -> str:
    """The action contract of the current turn (``contract@1``)."""
    shape = "it may span several lines" if context.multiline_actions else "on one line"
    limit = f", at most {max_action_chars} characters" if max_action_chars else ""
    lines = ["Action contract:",
             f"- Send exactly one action per turn ({shape}{limit})."]
    if admissible(context.info):
        lines.append("- Only the admissible actions listed with the observation are accepted; "
                     "spell them exactly as listed.")
    lines.append("- An action the environment cannot apply is invalid: it changes nothing "
                 "and still uses a step.")
    if context.step_limit:
        lines.append(f"- The episode ends after at most {context.step_limit} steps.")
    return "\n".join(lines)


class ContractLayer(_Base):
    """``contract@1`` (module docstring)."""

    def __init__(self, options: LayerOptions, max_action_chars: int | None = None):
        self.max_action_chars = max_action_chars
        self.spec = LayerSpec("contract", 1, {"max_action_chars": max_action_chars})

    def guide(self, context: EpisodeContext) -> Guidance:
        return Guidance(instructions=contract_text(context, self.max_action_chars))


# ---- trajectory regulation ------------------------------------------------------------------

@dataclass
class _Trajectory:
    """Regulation's per-episode memory (in `EpisodeContext.layer_state`)."""

    step: int = -1
    invalid_run: int = 0
    stalled_run: int = 0


class RegulationLayer(_Base):
    """``regulation@1`` (module docstring)."""

    def __init__(self, options: LayerOptions):
        self.patience, self.warning = options.stall_patience, options.budget_warning
        self.spec = LayerSpec("regulation", 1, {"stall_patience": self.patience,
                                                "budget_warning": self.warning})

    def _update(self, context: EpisodeContext) -> _Trajectory:
        memory = context.layer_state.setdefault("regulation", _Trajectory())
        if context.history and memory.step != context.step:
            invalid = bool(context.info.get("invalid", False))
            memory.invalid_run = memory.invalid_run + 1 if invalid else 0
            stalled = context.history[-1][0] == context.observation
            memory.stalled_run = memory.stalled_run + 1 if stalled else 0
        memory.step = context.step
        return memory

    def guide(self, context: EpisodeContext) -> Guidance:
        memory = self._update(context)
        notes, why = [], []
        if memory.invalid_run >= self.patience:
            notes.append(f"Your last {memory.invalid_run} actions were invalid (the environment "
                         "could not apply them); check the action format and choose another "
                         "action.")
            why.append("repeated failures")
        elif memory.stalled_run >= self.patience:
            last = context.history[-1][1]
            notes.append(f"The last {memory.stalled_run} actions left the observation unchanged; "
                         f"try an action other than {last!r}.")
            why.append("stagnation")
        if context.step_limit is not None:
            left = context.step_limit - context.step
            if left <= self.warning:
                notes.append(f"{left} step{'s' if left != 1 else ''} left of "
                             f"{context.step_limit}: finish the task.")
                why.append("step budget")
        return Guidance(note=" ".join(notes), detail=", ".join(why))


# ---- skills ---------------------------------------------------------------------------------

class SkillsLayer(_Base):
    """``skills@1`` (module docstring)."""

    def __init__(self, options: LayerOptions):
        self.store = load_skill_store(options.skills_store)
        self.k = options.skills_k
        self.spec = LayerSpec("skills", 1, {**self.store.describe(), "skills_k": self.k})

    def guide(self, context: EpisodeContext) -> Guidance:
        found = context.layer_state.get("skills")
        if found is None:
            first = context.history[0][0] if context.history else context.observation
            found = context.layer_state["skills"] = self.store.retrieve(
                context.suite_id, context.task.task_type, first, self.k)
        if not found:
            return Guidance()
        lines = ["Procedures for this kind of task (from the skills store):"]
        lines += [f"- {skill.text}" for skill in found]
        return Guidance(instructions="\n".join(lines),
                        detail=", ".join(skill.name for skill in found))


# ---- compaction -----------------------------------------------------------------------------

class CompactionLayer(_Base):
    """``compaction@1`` (module docstring; the rules: `harness.policies.compaction`)."""

    def __init__(self, options: LayerOptions, policy: Any):
        from harness.policies.scaffold import make_scaffold

        self.budget, self.prompt = options.compact_budget, summary_prompt(options.compact_prompt)
        self.scaffold = getattr(policy, "scaffold", None) or make_scaffold(
            "bare@2", history=10_000)
        """What the context is rendered with: the policy's scaffold (a scripted policy has
        none: ``bare@2`` over the whole segment)."""
        self.counter = getattr(getattr(policy, "backend", None), "count_tokens", None)
        self.tokens = options.compact_tokens
        reply = getattr(policy, "reply", None)  # a model policy: the summary's own budget
        self.reply = None if reply is None or self.tokens is None else reply
        self.spec = LayerSpec("compaction", 1, {"compact_budget": self.budget,
                                                "compact_tokens": self.tokens,
                                                "compact_prompt": self.prompt.to_dict()})

    def count(self, context: EpisodeContext) -> int:
        """Tokens of the messages the scaffold renders for `context` (untrimmed): the
        backend's count, else the `CHARS_PER_TOKEN` estimate."""
        messages = self.scaffold.messages(context)
        counted = self.counter(messages) if self.counter is not None else None
        if counted is None:
            counted = math.ceil(sum(len(m["content"]) for m in messages) / CHARS_PER_TOKEN)
        return int(counted)

    async def compact(self, context: EpisodeContext, summarise: Summarise
                      ) -> tuple[EpisodeContext, dict[str, Any] | None]:
        segments = context.layer_state.setdefault("compaction", Segments())
        view = segment_view(context, segments, self.prompt)
        counted = self.count(view)
        if not over_budget(counted, self.budget, context.step - segments.start):
            return view, compaction_log(segments.index, counted)
        request = summary_request(view, self.prompt)
        reply = await (self.reply(request, max_tokens=self.tokens) if self.reply is not None
                       else summarise(request))
        summary = summary_text(reply.raw_output, reply.action)
        first = segments.start
        segments.advance(context.step, summary)
        detail = (f"{counted} context tokens > {self.budget}: steps {first}-{context.step - 1} "
                  f"summarised")
        return segment_view(context, segments, self.prompt), compaction_log(
            segments.index, counted, fired=True, summary=summary, detail=detail,
            tokens=reply.prompt_tokens + reply.completion_tokens)


# ---- registry -------------------------------------------------------------------------------

LayerFactory = Callable[[LayerOptions, Any], Layer]
"""Builds a layer from the harness options and the policy it wraps."""

_LAYERS: dict[str, tuple[LayerFactory, str]] = {}
RESERVED_LAYERS: dict[str, str] = {}
"""Layer names kept for layers still to come, with the reason they cannot be used."""


def register_layer(name: str, factory: LayerFactory, description: str) -> None:
    """Register a layer; the registration order is the order layers run in (and are
    written in policy ids)."""
    _LAYERS[name] = (factory, description)


def layer_names() -> dict[str, str]:
    """Registered layer names (in running order) and their descriptions."""
    return {name: description for name, (_, description) in _LAYERS.items()}


def check_layer_names(names: Sequence[str]) -> tuple[str, ...]:
    """`names` in running order, each once; an unknown name is an `UnknownNameError` with
    "did you mean", a reserved one a `ConfigError` saying why."""
    for name in names:
        if name in RESERVED_LAYERS:
            raise ConfigError(f"harness layer {name!r}: {RESERVED_LAYERS[name]}")
        if name not in _LAYERS:
            raise UnknownNameError("harness layer", name, _LAYERS)
    return tuple(name for name in _LAYERS if name in set(names))


def make_layer(name: str, options: LayerOptions, policy: Any) -> Layer:
    """Layer `name` for `policy` (the wrapped policy) with `options`."""
    check_layer_names([name])
    return _LAYERS[name][0](options, policy)


def _max_action_chars(policy: Any) -> int | None:
    spec = getattr(getattr(policy, "scaffold", None), "spec", None)
    return getattr(spec, "max_action_chars", None)


register_layer("compaction", CompactionLayer,
               "summarise the history when the rendered context passes a token budget")
register_layer("repair", lambda options, policy: RepairLayer(options),
               "repair or reject malformed actions before the environment sees them")
register_layer("contract", lambda options, policy: ContractLayer(
    options, _max_action_chars(policy)), "the action's constraints stated with the tool")
register_layer("regulation", lambda options, policy: RegulationLayer(options),
               "notes on repeated failures, stagnation and the step budget")
register_layer("skills", lambda options, policy: SkillsLayer(options),
               "procedures retrieved from a skills store, in the instructions")
