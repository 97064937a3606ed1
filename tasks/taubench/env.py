"""One τ-bench conversation behind the text Env contract.

`reset(seed)` loads a fresh copy of the domain's database and lets the user simulator open
the conversation (the observation is ``[user] <message>``). Each action is one JSON object,
as upstream's tool-calling agent makes one tool call or one message per turn:

- ``{"name": "<tool>", "arguments": {...}}``: the tool runs on the database; the observation
  is ``[tool <name>] <output>`` (errors are outputs, as upstream);
- ``{"name": "respond", "arguments": {"content": "..."}}``: a message to the user; the
  observation is ``[user] <reply>``.

The episode ends when the user's reply contains ``###STOP###`` or the agent calls
``transfer_to_human_agents``, and is then graded (`grading.grade`: database hash and required
outputs); the step limit (30, upstream's) truncates with reward 0. The last step says
whether the episode ``abstained``: its database is as it started (nothing changed; what the
answerability of `tasks.taubench.answerability` reads). Text that is not such an
object, an unknown tool, or a ``respond`` without text is ``invalid`` and changes nothing.

Capabilities: `snapshot()`/`restore()`, `oracle_action()` (the *gold agent*: the task's gold
actions in order, asking the user's consent before each one that writes, then the required
outputs and a closing message; if the user refuses, it transfers to a human).
"""

from __future__ import annotations

import json
import re
from typing import Any

import orjson

from harness.core import HarnessError
from tasks.base import StepResult
from tasks.taubench.data import Domain, TaskRecord, database_digest
from tasks.taubench.grading import TERMINATE_TOOLS, call_tool, fresh_digest, grade, toolbox
from tasks.taubench.users import STOP, UserSimulator, UserSpec, make_user

__all__ = ["TauEnv", "MAX_STEPS", "RESPOND", "parse_action", "tool_action", "respond_action"]

MAX_STEPS = 30
"""Upstream's ``max_num_steps`` of the tool-calling agent."""
RESPOND = "respond"
_FENCE = re.compile(r"^```(?:json)?\s*(.*?)\s*```$", re.DOTALL)
CLOSING = "Thank you for contacting us. Is there anything else I can help you with?"


def tool_action(name: str, arguments: dict[str, Any]) -> str:
    """The action text of one tool call."""
    return json.dumps({"name": name, "arguments": arguments})


def respond_action(content: str) -> str:
    """The action text of one message to the user."""
    return tool_action(RESPOND, {"content": content})


def parse_action(text: str) -> tuple[str, dict[str, Any]] | str:
    """``(name, arguments)`` of an action, or the reason it is not one."""
    body = text.strip()
    fenced = _FENCE.match(body)
    if fenced:
        body = fenced.group(1)
    try:
        value = json.loads(body)
    except ValueError:
        return "not a JSON object"
    if not isinstance(value, dict) or not isinstance(value.get("name"), str):
        return "expected an object with a 'name'"
    arguments = value.get("arguments", value.get("kwargs", {}))
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except ValueError:
            return "'arguments' is not a JSON object"
    if not isinstance(arguments, dict):
        return "'arguments' must be an object"
    if value["name"] == RESPOND and not isinstance(arguments.get("content"), str):
        return "'respond' needs a text 'content'"
    return value["name"], arguments


