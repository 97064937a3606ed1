"""The ``terminal@1`` scaffold: shell agents (Terminal-Bench suites, SWE-bench tools).

Output format (mini-swe-agent's, which RL terminal agents use; Terminus's JSON keystroke
format does not fit one command per turn): free reasoning, then exactly **one fenced code
block** holding the action, e.g.::

    The file list comes first.
    ```bash
    ls -la /app
    ```

- The block's text is the action, verbatim: every line between the fences (heredocs and
  indentation kept), leading and trailing whitespace stripped, as the env does.
- The block may be ``bash``, ``sh``, ``shell``, ``console``, ``zsh`` or unlabelled; a
  ``json`` block carries a tool call for suites that take them (SWE-bench's
  ``{"tool": ...}``). Blocks in other languages (``text``, ``python``) are ignored; a reply
  with only such blocks is unparsed.
- A fence is three or more backticks; the block closes at a line of at least as many
  backticks (CommonMark), so a command that itself contains ```````` is written with a longer
  fence (`render_action` does this, and `parse` of `render_action(command)` gives the command
  back).
- ``submit`` ends the episode: a block holding ``submit``, or, with no block, a last line
  that is ``submit`` (```submit``` in backticks too).
- ``<think>...</think>`` reasoning is skipped (blocks inside it do not count; tags inside a
  code block are part of the command).
- No block, several blocks, an unclosed block (a reply cut at ``max_tokens``), an empty,
  over-long or non-printable action: *unparsed*; the policy sends `INVALID_ACTION`, which the
  env rejects as an invalid turn. `parse` never raises.

Prompt (the multi-turn chat layout of terminal agents): system = the suite's instructions and
the format; the first user message is the task (the episode's first observation, always
kept); then the last `history` turns as assistant (the action, rendered in the format) / user
(its terminal output) messages; the current output last. Terminal outputs are cut in the
prompt (head and tail kept, ``[... N characters omitted ...]`` stated): the current one to
`OUTPUT_CHARS`, older ones to `HISTORY_OUTPUT_CHARS`; omitted turns are stated too.

Token budget: with a budget and a token counter, the oldest turns go first, then every
output's limit (task and current output included) halves until the prompt fits.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from harness.core import ConfigError
from harness.policies.base import EpisodeContext
from harness.policies.scaffold import (INVALID_ACTION, MULTILINE_MAX_CHARS, Messages,
                                       ParsedAction, ScaffoldSpec, TokenCounter,
                                       register_scaffold, with_notes)

__all__ = ["TerminalScaffold", "parse_command", "render_action", "truncate_output",
           "SUBMIT", "SHELL_LANGUAGES", "OUTPUT_CHARS", "HISTORY_OUTPUT_CHARS",
           "FORMAT_INSTRUCTIONS"]

SUBMIT = "submit"
SHELL_LANGUAGES = frozenset({"", "bash", "sh", "shell", "console", "zsh", "json"})
"""Info strings of a block that holds the action (``json``: a tool call)."""
OUTPUT_CHARS = 12000
"""Characters of the current terminal output (and of the task) shown in the prompt."""
HISTORY_OUTPUT_CHARS = 3000
"""Characters of each earlier terminal output shown in the prompt."""
MIN_OUTPUT_CHARS = 200
"""The token budget never cuts an output below this."""

FORMAT_INSTRUCTIONS = (
    "Reply with your reasoning, then exactly one fenced code block holding your next action: "
    "the one shell command to run, for example:\n"
    "I list the files first.\n```bash\nls -la\n```\n"
    "The command may span several lines (a heredoc, a loop); it runs as written. Where the "
    "rules above ask for a JSON tool call, put that JSON object in a ```json block instead. "
    f"Reply with a block holding only `{SUBMIT}` when the task is done. Replies with no block "
    "or with several blocks are invalid turns.")
REMINDER = "Reply with your reasoning and exactly one fenced code block (```bash)."

_OPEN = re.compile(r"^ {0,3}(`{3,})([^`]*)$")
_CLOSE = re.compile(r"^ {0,3}(`{3,})[ \t]*$")
_THINK = re.compile(r"<(/?)think>", re.IGNORECASE)
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u2028\u2029\ufffd\ud800-\udfff]")
"""Control characters but tab, line feed and carriage return; line separators; the
replacement character; lone surrogates."""
_BACKTICKS = re.compile(r"`+")


@dataclass(frozen=True)
class _Block:
    language: str
    body: str
    in_reasoning: bool


def render_action(command: str) -> str:
    """`command` as the reply format writes it: a ```bash block whose fence is longer than
    any run of backticks in the command."""
    longest = max((len(run) for run in _BACKTICKS.findall(command)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}bash\n{command}\n{fence}"


def _scan(text: str) -> tuple[list[_Block], list[str], str]:
    """The fenced blocks of `text`, its prose lines outside reasoning, and an error ("" or
    ``unclosed code block``). Think tags count in prose only."""
    lines = text.split("\n")
    blocks: list[_Block] = []
    prose: list[str] = []
    tags = [t for line in lines for t in _THINK.findall(line)]
    # a leading </think>: the reasoning block was opened in the prompt
    inside = bool(tags) and tags[0] == "/" and not _has_fence_before_think(lines)
    i = 0
    while i < len(lines):
        opening = _OPEN.match(lines[i])
        if opening and not (inside and _THINK.search(lines[i])):  # reasoning ends first
            width = len(opening.group(1))
            end = next((j for j in range(i + 1, len(lines))
                        if (c := _CLOSE.match(lines[j])) and len(c.group(1)) >= width), None)
            if end is None:
                return blocks, prose, "" if inside else "unclosed code block"
            language = (opening.group(2).split() or [""])[0].lower()
            blocks.append(_Block(language, "\n".join(lines[i + 1:end]), inside))
            i = end + 1
            continue
        outside = []
        position = 0
        for tag in _THINK.finditer(lines[i]):
            if not inside:
                outside.append(lines[i][position:tag.start()])
            inside = not tag.group(1)
            position = tag.end()
        if not inside:
            outside.append(lines[i][position:])
        prose.append("".join(outside))
        i += 1
    return blocks, prose, ""


def _has_fence_before_think(lines: list[str]) -> bool:
    """Whether a code block opens before the first think tag (then a leading ``</think>`` is
    a command's text, not the end of a reasoning block opened in the prompt)."""
    for line in lines:
        if _THINK.search(line):
            return False
        if _OPEN.match(line):
            return True
    return False


def _check(action: str, max_chars: int) -> ParsedAction:
    action = action.strip()
    if not action:
        return ParsedAction(None, "empty command")
    if len(action) > max_chars:
        return ParsedAction(None, f"command longer than {max_chars} characters")
    if _CONTROL.search(action):
        return ParsedAction(None, "non-printable characters in the command")
    if action.lower() == SUBMIT:
        return ParsedAction(SUBMIT)
    return ParsedAction(action)


def parse_command(text: object, *, max_chars: int = MULTILINE_MAX_CHARS) -> ParsedAction:
    """The action of a ``terminal`` reply (module docstring). Never raises."""
    if not isinstance(text, str):
        return ParsedAction(None, "output is not text")
    blocks, prose, error = _scan(text)
    if error:
        return ParsedAction(None, error)
    shown = [b for b in blocks if not b.in_reasoning]
    commands = [b for b in shown if b.language in SHELL_LANGUAGES]
    if len(commands) > 1:
        return ParsedAction(None, f"{len(commands)} code blocks (one command per turn)")
    if commands:
        return _check(commands[0].body, max_chars)
    last = next((line.strip().strip("`").strip() for line in reversed(prose)
                 if line.strip()), "")
    if last.lower() == SUBMIT:
        return ParsedAction(SUBMIT)
    if shown:
        languages = ", ".join(sorted({b.language for b in shown}))
        return ParsedAction(None, f"no shell code block (only {languages})")
    return ParsedAction(None, "no code block")


