"""The benchmark's protocol: the official prompt, the three action forms, and the replies.

One action per turn: ``GET <url>``, ``POST <url>`` with a JSON body on the following lines,
or ``FINISH([answer, ...])`` (the list must be JSON). Parsing follows the official harness:
surrounding whitespace and code fences are stripped first. The replies to GET and POST are
the official harness's texts.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

PROMPT_TEMPLATE = """You are an expert in using FHIR functions to assist medical professionals. You are given a question and a set of possible functions. Based on the question, you will need to make one or more function/tool calls to achieve the purpose.

1. If you decide to invoke a GET function, you MUST put it in the format of
GET url?param_name1=param_value1&param_name2=param_value2...

2. If you decide to invoke a POST function, you MUST put it in the format of
POST url
[your payload data in JSON format]

3. If you have got answers for all the questions and finished all the requested tasks, you MUST call to finish the conversation in the format of (make sure the list is JSON loadable.)
FINISH([answer1, answer2, ...])

Your response must be in the format of one of the three cases, and you can call only one function each time. You SHOULD NOT include any other text in the response.

Here is a list of functions in JSON format that you can invoke. Note that you should use {api_base} as the api_base.
{functions}

Context: {context}
Question: {question}"""
"""MedAgentBench's task prompt (the first observation of every episode)."""

INSTRUCTIONS = (
    "You act in an electronic health record through a FHIR R4 API. Reply with exactly one "
    "action per turn and nothing else: `GET <url>?<params>`; `POST <url>` followed by the "
    "JSON payload on the next lines; or `FINISH([answer, ...])` with a JSON list when every "
    "question is answered and every requested order is placed.")
"""The protocol in one paragraph (a model policy's system prompt)."""

FINISH_HINT = ("Please call FINISH if you have got answers for all the questions and finished "
               "all the requested tasks")
POST_ACCEPTED = f"POST request accepted and executed successfully. {FINISH_HINT}"


@dataclass(frozen=True)
class Get:
    url: str


@dataclass(frozen=True)
class Post:
    url: str
    body: str


@dataclass(frozen=True)
class Finish:
    """``FINISH(...)``: `answer` is the parsed JSON (None with `error` when unparseable)."""

    raw: str
    answer: Any
    error: str | None = None


Action = Get | Post | Finish


def render_prompt(functions: list[dict[str, Any]], context: str, question: str,
                  api_base: str) -> str:
    return (PROMPT_TEMPLATE.replace("{api_base}", api_base)
            .replace("{functions}", json.dumps(functions))
            .replace("{context}", context).replace("{question}", question))


def _strip(text: str) -> str:
    return text.strip().replace("```tool_code", "").replace("```json", "").replace(
        "```", "").strip()


def parse_action(text: str) -> Action | None:
    """The action `text` names, or None when it is none of the three forms."""
    if not isinstance(text, str):
        return None
    text = _strip(text)
    if text.startswith("FINISH(") and text.endswith(")"):
        raw = text[len("FINISH("):-1]
        try:
            return Finish(raw, json.loads(raw))
        except json.JSONDecodeError as exc:
            return Finish(raw, None, f"the FINISH argument is not JSON: {exc}")
    if text.startswith("GET ") or text.startswith("GET\t"):
        url = text[3:].strip()
        return Get(url) if url and "\n" not in url else None
    if text.startswith("POST ") or text.startswith("POST\t"):
        first, _, rest = text[4:].partition("\n")
        return Post(first.strip(), rest.strip()) if first.strip() else None
    return None


def get_reply(status: int, text: str) -> str:
    if status < 400:
        return f"Here is the response from the GET request:\n{text}. {FINISH_HINT}"
    return f"Error in sending the GET request: HTTP {status}\n{text}"


def post_reply(status: int, text: str) -> str:
    if status < 400:
        return POST_ACCEPTED
    return f"POST request rejected: HTTP {status}\n{text}"


def invalid_reply(text: str) -> str:
    shown = text if isinstance(text, str) else repr(text)
    return (f"Invalid action: {shown[:120]!r}. Reply with exactly one of: GET url?params, "
            "POST url followed by a JSON body on the next lines, or FINISH([answer, ...]).")


def outside_base_reply(url: str, api_base: str) -> str:
    return f"Invalid URL {url[:200]!r}: requests must go to the api_base {api_base}"
