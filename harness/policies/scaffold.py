"""Agent scaffolds: episode context -> chat messages, model output -> action.

Prompt (one system and one user message, the single-prompt layout verl-agent uses):

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
action is read, so the stored action never carries them.

Token budget: `Scaffold.messages` drops the oldest history steps until the prompt fits the
budget (the model's context minus the completion's ``max_tokens``), then shortens the list
of admissible actions, then keeps only the end of the observation.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from harness.core import ConfigError, UnknownNameError
from harness.policies.base import EpisodeContext, admissible

__all__ = ["INVALID_ACTION", "OUTPUT_FORMATS", "ParsedAction", "PromptTemplate",
           "DEFAULT_TEMPLATE", "Scaffold", "parse_action", "strip_reasoning",
           "register_template", "template_for"]

INVALID_ACTION = "<invalid>"
"""Sent to the env when no action could be read from the output (no suite accepts it)."""

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


def _check_action(action: str, max_chars: int) -> ParsedAction:
    action = action.strip()
    if not action:
        return ParsedAction(None, "empty action")
    if len(action) > max_chars:
        return ParsedAction(None, f"action longer than {max_chars} characters")
    if "\n" in action or "\r" in action:
        return ParsedAction(None, "action spans several lines")
    if _CONTROL.search(action):
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


def parse_action(text: object, output_format: str = "think", *, max_chars: int = 200
                 ) -> ParsedAction:
    """Read the action from a model's output. Never raises: anything that is not exactly one
    well-formed action gives ``ParsedAction(None, reason)``. An action is non-empty,
    single-line, printable and at most `max_chars` characters (whitespace around it is
    stripped)."""
    if not isinstance(text, str):
        return ParsedAction(None, "output is not text")
    rest, error = strip_reasoning(text)
    if error:
        return ParsedAction(None, error)
    if output_format == "react":
        found = _REACT_ACTION.findall(rest)
        if not found:
            return ParsedAction(None, "no Action: line")
        if len(found) > 1:
            return ParsedAction(None, "several actions")
        return _check_action(found[0], max_chars)
    action, error = _tagged_action(rest)
    return ParsedAction(None, error) if action is None else _check_action(action, max_chars)


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


def _shorten_list(actions: Sequence[str], keep: int) -> str:
    shown = ", ".join(actions[:keep])
    return shown if keep >= len(actions) else f"{shown}, ... ({len(actions) - keep} more)"


@dataclass(frozen=True)
class Scaffold:
    """Prompt construction and output parsing for one policy."""

    output_format: str = "think"
    """``think`` or ``react``."""
    history: int = 4
    """K: earlier steps shown in the prompt (fewer when the token budget is tight)."""
    max_action_chars: int = 200

    def __post_init__(self) -> None:
        if self.output_format not in FORMAT_INSTRUCTIONS:
            raise UnknownNameError("output format", self.output_format, FORMAT_INSTRUCTIONS)
        if self.history < 0 or self.max_action_chars < 1:
            raise ConfigError("history must be >= 0 and max_action_chars >= 1")

    def parse(self, text: object) -> ParsedAction:
        return parse_action(text, self.output_format, max_chars=self.max_action_chars)

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
        user = template.user.format(history=history, step=context.step, observation=observation,
                                    admissible=listed, reminder=_REMINDERS[self.output_format])
        return [{"role": "system", "content": system}, {"role": "user", "content": user}]

    def messages(self, context: EpisodeContext, *, budget: int | None = None,
                 count_tokens: TokenCounter | None = None) -> Messages:
        """The chat messages for the current turn, fitted to `budget` prompt tokens as counted
        by `count_tokens` (no trimming beyond the history window when either is None)."""
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
            observation = "[...]" + observation[len(observation) // 2 + 5:] \
                if len(observation) > 12 else observation[1:]
            messages = self._render(context, shown, n_admissible, observation)
        return messages
