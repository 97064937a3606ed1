"""Which MedAgentBench tasks are answerable in the abstention sense (`tasks.base.Answerability`).

The act the abstention metrics score is the order: a task whose chart calls for an order
(a medication, a lab, a referral, a recorded vital) is answerable, one whose correct act is
to place no order (a value in range, a recent test, an active prescription) is not, and an
episode that placed no order abstained (`abstained_by_orders`). Which it is follows from the
task type's branch: the chart generator puts the patient in a branch whose decision the task
text fixes (`taskdefs.TYPE_BRANCHES`, `taskdefs_v3.BRANCH_TABLE`). Task types that never
order (lookups, queries: task1, 2, 4, 6, 7, 13) declare nothing and stay out of the metrics.
A refusing policy abstains by finishing at once with ``FINISH([-1])`` (no value, no order).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from tasks.base import Answerability

ABSTAIN_ACTION = "FINISH([-1])"
ORDER_BRANCHES: Mapping[str, tuple[str, ...]] = {
    "task3": ("default",), "task5": ("mild", "moderate", "severe"), "task8": ("default",),
    "task9": ("low",), "task10": ("old", "none"), "task11": ("allergic", "not_allergic"),
    "task12": ("high",), "task14": ("high",), "task15": ("low",),
    "task16": ("absent", "stopped"),
    "task17": ("heavy_kg", "heavy_lb", "light_kg", "light_lb"), "task18": ("high",),
    "task19": ("many_high",), "task20": ("old", "none"),
}
"""Task type -> the branches whose correct act places an order (the oracle's plans in
`tasks.medagentbench.oracle`); the type's other branches call for no order."""


def answerability(task_type: str, branch: str) -> Answerability | None:
    """The answerability of a task of `task_type` in `branch` (None: a type that never
    orders)."""
    if task_type not in ORDER_BRANCHES:
        return None
    return Answerability(branch in ORDER_BRANCHES[task_type], ABSTAIN_ACTION)


def abstained_by_orders(posts: Iterable[tuple[str, int]]) -> bool:
    """An episode abstained when no order was accepted: `posts` are its requests'
    ``(method, HTTP status)``."""
    return not any(method == "POST" and status < 400 for method, status in posts)
