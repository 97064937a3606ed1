"""Answerability of τ-bench tasks, declared only where it is exact.

A τ-bench task without required outputs is graded by the database alone: the episode wins
exactly when its final database equals the one the gold actions leave. Such a task is
**answerable** when the gold actions change the database (acting is right) and
**unanswerable** when they leave it as it was (the right act is to change nothing: the request
breaks the policy, or the gold writes are no-ops — 7 retail tasks whose gold actions call a
write tool change nothing, so "has a write action" would be wrong for them). An episode
**abstained** when it ended with the database unchanged (the env says so on its last step);
the declared abstain action is the transfer to a human agent, which ends the conversation at
once. Tasks that require outputs also grade what the agent said, so declining and answering
do not separate by the database: they declare nothing.

Whether the gold actions change the database takes a replay of every task (about 20 s for
retail), so the answers are cached on disk per domain, keyed by the data files, the tasks'
gold actions and the tool code (``$XDG_CACHE_HOME/agent-rl-harness/taubench``); a cache that
cannot be written is skipped.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import os
from pathlib import Path

from tasks.base import Answerability
from tasks.taubench.data import Domain, TaskRecord
from tasks.taubench.env import tool_action
from tasks.taubench.grading import fresh_digest, gold_hash, toolbox

__all__ = ["ABSTAIN_ACTION", "changes_database", "declared_answerability"]

ABSTAIN_ACTION = tool_action("transfer_to_human_agents", {"summary": "Ending at once."})
"""The declared abstain action: hand the conversation to a human, changing nothing."""
CACHE_VERSION = 1


def _cache_file(domain: Domain) -> Path:
    digest = hashlib.sha256(f"v{CACHE_VERSION}".encode())
    for name, raw in domain.tables:
        digest.update(name.encode() + b"\0" + raw)
    for task in domain.tasks:
        digest.update(json.dumps([task.id, [(a.name, a.arguments_json) for a in task.actions]])
                      .encode())
    for module in (f"tasks.taubench.{domain.name}_tools", "tasks.taubench.toolkit",
                   "tasks.taubench.grading"):
        digest.update(Path(importlib.import_module(module).__file__).read_bytes())
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    name = f"{domain.name}-{digest.hexdigest()[:24]}.json"
    return base / "agent-rl-harness" / "taubench" / name


def _compute(domain: Domain) -> dict[str, bool]:
    writes = toolbox(domain.name).write_tools
    fresh = fresh_digest(domain)
    return {t.id: any(a.name in writes for a in t.actions) and gold_hash(domain, t) != fresh
            for t in domain.tasks}


def changes_database(domain: Domain) -> dict[str, bool]:
    """Task id -> whether its gold actions change the database (a task without a write
    action changes nothing; the others are replayed), from the disk cache when it holds
    this domain's data, tasks and tool code."""
    path = _cache_file(domain)
    try:
        cached = json.loads(path.read_text())
        if isinstance(cached, dict) and set(cached) == {t.id for t in domain.tasks}:
            return {k: bool(v) for k, v in cached.items()}
    except (OSError, ValueError):
        pass
    computed = _compute(domain)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_suffix(f".{os.getpid()}.tmp")
        partial.write_text(json.dumps(computed, sort_keys=True))
        os.replace(partial, path)
    except OSError:
        pass
    return computed


def declared_answerability(task: TaskRecord, changes: dict[str, bool]) -> Answerability | None:
    """The task's declaration (module doc): None for a task with required outputs."""
    if task.outputs:
        return None
    return Answerability(changes[task.id], ABSTAIN_ACTION)
