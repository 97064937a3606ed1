"""The simulated user of a τ-bench conversation, chosen by a *user spec*.

- ``scripted`` (`ScriptedUser`): deterministic, no model. It opens with the task's
  instruction told in the first person, answers the agent's questions by rules from the
  instruction and the user's record (identity, order or reservation ids, payment method,
  reason), consents to a transaction only when the agent's message names what one of the
  task's gold transactions changes (its order/reservation id, its items or flights) and
  refuses otherwise, and ends (``###STOP###``) when the agent closes the conversation or after
  `ScriptedUser.max_turns` replies. Phrasing varies with the episode's seed only.
- ``openai:MODEL@URL`` (`ModelUser`): any OpenAI-compatible chat endpoint (vLLM, SGLang,
  ``harness serve``, OpenAI) plays the user from a system prompt stating the instruction and
  upstream's user rules (one line at a time, reveal only what is needed, never invent ids,
  ``###STOP###`` when satisfied); temperature 0 and the episode seed are sent.

`parse_user_spec` turns a spec into a `UserSpec`; `make_user` builds the simulator.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from harness.core import ConfigError, HarnessError, UnknownNameError, make_rng
from tasks.taubench.data import TaskRecord

__all__ = ["STOP", "UserSpec", "UserSimulator", "ScriptedUser", "ModelUser", "parse_user_spec",
           "make_user", "USER_KINDS", "USER_ENV"]

STOP = "###STOP###"
USER_ENV = "TAUBENCH_USER"
"""The user spec the registered suites use (default ``scripted``)."""
USER_KINDS = ("scripted", "openai")
FIRST_AGENT_MESSAGE = "Hi! How can I help you today?"


@dataclass(frozen=True)
class UserSpec:
    """Which simulator plays the user: ``kind`` (`USER_KINDS`), and for a model its name and
    endpoint."""

    kind: str
    model: str = ""
    base_url: str = ""

    def __str__(self) -> str:
        return self.kind if self.kind == "scripted" else f"{self.kind}:{self.model}@{self.base_url}"

    @property
    def comparability_note(self) -> str | None:
        """Why episodes with this user do not compare with published τ-bench scores (upstream
        simulates the user with GPT-4o), or None when the user model is upstream's."""
        if self.kind == "scripted":
            return "scripted user simulator (upstream's user is GPT-4o)"
        if self.model.lower().startswith("gpt-4o"):
            return None
        return f"user simulator {self.model} (upstream's user is GPT-4o)"


def parse_user_spec(spec: str) -> UserSpec:
    """``scripted`` or ``openai:MODEL@URL``; anything else is one clear error."""
    kind, _, rest = spec.strip().partition(":")
    if kind not in USER_KINDS:
        raise UnknownNameError("τ-bench user simulator", spec, [*USER_KINDS, "openai:MODEL@URL"])
    if kind == "scripted":
        if rest:
            raise ConfigError(f"user spec {spec!r}: 'scripted' takes no arguments")
        return UserSpec("scripted")
    model, at, url = rest.rpartition("@")
    if not at or not model or not url.startswith(("http://", "https://")):
        raise ConfigError(f"user spec {spec!r}: expected openai:MODEL@URL, e.g. "
                          f"openai:qwen2.5-7b@http://127.0.0.1:8000/v1")
    return UserSpec("openai", model, url.rstrip("/"))


def default_user_spec() -> UserSpec:
    return parse_user_spec(os.environ.get(USER_ENV) or "scripted")


class UserSimulator(Protocol):
    """The user side of one conversation."""

    def reset(self, task: TaskRecord, record: dict[str, Any], seed: int) -> str:
        """Start a conversation; returns the user's first message."""

    def reply(self, agent_message: str) -> str:
        """The user's answer to the agent's message (contains `STOP` to end)."""

    def state(self) -> Any:
        """A copy of the conversation state (for snapshot/restore)."""

    def set_state(self, state: Any) -> None: ...


def make_user(spec: UserSpec, write_tools: frozenset[str]) -> UserSimulator:
    if spec.kind == "scripted":
        return ScriptedUser(write_tools)
    return ModelUser(spec)


# ---------------------------------------------------------------------------------------------
# The scripted user

