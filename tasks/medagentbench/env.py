"""The MedAgentBench Env: one task, its isolated record on the FHIR server, graded at FINISH.

`reset(seed)` generates the task patient's chart for (suite, task, seed) in the task's
branch and opens an isolated episode record on the shared server. Each ``GET``/``POST`` the
agent writes is sent over HTTP to that server (the agent-visible api_base, by default the
official ``http://localhost:8080/fhir/``, is mapped onto the real 127.0.0.1 port, so
observations do not depend on the port). ``FINISH`` ends the episode and the task type's
grader decides ``won`` from the chart, the answer and the accepted POSTs. An action that is
none of the three forms, a URL outside the api_base, or a request the server rejects (4xx)
is ``invalid`` and changes nothing; the step limit (8 by default) truncates.
"""

from __future__ import annotations

import json
import weakref
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

from harness.core import HarnessError, make_rng
from tasks.base import StepResult
from tasks.medagentbench.answerability import abstained_by_orders
from tasks.medagentbench.branches import task_record
from tasks.medagentbench.grading import Case, TaskDef
from tasks.medagentbench.protocol import (Finish, Get, get_reply, invalid_reply,
                                          outside_base_reply, parse_action, post_reply,
                                          render_prompt)

MAX_STEPS = 8
"""The official harness's round limit."""


class Exchange(NamedTuple):
    """One HTTP request of the episode: what was asked and what came back (texts; `body`
    and `sent` parse them as JSON, None when they are not JSON)."""

    method: str
    url: str
    status: int
    text: str
    sent_text: str | None

    @property
    def body(self) -> Any:
        return _json_or_none(self.text)

    @property
    def sent(self) -> Any:
        return _json_or_none(self.sent_text)


Oracle = Callable[[TaskDef, Sequence[Exchange], str], str]


def _json_or_none(text: str | None) -> Any:
    try:
        return json.loads(text) if text else None
    except json.JSONDecodeError:
        return None


class EpisodeOnServer:
    """What every MedAgentBench env shares: the task, its episode on the FHIR backend (a
    private copy of the record, dropped on `close` or when the env is collected), the
    exchanges so far, and the oracle over them. Subclasses implement the protocol."""

    def __init__(self, task: TaskDef, *, suite_id: str, grader: Any, oracle: Oracle,
                 backend: Callable[[], Any], functions: list[dict[str, Any]], api_base: str,
                 max_steps: int):
        if max_steps < 1:
            raise HarnessError(f"max_steps must be >= 1, got {max_steps}")
        self.task, self.suite_id, self.max_steps = task, suite_id, max_steps
        self.api_base = api_base
        self._grader, self._oracle, self._backend_factory = grader, oracle, backend
        self._functions = functions
        self._backend: Any = None
        self._episode: str | None = None
        self._finalizer: Any = None
        self._records: tuple[dict[str, Any], ...] = ()
        self._steps, self._done, self._won = 0, False, False
        self._exchanges: list[Exchange] = []

    def close(self) -> None:
        """Drop the episode's record from the server (also done when the env is collected)."""
        if self._finalizer is not None:
            self._finalizer()
        self._finalizer = self._episode = None

    def _info(self, invalid: bool) -> dict[str, Any]:
        return {"won": self._won, "score": float(self._won), "invalid": invalid,
                "steps": self._steps}

    def _outcome(self, ended: bool) -> dict[str, Any]:
        """On the step that ends the episode, whether it abstained: placed no order
        (`tasks.medagentbench.answerability`)."""
        if not ended:
            return {}
        return {"abstained": abstained_by_orders((e.method, e.status)
                                                 for e in self._exchanges)}

    def oracle_action(self) -> str:
        return self._oracle(self.task, list(self._exchanges), self.api_base)


class MedAgentBenchEnv(EpisodeOnServer):
    """One task of a MedAgentBench suite behind the text Env contract.

    Capabilities: `snapshot()`/`restore()` (the episode's created resources and the
    conversation state), `oracle_action()`.
    """

    def __init__(self, task: TaskDef, **episode: Any):
        """`episode`: `EpisodeOnServer`'s keywords (the grader a `Grader`)."""
        super().__init__(task, **episode)
        self._store: Any = None

    # -- Env contract ------------------------------------------------------------------------
    def reset(self, *, seed: int) -> tuple[str, dict[str, Any]]:
        self.close()
        task = self.task
        records = (task_record(task.kind, task.branch, task.mrn,
                               make_rng(self.suite_id, task.id, seed)) if task.mrn else [])
        self._backend = self._backend_factory()
        self._episode, self._store = self._backend.open_episode(records, task.mrn)
        self._finalizer = weakref.finalize(self, self._backend.close_episode, self._episode)
        self._records = tuple(records)
        self._steps, self._done, self._won = 0, False, False
        self._exchanges = []
        prompt = render_prompt(self._functions, task.context, task.instruction, self.api_base)
        return prompt, self._info(False)

    def step(self, action: str) -> StepResult:
        if self._episode is None or self._done:
            raise HarnessError("step() called before reset() or after the episode ended")
        parsed = parse_action(action)
        reward, terminated, invalid, extra = 0.0, False, False, {}
        if parsed is None:
            observation, invalid = invalid_reply(action), True
        elif isinstance(parsed, Finish):
            observation, terminated, extra = self._finish(parsed)
            reward = 1.0 if self._won else 0.0
        else:
            observation, invalid, extra = self._request(parsed)
        self._steps += 1
        truncated = not terminated and self._steps >= self.max_steps
        self._done = terminated or truncated
        return StepResult(observation, reward, terminated, truncated,
                          {**self._info(invalid), **extra, **self._outcome(self._done)})

    def close(self) -> None:
        super().close()
        self._store = None

    # -- actions -----------------------------------------------------------------------------
    def _request(self, action: Any) -> tuple[str, bool, dict[str, Any]]:
        if not action.url.startswith(self.api_base):
            return outside_base_reply(action.url, self.api_base), True, {}
        path = action.url[len(self.api_base):]
        if isinstance(action, Get):
            status, text = self._backend.request("GET", path, episode_id=self._episode,
                                                 public_base=self.api_base)
            observation, sent = get_reply(status, text), None
        else:
            status, text = self._backend.request("POST", path, episode_id=self._episode,
                                                 public_base=self.api_base, body=action.body)
            observation, sent = post_reply(status, text), action.body
        self._exchanges.append(Exchange("GET" if isinstance(action, Get) else "POST",
                                        action.url, status, text, sent))
        return observation, status >= 400, {"http_status": status}

    def _finish(self, action: Finish) -> tuple[str, bool, dict[str, Any]]:
        if action.error is not None:
            self._won, reason = False, action.error
        else:
            case = Case(self.task, self._backend.patients.get(self.task.mrn), self._records)
            grade = self._grader(case, action.answer, self._store.created())
            self._won, reason = grade.passed, grade.reason
        verdict = "correct" if self._won else "incorrect"
        return f"Episode finished: {verdict}.", True, {"grade": reason}

    # -- capabilities ------------------------------------------------------------------------
    def snapshot(self) -> tuple:
        if self._store is None:
            raise HarnessError("snapshot() needs a reset() first")
        return (self._store.snapshot(), self._steps, self._done, self._won,
                json.dumps(self._exchanges))

    def restore(self, snapshot: tuple) -> None:
        if self._store is None:
            raise HarnessError("restore() needs a reset() first")
        created, self._steps, self._done, self._won, exchanges = snapshot
        self._store.restore(created)
        self._exchanges = [Exchange(*e) for e in json.loads(exchanges)]
