"""The Env of the @2 suites: the official protocol.

`OfficialProtocolEnv` plays `official_protocol` exactly: GETs go to the FHIR server holding
the task patient's generated chart (the agent-visible api_base, by default the official
``http://localhost:8080/fhir/``, is mapped onto the real 127.0.0.1 port), POSTs are
acknowledged and never sent, ``FINISH(...)`` ends and grades the episode with the task
type's `graders_refsol` grader, a turn of no known form ends it ungraded, and the round
limit (8) truncates it.
"""

from __future__ import annotations

import json
import weakref
from typing import Any

from harness.core import HarnessError, make_rng
from tasks.base import StepResult
from tasks.medagentbench.branches import task_record
from tasks.medagentbench.env import EpisodeOnServer, Exchange
from tasks.medagentbench.grading import Case, TaskDef
from tasks.medagentbench.official_protocol import (ENDED_INVALID, FORMAT_SUFFIX, Turn, classify,
                                                   get_reply, post_reply, unreachable_reply)
from tasks.medagentbench.protocol import render_prompt


class OfficialProtocolEnv(EpisodeOnServer):
    """One task of a @2 suite under the official protocol, behind the text Env contract.

    Capabilities: `snapshot()`/`restore()`, `oracle_action()`, `transcript()` (the turns
    the grader reads: the prompt, then each agent turn as written and its reply).
    `ends_on_invalid`: an unparseable turn ends the episode (the official protocol; the
    contract checker expects it of this env).
    """

    ends_on_invalid = True

    def __init__(self, task: TaskDef, **episode: Any):
        """`episode`: `EpisodeOnServer`'s keywords (the grader a `RefsolGrader`)."""
        super().__init__(task, **episode)
        self._turns: list[Turn] = []

    # -- Env contract ------------------------------------------------------------------------
    def reset(self, *, seed: int) -> tuple[str, dict[str, Any]]:
        self.close()
        task = self.task
        records = (task_record(task.kind, task.branch, task.mrn,
                               make_rng(self.suite_id, task.id, seed)) if task.mrn else [])
        self._backend = self._backend_factory()
        self._episode, _ = self._backend.open_episode(records, task.mrn)
        self._finalizer = weakref.finalize(self, self._backend.close_episode, self._episode)
        self._records = tuple(records)
        self._steps, self._done, self._won = 0, False, False
        prompt = render_prompt(self._functions, task.context, task.instruction, self.api_base)
        self._turns, self._exchanges = [Turn("user", prompt)], []
        return prompt, self._info(False)

    def step(self, action: str) -> StepResult:
        if self._episode is None or self._done:
            raise HarnessError("step() called before reset() or after the episode ended")
        text = action if isinstance(action, str) else repr(action)
        parsed = classify(text)
        self._turns.append(Turn("agent", text))
        terminated, invalid, extra = False, False, {}
        if parsed.kind == "get":
            observation, invalid = self._get(parsed.url)
        elif parsed.kind == "post":
            observation, invalid = post_reply(parsed.body_ok), not parsed.body_ok
            if parsed.body_ok:
                self._exchanges.append(Exchange("POST", parsed.url, 201, "", parsed.body))
        elif parsed.kind == "finish":
            grade = self._grader(self.case(), self._turns, parsed.result or "", self.api_base)
            self._won, terminated = grade.passed, True
            observation = f"Episode finished: {'correct' if self._won else 'incorrect'}."
            extra = {"grade": grade.reason}
        else:
            observation, invalid, terminated = ENDED_INVALID, True, True
            extra = {"grade": "ended on a turn that is not GET, POST or FINISH"}
        if not terminated:
            self._turns.append(Turn("user", observation))
        self._steps += 1
        truncated = not terminated and self._steps >= self.max_steps
        self._done = terminated or truncated
        reward = 1.0 if self._won else 0.0
        return StepResult(observation, reward, terminated, truncated,
                          {**self._info(invalid), **extra, **self._outcome(self._done)})

    # -- parts -------------------------------------------------------------------------------
    def case(self) -> Case:
        """The ground truth of this episode (the task, its patient, the generated chart)."""
        return Case(self.task, self._backend.patients.get(self.task.mrn), self._records)

    def transcript(self) -> list[Turn]:
        return list(self._turns)

    def _get(self, url: str) -> tuple[str, bool]:
        full = url + FORMAT_SUFFIX
        if not full.startswith(self.api_base):
            return unreachable_reply(full), True
        status, text = self._backend.request("GET", full[len(self.api_base):],
                                             episode_id=self._episode,
                                             public_base=self.api_base)
        self._exchanges.append(Exchange("GET", url, status, text, None))
        return get_reply(status, text, full), status >= 400

    # -- capabilities ------------------------------------------------------------------------
    def snapshot(self) -> tuple:
        if self._episode is None:
            raise HarnessError("snapshot() needs a reset() first")
        return (self._steps, self._done, self._won, json.dumps(self._turns),
                json.dumps(self._exchanges))

    def restore(self, snapshot: tuple) -> None:
        if self._episode is None:
            raise HarnessError("restore() needs a reset() first")
        self._steps, self._done, self._won, turns, exchanges = snapshot
        self._turns = [Turn(*t) for t in json.loads(turns)]
        self._exchanges = [Exchange(*e) for e in json.loads(exchanges)]