def truncate_output(text: str, limit: int) -> str:
    """`text` cut to about `limit` characters, head and tail kept, the cut stated."""
    if len(text) <= limit:
        return text
    half = max(limit // 2, 1)
    return (f"{text[:half]}\n[... {len(text) - 2 * half} characters omitted ...]\n"
            f"{text[-half:]}")


class TerminalScaffold:
    """``terminal@1`` (module docstring)."""

    renders_turns = False

    def __init__(self, history: int = 4, max_action_chars: int = MULTILINE_MAX_CHARS, *,
                 version: int = 1, chat_template: str = "model"):
        if history < 0 or max_action_chars < 1:
            raise ConfigError("history must be >= 0 and max_action_chars >= 1")
        self.history = history
        self.max_action_chars = max(max_action_chars, MULTILINE_MAX_CHARS)
        self.spec = ScaffoldSpec("terminal", version, history, self.max_action_chars,
                                 chat_template)

    def parse(self, text: object, *, multiline: bool = True) -> ParsedAction:
        """The action in `text` (always multi-line: `multiline` is ignored)."""
        return parse_command(text, max_chars=self.max_action_chars)

    def render(self, context: EpisodeContext, shown: int, current_chars: int,
               history_chars: int) -> Messages:
        """The messages with the last `shown` turns, outputs cut to `current_chars` (the
        task, the current output) and `history_chars` (earlier outputs)."""
        system = f"{context.instructions}\n\n{FORMAT_INSTRUCTIONS}" if context.instructions \
            else FORMAT_INSTRUCTIONS
        messages: Messages = [{"role": "system", "content": system}]
        history = context.history
        first = len(history) - shown
        pending = ""
        if first > 0:  # the task stays; the turns after it up to the window are omitted
            pending = (f"{truncate_output(history[0][0], current_chars)}\n\n"
                       f"[{first} earlier turn{'s' if first > 1 else ''} omitted]\n\n")
        for index in range(first, len(history)):
            observation, action = history[index]
            limit = current_chars if index == 0 else history_chars
            messages.append({"role": "user",
                             "content": pending + truncate_output(observation, limit)})
            messages.append({"role": "assistant", "content": _past_action(action)})
            pending = ""
        current = with_notes(truncate_output(context.observation, current_chars),
                             context.notes)
        messages.append({"role": "user", "content": f"{pending}{current}\n\n{REMINDER}"})
        return messages

    def messages(self, context: EpisodeContext, *, budget: int | None = None,
                 count_tokens: TokenCounter | None = None) -> Messages:
        """The chat messages of the current turn, fitted to `budget` prompt tokens: older
        turns go first, then every output's limit halves (not below `MIN_OUTPUT_CHARS`)."""
        shown = min(self.history, len(context.history))
        current, older = OUTPUT_CHARS, HISTORY_OUTPUT_CHARS
        messages = self.render(context, shown, current, older)
        if budget is None or count_tokens is None:
            return messages
        while count_tokens(messages) > budget and shown > 0:
            shown -= 1
            messages = self.render(context, shown, current, older)
        while count_tokens(messages) > budget and current > MIN_OUTPUT_CHARS:
            current, older = max(current // 2, MIN_OUTPUT_CHARS), max(older // 2,
                                                                      MIN_OUTPUT_CHARS)
            messages = self.render(context, shown, current, older)
        return messages


def _past_action(action: str) -> str:
    return "(no command: the reply could not be parsed)" if action == INVALID_ACTION \
        else render_action(action)


def _factory(spec: ScaffoldSpec) -> Any:
    return TerminalScaffold(spec.history, spec.max_action_chars, version=spec.version,
                            chat_template=spec.chat_template)


register_scaffold("terminal", 1, _factory,
                  "shell agents: reasoning then one ```bash block (mini-swe-agent), chat turns")
