"""Agent scaffolds: episode context -> chat messages, model output -> action.

One `Scaffold` protocol (`messages`, `parse`, a serialisable `spec`) and a registry of
versioned formats named ``NAME@VERSION`` (`make_scaffold("think@1", history=4)`):

- ``think@1``: ``<think>...</think><action>...</action>`` (verl-agent's format);
- ``react@1``: ``Thought: ...`` then ``Action: ...``;
- ``bare@2``: the chat layout the bundled trainer uses: system = the suite's instructions,
  earlier (observation, action) turns as user/assistant messages, user = the observation;
  the reply is the action itself. ``bare@1`` is the same but for a defect kept for stored
  runs: with a history window `h` and `n` earlier steps, ``n < h < 2n``, it showed only the
  last ``h - n`` turns instead of all `n`.

`Scaffold.renders_turns` says whether earlier turns are chat messages of their own (``bare``):
only then can a whole-episode context (the trainer's ``context = "episode"``) grow by the
model's own tokens and give the prompt `harness run` renders.

A `ScaffoldSpec` (name, version, history window, action length limit, chat template id) is
stored with every run, every episode and every trainer checkpoint, so a checkpoint is
evaluated with the scaffold it was trained with. `register_scaffold` adds a format.

Prompt of ``think`` and ``react`` (one system and one user message, the single-prompt layout
verl-agent uses):

- system: the suite's rules and action format (`EpisodeContext.instructions`, from the
  suite's ``instructions`` attribute) and the output format's instructions;
- user: a history window of the last K steps (observation and action), the current
  observation, the admissible actions where the suite lists them, and a format reminder.

Prompt templates are registered per suite family (the suite id before ``@``) with
`register_template`; every family without its own uses `DEFAULT_TEMPLATE`.

Output formats: ``think`` (``<think>...</think><action>...</action>``, as verl-agent) and
``react`` (``Thought: ...`` then ``Action: ...``). `parse_action` never raises on any
string: output with no action, several actions, an unclosed tag, an empty, over-long or
non-printable action is *unparsed* and the policy sends `INVALID_ACTION` to the env, which
counts it as an invalid step in the episode record. Reasoning blocks are stripped before the
action is read, so the stored action never carries them. Multi-line actions (a POST with a
JSON body) are read whole when the suite declares ``multiline_actions`` (`parse(...,
multiline=True)`): the ``<action>`` tag may span lines, ``Action:`` keeps the whole block
after it, and a bare reply is kept whole; otherwise an action is one line.

Harness layers (`harness.policies.layers`) speak to the model through the context: text
added to `EpisodeContext.instructions` lands in the system message, and every scaffold shows
the turn's `EpisodeContext.notes` after the observation (`with_notes`; no notes, no change).

Token budget: `Scaffold.messages` drops the oldest history steps until the prompt fits the
budget (the model's context minus the completion's ``max_tokens``), then shortens the list
of admissible actions, then keeps only the end of the observation.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any, Protocol, runtime_checkable

from harness.core import ConfigError, UnknownNameError
from harness.policies.base import EpisodeContext, admissible

__all__ = ["INVALID_ACTION", "OUTPUT_FORMATS", "ParsedAction", "PromptTemplate",
           "DEFAULT_TEMPLATE", "Scaffold", "ScaffoldSpec", "TaggedScaffold", "BareScaffold",
           "parse_action", "parse_bare", "strip_reasoning", "register_template", "template_for",
           "register_scaffold", "make_scaffold", "scaffold_names", "MULTILINE_MAX_CHARS",
           "with_notes"]

INVALID_ACTION = "<invalid>"
"""Sent to the env when no action could be read from the output (no suite accepts it)."""

MULTILINE_MAX_CHARS = 8000
"""Action length limit for suites that take multi-line actions (a POST and its JSON body),
unless the scaffold's own limit is higher."""

Messages = list[dict[str, str]]
TokenCounter = Callable[[Messages], int]

FORMAT_INSTRUCTIONS = {
    "think": ("First think step by step inside <think> </think> tags, then give exactly one "
              "action inside <action> </action> tags, for example "
              "<think>reasoning</think><action>your action</action>."),
    "react": ("Answer in two lines: first \"Thought:\" followed by your reasoning, then "
              "\"Action:\" followed by exactly one action, for example\n"
              "Thought: reasoning\nAction: your action"),
}
OUTPUT_FORMATS = tuple(FORMAT_INSTRUCTIONS)

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\ufffd\ud800-\udfff]")
"""Control characters (C0 but tab, DEL, C1), Unicode line separators, the replacement
character of undecodable bytes, and lone surrogates."""
_CONTROL_MULTILINE = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u2028\u2029\ufffd"
                                r"\ud800-\udfff]")
