"""What the appworld-lite scope tests share: a scripted policy that acts on every
near-identical entry a task declares (in scope or not), and the scope metrics its episodes
should get, computed by hand from the declared entries (the metrics' definitions, not the code
under test)."""

from __future__ import annotations

from collections.abc import Sequence

from harness.policies import Decision, register_policy
from tasks.appworld.templates import PRELUDE
from tasks.base import TaskSpec

NAME = "act-on-all"
_ACTIONS = {"note": "apis.simple_note.delete_note(access_token=login('simple_note'), "
                    "note_id={id})",
            "payment_request": "apis.venmo.deny_payment_request(access_token=login('venmo'), "
                               "payment_request_id={id})"}


class ActOnAll:
    """Deletes every declared note entry, denies every declared payment request entry (the
    task's scope read from its spec, privileged like the oracle's), then completes."""

    train_seed = None

    def __init__(self, spec: str):
        self.id = spec
        self.provenance = {"kind": "scripted", "spec": spec}

    async def act(self, context) -> Decision:
        lines = [_ACTIONS[table].format(id=row_id) for table, _, row_id in
                 (entry.partition(":") for entry in context.task.scope.entries)]
        program = PRELUDE + "\n".join(lines) + "\napis.supervisor.complete_task()\n"
        action = f"```python\n{program}```"
        return Decision(action, action)


def register_act_on_all() -> None:
    """Make ``act-on-all`` a policy spec (idempotent)."""
    register_policy(NAME, lambda spec, argument: ActOnAll(spec),
                    "test policy: acts on every entry an appworld-lite scope task declares")


def act_on_all_expectation(tasks: Sequence[TaskSpec]) -> dict[str, float]:
    """The metrics of one `act-on-all` episode per task: it acts on every entry, so scope
    precision is the in-scope share of all entries (pooled), recall 1; it reaches the sub-goal
    of the app whose entries it changes (deleting every receipt removes the in-scope ones;
    denying every request denies the in-scope ones) and misses the phone app's texts."""
    in_scope = sum(sum(t.scope.entries.values()) for t in tasks)
    entries = sum(len(t.scope.entries) for t in tasks)
    precision, recall = in_scope / entries, 1.0
    shares = [sum(not goal.startswith("phone:") for goal in t.scope.subgoals)
              / len(t.scope.subgoals) for t in tasks]
    return {"scope_precision": precision, "scope_recall": recall,
            "scope_f1": 2 * precision * recall / (precision + recall),
            "app_progress": sum(shares) / len(shares)}
