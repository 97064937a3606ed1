"""The official harness's protocol (suites ``medagentbench-v1@2`` and ``-v2@2``).

As the benchmark's own task runner (``src/server/tasks/medagentbench/__init__.py`` of
stanfordmlgroup/MedAgentBench, commit 8983d6e) plays an episode, at most 8 rounds:

- the agent's turn is cleaned (surrounding whitespace, then every `` ```tool_code `` and
  `` ``` `` removed, whitespace stripped again) and classified by its first characters;
- ``GET ...``: the rest of the turn, stripped, plus ``&_format=json`` is requested; the reply
  quotes the response text, or the error;
- ``POST ...``: the lines after the first must parse as JSON; the reply is "POST request
  accepted and executed successfully ..." but **nothing is sent to the server**; otherwise
  "Invalid POST request";
- ``FINISH(...)``: the result is the text between ``FINISH(`` and the turn's last character;
  the episode ends and is graded;
- anything else ends the episode ungraded (incorrect), as does the round limit.

The grader reads the transcript: the agent's turns as written (not cleaned) and the replies.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from http import HTTPStatus
from typing import NamedTuple

from tasks.medagentbench.protocol import FINISH_HINT, POST_ACCEPTED

MAX_ROUNDS = 8
"""``max_round`` of the official task configuration (configs/tasks/medagentbench.yaml)."""
FORMAT_SUFFIX = "&_format=json"
INVALID_POST = "Invalid POST request"
ENDED_INVALID = ("Invalid action: a turn must start with GET, POST or FINISH(. The episode "
                 "ends here (as in the official harness).")


class Turn(NamedTuple):
    """One message of the transcript: ``role`` is ``"user"`` (prompt, replies) or ``"agent"``."""

    role: str
    content: str


@dataclass(frozen=True)
class OfficialAction:
    """A classified agent turn: `kind` is ``get``/``post``/``finish``/``invalid``.

    `url` is the GET URL as written (without the ``&_format=json`` suffix) or the POST's first
    line after ``POST``; `body_ok` whether a POST's body parses as JSON; `result` the FINISH
    argument text (not parsed).
    """

    kind: str
    url: str = ""
    body: str = ""
    body_ok: bool = False
    result: str | None = None


def clean(text: str) -> str:
    """The official cleaning of a turn (``` json fences are *not* special there)."""
    return text.strip().replace("```tool_code", "").replace("```", "").strip()


def classify(text: str) -> OfficialAction:
    """What the official harness makes of one agent turn."""
    r = clean(text) if isinstance(text, str) else ""
    if r.startswith("GET"):
        return OfficialAction("get", url=r[3:].strip())
    if r.startswith("POST"):
        lines = r.split("\n")
        body = "\n".join(lines[1:])
        try:
            json.loads(body)
            ok = True
        except Exception:  # noqa: BLE001 - the official harness catches everything here
            ok = False
        return OfficialAction("post", url=lines[0][4:].strip(), body=body, body_ok=ok)
    if r.startswith("FINISH("):
        return OfficialAction("finish", result=r[len("FINISH("):-1])
    return OfficialAction("invalid")


def get_reply(status: int, text: str, url: str) -> str:
    """The reply to a GET: the response text, or the error as ``requests`` words it."""
    if status < 400:
        return f"Here is the response from the GET request:\n{text}. {FINISH_HINT}"
    kind = "Client" if status < 500 else "Server"
    try:
        reason = HTTPStatus(status).phrase
    except ValueError:
        reason = "Error"
    return f"Error in sending the GET request: {status} {kind} Error: {reason} for url: {url}"


def unreachable_reply(url: str) -> str:
    """The reply to a GET of a URL outside the api_base (nothing else is reachable here)."""
    return (f"Error in sending the GET request: cannot connect to {url[:200]!r}: only the "
            "api_base is reachable")


def post_reply(body_ok: bool) -> str:
    return POST_ACCEPTED if body_ok else INVALID_POST


__all__ = ["ENDED_INVALID", "FORMAT_SUFFIX", "INVALID_POST", "MAX_ROUNDS", "OfficialAction",
           "Turn", "classify", "clean", "get_reply", "post_reply", "unreachable_reply"]