"""The same, with line feed and carriage return allowed (multi-line actions)."""
_THINK = re.compile(r"<(/?)think>", re.IGNORECASE)
_ACTION_OPEN = re.compile(r"<action>", re.IGNORECASE)
_ACTION_CLOSE = re.compile(r"</action>", re.IGNORECASE)
_REACT_ACTION = re.compile(r"^[ \t]*action[ \t]*:(.*)$", re.IGNORECASE | re.MULTILINE)


@dataclass(frozen=True)
class ParsedAction:
    """The action read from a model's output, or why none could be read (`error`)."""

    action: str | None
    error: str = ""

    @property
    def ok(self) -> bool:
        return self.action is not None

    @property
    def env_action(self) -> str:
        """The text to send to the env: the action, or `INVALID_ACTION`."""
        return self.action if self.action is not None else INVALID_ACTION


def strip_reasoning(text: str) -> tuple[str, str]:
    """Remove ``<think>...</think>`` blocks (case-insensitive). A ``</think>`` with no opening
    tag ends a reasoning block that started with the output (templates that open it in the
    prompt); an unclosed ``<think>`` runs to the end. Returns (rest, error or "")."""
    tags = list(_THINK.finditer(text))
    if not tags:
        return text, ""
    pieces, position, inside = [], 0, False
    if tags[0].group(1):  # a leading </think>: the block was opened before the output
        position, tags = tags[0].end(), tags[1:]
    for tag in tags:
        closing = bool(tag.group(1))
        if not inside and not closing:
            pieces.append(text[position:tag.start()])
            inside = True
        elif inside and closing:
            position, inside = tag.end(), False
    if inside:
        return "".join(pieces), "unclosed <think>"
    pieces.append(text[position:])
    return "".join(pieces), ""


def _limit(max_chars: int, multiline: bool) -> int:
    return max(max_chars, MULTILINE_MAX_CHARS) if multiline else max_chars


def _check_action(action: str, max_chars: int, multiline: bool = False) -> ParsedAction:
    action = action.strip()
    if not action:
        return ParsedAction(None, "empty action")
    if len(action) > max_chars:
        return ParsedAction(None, f"action longer than {max_chars} characters")
    if not multiline and ("\n" in action or "\r" in action):
        return ParsedAction(None, "action spans several lines")
    if (_CONTROL_MULTILINE if multiline else _CONTROL).search(action):
        return ParsedAction(None, "non-printable characters in the action")
    return ParsedAction(action)


def _tagged_action(text: str) -> tuple[str | None, str]:
    opens = list(_ACTION_OPEN.finditer(text))
    closes = list(_ACTION_CLOSE.finditer(text))
    if not opens:
        return None, "no <action> tag"
    if len(opens) > 1 or len(closes) > 1:
        return None, "several actions"
    if not closes or closes[0].start() < opens[0].end():
        return None, "unclosed <action>"
    return text[opens[0].end():closes[0].start()], ""


def _react_action(rest: str, multiline: bool) -> tuple[str | None, str]:
    found = list(_REACT_ACTION.finditer(rest))
    if not found:
        return None, "no Action: line"
    if len(found) > 1:
        return None, "several actions"
    if multiline:  # the whole block after "Action:" (a POST line and its JSON body)
        return rest[found[0].start(1):], ""
    return found[0].group(1), ""


def parse_action(text: object, output_format: str = "think", *, max_chars: int = 200,
                 multiline: bool = False) -> ParsedAction:
    """Read the action from a model's output. Never raises: anything that is not exactly one
    well-formed action gives ``ParsedAction(None, reason)``. An action is non-empty,
    printable and at most `max_chars` characters (whitespace around it is stripped); it is
    one line unless `multiline` (then the limit is at least `MULTILINE_MAX_CHARS`)."""
    if not isinstance(text, str):
        return ParsedAction(None, "output is not text")
    if output_format == "bare":
        return parse_bare(text, max_chars=max_chars, multiline=multiline)
    rest, error = strip_reasoning(text)
    if error:
        return ParsedAction(None, error)
    if output_format == "react":
        action, error = _react_action(rest, multiline)
    else:
        action, error = _tagged_action(rest)
    if action is None:
        return ParsedAction(None, error)
    return _check_action(action, _limit(max_chars, multiline), multiline)