class TauEnv:
    """One task of a τ-bench suite (module docstring)."""

    max_steps = MAX_STEPS
    multiline_actions = True

    def __init__(self, domain: Domain, task: TaskRecord, user_spec: UserSpec, *,
                 max_steps: int = MAX_STEPS):
        self.domain, self.task, self.user_spec = domain, task, user_spec
        self.max_steps = max_steps
        self.tools = toolbox(domain.name)
        self.user: UserSimulator = make_user(user_spec, self.tools.write_tools)
        self._database: dict[str, Any] | None = None
        self._messages: list[str] = []
        self._steps, self._done = 0, False
        self._gold_done, self._asked, self._consented = 0, -1, -1
        self._outputs_said, self._refused = False, False

    # -- Env contract ------------------------------------------------------------------------
    def reset(self, *, seed: int) -> tuple[str, dict[str, Any]]:
        self._database = self.domain.fresh_database()
        self._messages, self._steps, self._done = [], 0, False
        self._gold_done, self._asked, self._consented = 0, -1, -1
        self._outputs_said, self._refused = False, False
        record = self._database["users"].get(self.task.user_id, {})
        opening = self.user.reset(self.task, record, seed)
        return f"[user] {opening}", self._info(False, "user")

    def step(self, action: str) -> StepResult:
        if self._database is None or self._done:
            raise HarnessError("step() called before reset() or after the episode ended")
        parsed = parse_action(action)
        self._steps += 1
        if isinstance(parsed, str) or (parsed[0] != RESPOND
                                       and parsed[0] not in self.tools.functions):
            why = parsed if isinstance(parsed, str) else f"unknown action {parsed[0]}"
            observation = (f"Invalid action ({why}). Send one JSON object: "
                           f'{{"name": TOOL, "arguments": {{...}}}} or {{"name": "respond", '
                           f'"arguments": {{"content": TEXT}}}}.')
            return self._result(observation, False, True, "invalid", {})
        name, arguments = parsed
        self._track_gold(name, arguments)
        if name == RESPOND:
            self._messages.append(arguments["content"])
            reply = self.user.reply(arguments["content"])
            self._track_consent(reply)
            return self._result(f"[user] {reply}", STOP in reply, False, "user", {})
        output = call_tool(self.tools, self._database, name, arguments)
        return self._result(f"[tool {name}] {output}", name in TERMINATE_TOOLS, False, name, {})

    def _result(self, observation: str, done: bool, invalid: bool, source: str,
                extra: dict[str, Any]) -> StepResult:
        reward = 0.0
        info = self._info(invalid, source)
        if done:
            assert self._database is not None
            result = grade(self.domain, self.task, self._database, self._messages)
            reward = result.reward
            info.update(won=reward == 1.0, score=reward, r_actions=result.r_actions,
                        outputs_found=result.outputs, user_ended=source == "user",
                        gold_actions_done=self._gold_done, user_refused=self._refused,
                        abstained=result.database_hash == fresh_digest(self.domain))
        truncated = not done and self._steps >= self.max_steps
        if truncated:
            assert self._database is not None
            info["abstained"] = database_digest(self._database) == fresh_digest(self.domain)
        self._done = done or truncated
        return StepResult(observation, reward, done, truncated, {**info, **extra})

    def _info(self, invalid: bool, source: str) -> dict[str, Any]:
        info = {"won": False, "score": 0.0, "invalid": invalid, "source": source,
                "steps": self._steps, "user": str(self.user_spec)}
        note = self.user_spec.comparability_note
        if note:  # shown under every leaderboard of the run (tasks.base.StepResult)
            info["comparability_note"] = note
        return info

    # -- the gold agent ----------------------------------------------------------------------
    def _confirmation(self, index: int) -> str:
        action = self.task.actions[index]
        return (f"To confirm: I will call {action.name} with {action.arguments_json}. "
                f"Do you confirm (yes/no)?")

    def _outputs_message(self) -> str:
        said = "; ".join(self.task.outputs)
        return f"Here is what you asked for: {said}. {CLOSING}"

    def _track_gold(self, name: str, arguments: dict[str, Any]) -> None:
        gold = self.task.actions
        k = self._gold_done
        if name == RESPOND:
            content = arguments["content"]
            if k < len(gold) and content == self._confirmation(k):
                self._asked = k
            if self.task.outputs and content.startswith("Here is what you asked for: "):
                self._outputs_said = True
            return
        if k < len(gold) and gold[k].name == name and gold[k].arguments == arguments:
            self._gold_done += 1

    def _track_consent(self, reply: str) -> None:
        if self._asked == self._gold_done and self._consented != self._asked:
            if reply.strip().lower().startswith("yes"):
                self._consented = self._asked
            else:
                self._refused = True

    def oracle_action(self) -> str:
        """The gold agent's next action (module docstring)."""
        gold, k = self.task.actions, self._gold_done
        if self._refused:
            return tool_action("transfer_to_human_agents",
                               {"summary": "The user did not confirm the required change."})
        if k < len(gold):
            action = gold[k]
            if action.name in TERMINATE_TOOLS and self.task.outputs and not self._outputs_said:
                return respond_action(self._outputs_message())
            if action.name in self.tools.write_tools and self._consented != k:
                return respond_action(self._confirmation(k))
            return tool_action(action.name, action.arguments)
        if self.task.outputs and not self._outputs_said:
            return respond_action(self._outputs_message())
        return respond_action(f"{CLOSING} Have a great day!")

    # -- snapshot ----------------------------------------------------------------------------
    def snapshot(self) -> tuple:
        if self._database is None:
            raise HarnessError("snapshot() needs a reset() first")
        return (orjson.dumps(self._database), list(self._messages), self.user.state(),
                self._steps, self._done, self._gold_done, self._asked, self._consented,
                self._outputs_said, self._refused)

    def restore(self, snapshot: tuple) -> None:
        (database, messages, user, self._steps, self._done, self._gold_done, self._asked,
         self._consented, self._outputs_said, self._refused) = snapshot
        self._database = orjson.loads(database)
        self._messages = list(messages)
        self.user.set_state(user)