_PRONOUNS = ((r"\bYou are\b", "I am"), (r"\byou are\b", "I am"), (r"\bYou're\b", "I'm"),
             (r"\byou're\b", "I'm"), (r"\bYour\b", "My"), (r"\byour\b", "my"),
             (r"\byourself\b", "myself"), (r"\bYou\b", "I"), (r"\byou\b", "me"))
_GREETINGS = ("Hi!", "Hello.", "Hi there.")
_YES = ("Yes, please go ahead.", "Yes, I confirm.", "Yes.")
_NO = ("No, that is not what I want.", "No, please don't do that.")
_RESTATE = ("To repeat what I need: {request}", "As I said: {request}")
_CLOSINGS = ("anything else", "have a great day", "have a nice day", "goodbye", "good bye")
_ASKS_CONSENT = ("confirm", "proceed", "would you like me to", "shall i", "should i",
                 "(yes/no)", "go ahead")
_ID_FIELDS = ("order_id", "reservation_id", "item_ids", "new_item_ids", "flights", "zip",
              "address1", "passengers", "amount", "total_baggages")


def first_person(instruction: str) -> str:
    """The instruction told by the user: second person turned into first person."""
    text = instruction
    for pattern, replacement in _PRONOUNS:
        text = re.sub(pattern, replacement, text)
    return text


def _markers(arguments: dict[str, Any]) -> list[str]:
    """Strings that identify what a gold transaction changes (ids, flights, zip, ...)."""
    found: list[str] = []
    for name in _ID_FIELDS:
        value = arguments.get(name)
        if value is None:
            continue
        values = value if isinstance(value, list) else [value]
        for item in values:
            if isinstance(item, dict):
                found.extend(str(v) for k, v in item.items() if k in ("flight_number", "first_name"))
            else:
                found.append(str(item))
    return [m for m in found if m]


class ScriptedUser:
    """The rule-based user (module docstring). Deterministic given (task, seed)."""

    max_turns = 12
    """Replies after which the user ends the conversation."""

    def __init__(self, write_tools: frozenset[str]):
        self.write_tools = write_tools
        self._task: TaskRecord | None = None
        self._record: dict[str, Any] = {}
        self._rng: np.random.Generator = make_rng("taubench-user", 0)
        self._turns = 0
        self._consented: list[int] = []

    def reset(self, task: TaskRecord, record: dict[str, Any], seed: int) -> str:
        self._task, self._record = task, record
        self._rng = make_rng("taubench-user", task.id, seed)
        self._turns, self._consented = 0, []
        return f"{self._pick(_GREETINGS)} {first_person(task.instruction)}"

    def _pick(self, options: tuple[str, ...]) -> str:
        return options[int(self._rng.integers(len(options)))]

    def state(self) -> Any:
        return (self._rng.bit_generator.state, self._turns, list(self._consented))

    def set_state(self, state: Any) -> None:
        rng_state, self._turns, consented = state
        self._rng.bit_generator.state = rng_state
        self._consented = list(consented)

    def reply(self, agent_message: str) -> str:
        if self._task is None:
            raise HarnessError("the scripted user replied before reset()")
        self._turns += 1
        text = agent_message.lower()
        if self._turns > self.max_turns:
            return STOP
        if any(phrase in text for phrase in _ASKS_CONSENT):
            return self._consent(agent_message)
        if any(phrase in text for phrase in _CLOSINGS):
            return STOP
        answers = [answer for answer in (self._identity(text), self._ids(text),
                                         self._payment(text), self._reason(text)) if answer]
        if answers:
            return " ".join(answers)
        return self._pick(_RESTATE).format(request=first_person(self._task.instruction))

    # -- rules -------------------------------------------------------------------------------
    def _gold_writes(self) -> list[tuple[int, dict[str, Any]]]:
        assert self._task is not None
        return [(i, a.arguments) for i, a in enumerate(self._task.actions)
                if a.name in self.write_tools]

    def _consent(self, message: str) -> str:
        for index, arguments in self._gold_writes():
            markers = _markers(arguments)
            if index not in self._consented and markers and all(
                    marker.lower() in message.lower() for marker in markers[:3]):
                self._consented.append(index)
                return self._pick(_YES)
        return self._pick(_NO)

    def _identity(self, text: str) -> str:
        if not any(w in text for w in ("email", "name", "zip", "user id", "identify",
                                       "authenticate", "verify")):
            return ""
        name = self._record.get("name", {})
        parts = []
        if name:
            parts.append(f"My name is {name.get('first_name', '')} {name.get('last_name', '')}.")
        zip_code = self._record.get("address", {}).get("zip")
        if zip_code and "zip" in text or ("name" in text and zip_code):
            parts.append(f"My zip code is {zip_code}.")
        if "email" in text and self._record.get("email"):
            parts.append(f"My email is {self._record['email']}.")
        assert self._task is not None
        if "user id" in text or "user_id" in text:
            parts.append(f"My user id is {self._task.user_id}.")
        return " ".join(parts)

    def _ids(self, text: str) -> str:
        assert self._task is not None
        if "order" in text and ("id" in text or "number" in text):
            ids = re.findall(r"#W\d+", self._task.instruction)
            return (f"The order id is {', '.join(dict.fromkeys(ids))}." if ids
                    else "I don't remember the order id.")
        if "reservation" in text and ("id" in text or "number" in text):
            ids = re.findall(r"\b[A-Z0-9]{6}\b", self._task.instruction)
            ids = [i for i in ids if any(c.isdigit() for c in i) and any(c.isalpha() for c in i)]
            return (f"The reservation id is {', '.join(dict.fromkeys(ids))}." if ids
                    else "I don't remember the reservation id.")
        return ""

    def _payment(self, text: str) -> str:
        if "payment" not in text and "pay " not in text and "refund" not in text:
            return ""
        for _, arguments in self._gold_writes():
            method = arguments.get("payment_method_id") or arguments.get("payment_id")
            if method:
                return f"Please use {method}."
        return ""

    def _reason(self, text: str) -> str:
        if "reason" not in text:
            return ""
        for _, arguments in self._gold_writes():
            if "reason" in arguments:
                return f"The reason is: {arguments['reason']}."
        return ""