def parse_bare(text: object, *, max_chars: int = 200, multiline: bool = False) -> ParsedAction:
    """The action of a bare reply: its first non-empty line (the whole reply, stripped, when
    `multiline`). Never raises; an empty reply is unparsed."""
    if not isinstance(text, str):
        return ParsedAction(None, "output is not text")
    if not multiline:
        text = next((line for line in text.splitlines() if line.strip()), "")
    return _check_action(text, _limit(max_chars, multiline), multiline)


@dataclass(frozen=True)
class PromptTemplate:
    """Format strings of one suite family's prompt. `system` takes ``{instructions}`` and
    ``{format_instructions}``; `step` takes ``{step}``, ``{observation}``, ``{action}``;
    `user` takes ``{history}``, ``{step}``, ``{observation}``, ``{admissible}`` and
    ``{reminder}`` (an empty history or admissible list renders as "")."""

    system: str = "{instructions}\n\n{format_instructions}"
    history_header: str = "Your last {shown} of {total} steps:\n"
    step: str = "[Step {step}] Observation:\n{observation}\nAction: {action}\n"
    user: str = ("{history}Current observation (step {step}):\n{observation}\n"
                 "{admissible}{reminder}")
    admissible: str = "Admissible actions: {actions}\n"
    default_instructions: str = "You are an agent acting in the text environment {suite}."


DEFAULT_TEMPLATE = PromptTemplate()
_TEMPLATES: dict[str, PromptTemplate] = {}
_REMINDERS = {"think": "Reply with <think>...</think><action>...</action>.",
              "react": "Reply with Thought: ... and Action: ... lines."}


def register_template(family: str, template: PromptTemplate) -> None:
    """Use `template` for every suite whose id starts with ``family@``."""
    _TEMPLATES[family] = template


def template_for(suite_id: str) -> PromptTemplate:
    return _TEMPLATES.get(suite_id.partition("@")[0], DEFAULT_TEMPLATE)


def with_notes(observation: str, notes: Sequence[str]) -> str:
    """The observation as a scaffold shows it: `observation`, then this turn's notes from the
    policy's harness layers (`EpisodeContext.notes`), one ``Note:`` line each. Without notes
    it is `observation` itself, so a policy without layers renders the prompts it always did."""
    if not notes:
        return observation
    return observation + "\n" + "\n".join(f"Note: {note}" for note in notes)


def _shorten_list(actions: Sequence[str], keep: int) -> str:
    shown = ", ".join(actions[:keep])
    return shown if keep >= len(actions) else f"{shown}, ... ({len(actions) - keep} more)"



# ---- the scaffold protocol and its registry -------------------------------------------------

@dataclass(frozen=True)
class ScaffoldSpec:
    """How prompts were built and outputs parsed: stored with runs, episodes and checkpoints.

    `chat_template` names the chat template the model renders messages with (``model``: the
    tokenizer's own; ``compact``: the trainer's role-free template saved in the checkpoint).
    """

    name: str
    version: int = 1
    history: int = 4
    max_action_chars: int = 200
    chat_template: str = "model"

    @property
    def id(self) -> str:
        return f"{self.name}@{self.version}"

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, **asdict(self)}

    @classmethod
    def from_value(cls, value: str | Mapping[str, Any] | ScaffoldSpec) -> ScaffoldSpec:
        """A spec from ``"think@1"`` / ``"think"`` (latest version), a stored dict, or a spec.
        Dicts written before the registry (``{"name": "bare", "history": K}``) read as
        version 1."""
        if isinstance(value, ScaffoldSpec):
            return value
        if isinstance(value, str):
            name, _, version = value.partition("@")
            if name not in _SCAFFOLDS:
                raise UnknownNameError("scaffold", value, scaffold_names())
            if not version:
                return cls(name, max(_SCAFFOLDS[name]))
            if not version.isdigit() or int(version) not in _SCAFFOLDS[name]:
                raise UnknownNameError("scaffold", value, scaffold_names())
            return cls(name, int(version))
        if not isinstance(value, Mapping) or not isinstance(value.get("name"), str):
            raise ConfigError(f"a scaffold spec needs a name, got {value!r}")
        known = {"name", "version", "history", "max_action_chars", "chat_template"}
        return cls(**{k: v for k, v in value.items() if k in known})


