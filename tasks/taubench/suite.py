"""The suites ``taubench-retail@1`` and ``taubench-airline@1``.

Task ids are ``<domain>-<split>-<index>`` (the index in upstream's task list). A task's type
says whether its gold actions change the database (``write``/``read-only``) and whether it
requires outputs (``+outputs``): end-at-once scores exactly on the read-only tasks without
outputs. The policy document (``wiki.md``), upstream's rules, the tool schemas and the action
format are the agent's instructions. The user simulator comes from ``TAUBENCH_USER``
(default ``scripted``; `tasks.taubench.users`) or the `user` argument. Tasks without required
outputs declare their answerability (`tasks.taubench.answerability`: answerable when the gold
actions change the database).
"""

from __future__ import annotations

import json
import os
from typing import Any

from tasks.base import Comparability, SuiteBase, TaskSpec
from tasks.taubench.answerability import changes_database, declared_answerability
from tasks.taubench.data import Domain, TaskRecord, data_dir, load_domain
from tasks.taubench.env import MAX_STEPS, TauEnv, respond_action, tool_action
from tasks.taubench.grading import toolbox
from tasks.taubench.users import UserSpec, default_user_spec, parse_user_spec

__all__ = ["TauRetailSuite", "TauAirlineSuite", "COMPARABILITY", "TRIVIAL_ACTIONS"]

TRIVIAL_ACTIONS = {
    "end-at-once": tool_action("transfer_to_human_agents", {"summary": "Ending at once."}),
    "say-goodbye": respond_action("Thank you for contacting us. Have a great day!"),
}
"""End the conversation at once (the terminating transfer, graded at once) and close without
doing anything (the user ends the conversation)."""

COMPARABILITY = Comparability(
    engine="rebuilt", tasks="upstream", grader="rebuilt", protocol="rebuilt", data="upstream",
    comparable="comparable in database outcomes with the same user model; the scripted user "
               "is not upstream's (GPT-4o) user",
    evidence="tests/tasks/taubench/test_tau_fixture.py (tool outputs and database hashes "
             "against upstream's tool code)")

FORMAT = """Each turn, send exactly one JSON object and nothing else:
- a tool call: {"name": "<tool name>", "arguments": {...}}
- a message to the user: {"name": "respond", "arguments": {"content": "<your message>"}}
Never call a tool and message the user in the same turn."""


def _task_type(task: TaskRecord, write_tools: frozenset[str]) -> str:
    kind = "write" if any(a.name in write_tools for a in task.actions) else "read-only"
    return kind + ("+outputs" if task.outputs else "")


class TauSuite(SuiteBase):
    """Shared machinery; subclasses set the domain."""

    domain_name = ""
    version = 1
    trivial_actions = TRIVIAL_ACTIONS
    multiline_actions = True
    comparability = COMPARABILITY

    def __init__(self, *, data: str | os.PathLike | None = None,
                 user: str | UserSpec | None = None, max_steps: int = MAX_STEPS):
        self.domain: Domain = load_domain(self.domain_name, str(data_dir(data)))
        self.user_spec = (parse_user_spec(user) if isinstance(user, str)
                          else user or default_user_spec())
        self.settings = {"user": str(self.user_spec)}  # part of every run's identity
        self.max_steps = max_steps
        tools = toolbox(self.domain_name)
        self._records = {t.id: t for t in self.domain.tasks}
        self.instructions = "\n\n".join([
            self.domain.wiki.strip(),
            *(["Rules:\n" + "\n".join(f"- {r}" for r in self.domain.rules)]
              if self.domain.rules else []),
            "Tools (JSON schemas):\n" + "\n".join(
                json.dumps(spec.schema()) for spec in tools.specs.values()),
            FORMAT])
        changes = changes_database(self.domain)
        super().__init__([TaskSpec(t.id, t.split, _task_type(t, tools.write_tools), {
            "user_id": t.user_id, "gold_actions": len(t.actions), "outputs": len(t.outputs),
            "annotator": t.annotator, "user": str(self.user_spec)},
            answerability=declared_answerability(t, changes)) for t in self.domain.tasks])

    def record(self, task_id: str) -> TaskRecord:
        self.task(task_id)
        return self._records[task_id]

    def make_env(self, task_id: str) -> TauEnv:
        return TauEnv(self.domain, self.record(task_id), self.user_spec,
                      max_steps=self.max_steps)


class TauRetailSuite(TauSuite):
    name, domain_name = "taubench-retail", "retail"
    description = ("τ-bench retail: 115 test / 500 train / 20 dev tasks over upstream's "
                   "database and policy; tools rebuilt and checked against upstream's; "
                   "graded by database hash and required outputs")


class TauAirlineSuite(TauSuite):
    name, domain_name = "taubench-airline", "airline"
    description = ("τ-bench airline: 50 test tasks over upstream's database and policy; "
                   "tools rebuilt and checked against upstream's; graded by database hash "
                   "and required outputs")
    published_splits = ("test",)  # upstream publishes no airline train or dev tasks

    def __init__(self, **options: Any):
        super().__init__(**options)
