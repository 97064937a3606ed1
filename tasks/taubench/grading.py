"""τ-bench's reward: the final database against the gold one, and the required outputs.

`gold_hash` replays a task's gold actions (all but the terminating transfer) on a fresh
database and digests it (`data.database_digest`: the same equality as upstream's hash);
`grade` gives reward 1 exactly when the episode's database digest
equals it and every required output string occurs in some message the agent sent the user
(lower-cased, commas removed from the message), as upstream's ``calculate_reward``.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

from tasks.taubench.data import Domain, TaskRecord, database_digest, load_domain
from tasks.taubench.toolkit import Toolbox

__all__ = ["Grade", "TERMINATE_TOOLS", "call_tool", "fresh_digest", "gold_hash", "grade",
           "toolbox"]

TERMINATE_TOOLS = frozenset({"transfer_to_human_agents"})


@dataclass(frozen=True)
class Grade:
    """The reward and its parts: ``r_actions`` (database equal to gold) and the outputs
    found (``{output: found}``; empty when the task requires none)."""

    reward: float
    r_actions: bool
    outputs: dict[str, bool]
    database_hash: str
    gold_hash: str


def toolbox(domain: str) -> Toolbox:
    if domain == "retail":
        from tasks.taubench.retail_tools import TOOLBOX
    else:
        from tasks.taubench.airline_tools import TOOLBOX
    return TOOLBOX


def call_tool(tools: Toolbox, database: dict[str, Any], name: str,
              arguments: dict[str, Any]) -> str:
    """Run one tool as upstream's env does: an unknown name and any exception become the
    observation (``Unknown action NAME``, ``Error: ...``)."""
    function = tools.functions.get(name)
    if function is None:
        return f"Unknown action {name}"
    try:
        return str(function(database, **arguments))
    except Exception as exc:  # noqa: BLE001 - upstream shows every tool exception as text
        return f"Error: {exc}"


def replay(domain: Domain, task: TaskRecord) -> dict[str, Any]:
    """A fresh database with the task's gold actions applied (the transfer skipped)."""
    database = domain.fresh_database()
    tools = toolbox(domain.name)
    for action in task.actions:
        if action.name not in TERMINATE_TOOLS:
            call_tool(tools, database, action.name, action.arguments)
    return database


@functools.lru_cache(maxsize=2048)
def _gold_hash(domain_name: str, folder: str, task: TaskRecord) -> str:
    return database_digest(replay(load_domain(domain_name, folder), task))


_FRESH: dict[tuple[str, str], str] = {}


def fresh_digest(domain: Domain) -> str:
    """The digest of the domain's database as every episode starts (cached per domain)."""
    key = (domain.name, str(domain.folder))
    if key not in _FRESH:
        _FRESH[key] = database_digest(domain.fresh_database())
    return _FRESH[key]


def gold_hash(domain: Domain, task: TaskRecord) -> str:
    """The hash of the database after the task's gold actions (cached per task)."""
    return _gold_hash(domain.name, str(domain.folder.parent), task)


def grade(domain: Domain, task: TaskRecord, database: dict[str, Any],
          agent_messages: list[str]) -> Grade:
    """The episode's reward (module docstring)."""
    final, gold = database_digest(database), gold_hash(domain, task)
    outputs = {}
    for output in task.outputs:
        wanted = output.lower()
        outputs[output] = any(wanted in m.lower().replace(",", "") for m in agent_messages)
    r_actions = final == gold
    reward = 1.0 if r_actions and all(outputs.values()) else 0.0
    return Grade(reward, r_actions, outputs, final, gold)