@runtime_checkable
class Scaffold(Protocol):
    """Episode context -> chat messages; model output -> action."""

    spec: ScaffoldSpec
    renders_turns: bool
    """Earlier (observation, action) turns are user/assistant messages of their own."""

    def messages(self, context: EpisodeContext, *, budget: int | None = None,
                 count_tokens: TokenCounter | None = None) -> Messages:
        """The chat messages of the current turn, fitted to `budget` prompt tokens."""
        ...

    def parse(self, text: object, *, multiline: bool = False) -> ParsedAction:
        """The action in `text`; never raises."""
        ...


ScaffoldFactory = Callable[[ScaffoldSpec], Scaffold]
_SCAFFOLDS: dict[str, dict[int, tuple[ScaffoldFactory, str]]] = {}


def register_scaffold(name: str, version: int, factory: ScaffoldFactory,
                      description: str) -> None:
    """Register ``name@version``: `factory(spec)` builds it. A changed prompt or parser is a
    new version (stored runs keep naming the old one)."""
    _SCAFFOLDS.setdefault(name, {})[int(version)] = (factory, description)


def scaffold_names() -> dict[str, str]:
    """``name@version`` of every registered scaffold and its description."""
    return {f"{name}@{v}": description for name, versions in sorted(_SCAFFOLDS.items())
            for v, (_, description) in sorted(versions.items())}


def make_scaffold(spec: str | Mapping[str, Any] | ScaffoldSpec, **overrides: Any) -> Scaffold:
    """The scaffold of `spec` (``"bare@1"``, a stored dict, a `ScaffoldSpec`) with field
    `overrides` (``history=``, ``max_action_chars=``, ``chat_template=``)."""
    parsed = ScaffoldSpec.from_value(spec)
    parsed = replace(parsed, **{k: v for k, v in overrides.items() if v is not None})
    versions = _SCAFFOLDS.get(parsed.name)
    if not versions or parsed.version not in versions:
        raise UnknownNameError("scaffold", parsed.id, scaffold_names())
    if parsed.history < 0 or parsed.max_action_chars < 1:
        raise ConfigError("scaffold history must be >= 0 and max_action_chars >= 1")
    return versions[parsed.version][0](parsed)