# ---------------------------------------------------------------------------------------------
# A model as the user

USER_RULES = """Rules:
- Write one line at a time, as the user would type it.
- Do not reveal the whole instruction at once; give only what the current step needs.
- Never make up information the instruction does not give (an order id, a reservation id, \
an address): say you do not remember or do not have it.
- When the instruction's goal is met, reply with '###STOP###' alone to end the conversation.
- Do not copy the instruction word for word; say it in your own words.
- Keep the conversation natural and stay in the character the instruction describes."""


class ModelUser:
    """A chat model behind an OpenAI-compatible endpoint plays the user (module docstring)."""

    timeout_s = 120.0

    def __init__(self, spec: UserSpec):
        self.spec = spec
        self._messages: list[dict[str, str]] = []
        self._seed = 0

    def reset(self, task: TaskRecord, record: dict[str, Any], seed: int) -> str:
        system = (f"You are a user talking with a customer service agent.\n\nInstruction: "
                  f"{task.instruction}\n\n{USER_RULES}")
        self._seed = seed
        self._messages = [{"role": "system", "content": system},
                          {"role": "user", "content": FIRST_AGENT_MESSAGE}]
        return self._generate()

    def reply(self, agent_message: str) -> str:
        self._messages.append({"role": "user", "content": agent_message})
        return self._generate()

    def state(self) -> Any:
        return json.dumps(self._messages)

    def set_state(self, state: Any) -> None:
        self._messages = json.loads(state)

    def _generate(self) -> str:
        import httpx

        body = {"model": self.spec.model, "messages": self._messages, "temperature": 0.0,
                "seed": self._seed}
        headers = {}
        if os.environ.get("OPENAI_API_KEY"):
            headers["Authorization"] = f"Bearer {os.environ['OPENAI_API_KEY']}"
        try:
            response = httpx.post(f"{self.spec.base_url}/chat/completions", json=body,
                                  headers=headers, timeout=self.timeout_s)
            response.raise_for_status()
            content = response.json()["choices"][0]["message"]["content"] or ""
        except (httpx.HTTPError, KeyError, IndexError, ValueError) as exc:
            raise HarnessError(f"user simulator {self.spec}: request failed ({exc})") from None
        self._messages.append({"role": "assistant", "content": content})
        return content