def _trim_observation(observation: str) -> str:
    return "[...]" + observation[len(observation) // 2 + 5:] if len(observation) > 12 \
        else observation[1:]


class TaggedScaffold:
    """``think`` and ``react``: rules and format in the system message, a history window,
    the observation and the admissible actions in one user message."""

    renders_turns = False

    def __init__(self, output_format: str = "think", history: int = 4,
                 max_action_chars: int = 200, *, version: int = 1,
                 chat_template: str = "model"):
        if output_format not in FORMAT_INSTRUCTIONS:
            raise UnknownNameError("output format", output_format, FORMAT_INSTRUCTIONS)
        if history < 0 or max_action_chars < 1:
            raise ConfigError("history must be >= 0 and max_action_chars >= 1")
        self.output_format = output_format
        self.history, self.max_action_chars = history, max_action_chars
        self.spec = ScaffoldSpec(output_format, version, history, max_action_chars,
                                 chat_template)

    def parse(self, text: object, *, multiline: bool = False) -> ParsedAction:
        return parse_action(text, self.output_format, max_chars=self.max_action_chars,
                            multiline=multiline)

    def _render(self, context: EpisodeContext, shown: int, n_admissible: int,
                observation: str) -> Messages:
        template = template_for(context.suite_id)
        instructions = context.instructions or template.default_instructions.format(
            suite=context.suite_id)
        system = template.system.format(instructions=instructions,
                                        format_instructions=FORMAT_INSTRUCTIONS[
                                            self.output_format])
        past = context.history[len(context.history) - shown:] if shown else []
        first = len(context.history) - shown
        history = "".join(template.step.format(step=first + i, observation=obs, action=action)
                          for i, (obs, action) in enumerate(past))
        if history:
            history = template.history_header.format(shown=shown,
                                                     total=len(context.history)) + history
        actions = list(admissible(context.info))
        listed = template.admissible.format(actions=_shorten_list(actions, n_admissible)) \
            if actions else ""
        user = template.user.format(history=history, step=context.step,
                                    observation=with_notes(observation, context.notes),
                                    admissible=listed, reminder=_REMINDERS[self.output_format])
        return [{"role": "system", "content": system}, {"role": "user", "content": user}]

    def messages(self, context: EpisodeContext, *, budget: int | None = None,
                 count_tokens: TokenCounter | None = None) -> Messages:
        """The chat messages for the current turn, fitted to `budget` prompt tokens as counted
        by `count_tokens` (no trimming beyond the history window when either is None):
        older steps go first, then the admissible list, then the observation's start."""
        shown = min(self.history, len(context.history))
        n_admissible = len(admissible(context.info))
        observation = context.observation
        messages = self._render(context, shown, n_admissible, observation)
        if budget is None or count_tokens is None:
            return messages
        while count_tokens(messages) > budget and shown > 0:
            shown -= 1
            messages = self._render(context, shown, n_admissible, observation)
        while count_tokens(messages) > budget and n_admissible > 0:
            n_admissible //= 2
            messages = self._render(context, shown, n_admissible, observation)
        while count_tokens(messages) > budget and len(observation) > 1:
            observation = _trim_observation(observation)
            messages = self._render(context, shown, n_admissible, observation)
        return messages


class BareScaffold:
    """``bare``: system = the suite's instructions (omitted when empty), the last `history`
    (observation, action) turns as user/assistant messages, user = the observation; the reply
    is the action (its first non-empty line; the whole reply for multi-line suites). The
    bundled trainer's prompts, so a trained checkpoint is evaluated as it was trained.
    Version 1 keeps its window defect (module docstring) for the runs it stored."""

    renders_turns = True

    def __init__(self, history: int = 0, max_action_chars: int = 200, *, version: int = 1,
                 chat_template: str = "model"):
        if history < 0 or max_action_chars < 1:
            raise ConfigError("history must be >= 0 and max_action_chars >= 1")
        self.history, self.max_action_chars = history, max_action_chars
        self.spec = ScaffoldSpec("bare", version, history, max_action_chars, chat_template)

    def parse(self, text: object, *, multiline: bool = False) -> ParsedAction:
        return parse_bare(text, max_chars=self.max_action_chars, multiline=multiline)

    def render(self, instructions: str, history: Sequence[tuple[str, str]],
               observation: str) -> Messages:
        """The messages of `observation` after the `history` turns (all of them: the caller
        chooses the window)."""
        out = [{"role": "system", "content": instructions}] if instructions else []
        for obs, action in history:
            out += [{"role": "user", "content": obs}, {"role": "assistant", "content": action}]
        out.append({"role": "user", "content": observation})
        return out

    def window(self, history: Sequence[tuple[str, str]]) -> tuple[tuple[str, str], ...]:
        if not self.history:
            return ()
        start = len(history) - self.history
        if self.spec.version >= 2:
            start = max(0, start)
        return tuple(history[start:])

    def messages(self, context: EpisodeContext, *, budget: int | None = None,
                 count_tokens: TokenCounter | None = None) -> Messages:
        window = list(self.window(context.history))
        observation, notes = context.observation, context.notes
        messages = self.render(context.instructions, window, with_notes(observation, notes))
        if budget is None or count_tokens is None:
            return messages
        while count_tokens(messages) > budget and window:
            window = window[1:]
            messages = self.render(context.instructions, window, with_notes(observation, notes))
        while count_tokens(messages) > budget and len(observation) > 1:
            observation = _trim_observation(observation)
            messages = self.render(context.instructions, window, with_notes(observation, notes))
        return messages


register_scaffold("think", 1, lambda s: TaggedScaffold(
    "think", s.history, s.max_action_chars, version=s.version, chat_template=s.chat_template),
    "<think>reasoning</think><action>action</action> (verl-agent)")
register_scaffold("react", 1, lambda s: TaggedScaffold(
    "react", s.history, s.max_action_chars, version=s.version, chat_template=s.chat_template),
    "Thought: ... then Action: ... lines")
register_scaffold("bare", 1, lambda s: BareScaffold(
    s.history, s.max_action_chars, version=s.version, chat_template=s.chat_template),
    "bare@2 with a history-window defect, kept for the runs it stored")
register_scaffold("bare", 2, lambda s: BareScaffold(
    s.history, s.max_action_chars, version=s.version, chat_template=s.chat_template),
    "instructions, observation turns, the reply is the action (the trainer's format)")
