"""What graders share: the case they grade, the verdict, chart readings and answer checks.

A grader is one function per task type, ``grade(case, answer, posts) -> Grade``: `case` holds
the task and the ground-truth chart of its patient, `answer` the parsed ``FINISH`` list, and
`posts` the resources the server accepted during the episode, in order. Graders compute the
truth from the chart itself (never from the branch label), so a branch generator that wrote
the wrong chart is caught by the oracle and the tests.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from tasks.medagentbench.clinical import NOW, parse_instant

Resource = dict[str, Any]


@dataclass(frozen=True)
class TaskDef:
    """One task: the official (or generated) texts, its patient and the record it needs.

    `kind` and `branch` choose the chart generator (`branches.KINDS`); `sol` is the expected
    answer where the task file gives one (MRN lookups); `params` holds task-specific inputs
    (the blood pressure to record, the referral note, ...).
    """

    id: str
    task_type: str
    split: str
    instruction: str
    context: str
    mrn: str | None
    kind: str
    branch: str
    sol: tuple[Any, ...] | None = None
    params: Mapping[str, Any] = field(default_factory=dict)
    official: bool = False


@dataclass(frozen=True)
class Case:
    """The ground truth of one episode: the task, its patient, the patient's chart."""

    task: TaskDef
    patient: Resource | None
    records: tuple[Resource, ...]


@dataclass(frozen=True)
class Grade:
    passed: bool
    reason: str


PASS = Grade(True, "correct")
Grader = Callable[[Case, Any, Sequence[Resource]], Grade]


def fail(reason: str) -> Grade:
    return Grade(False, reason)


@dataclass(frozen=True)
class Reading:
    """One chart value: when, the numeric value (or None), its unit, the text value."""

    when: datetime
    value: float | None
    unit: str
    text: str
    resource: Resource


def _codes(resource: Resource) -> set[str]:
    concept = resource.get("code") or {}
    codes = {c.get("code") for c in concept.get("coding") or [] if isinstance(c, dict)}
    return {c for c in codes | {concept.get("text")} if c}


def readings(records: Sequence[Resource], code: str, resource_type: str = "Observation"
             ) -> list[Reading]:
    """Resources of `resource_type` carrying `code`, oldest first."""
    found = []
    for r in records:
        if r.get("resourceType") != resource_type or code not in _codes(r):
            continue
        when = parse_instant(r.get("effectiveDateTime") or r.get("performedDateTime") or "")
        if when is None:
            continue
        quantity = r.get("valueQuantity") or {}
        value = quantity.get("value")
        found.append(Reading(when, float(value) if value is not None else None,
                             str(quantity.get("unit", "")), str(r.get("valueString", "")), r))
    return sorted(found, key=lambda reading: reading.when)


def within(found: Sequence[Reading], hours: float) -> list[Reading]:
    """Readings taken in the last `hours` before the clock (inclusive), oldest first."""
    start = NOW - timedelta(hours=hours)
    return [r for r in found if start <= r.when <= NOW]


def latest(found: Sequence[Reading]) -> Reading | None:
    return found[-1] if found else None


def numbers_match(given: Any, expected: float, tolerance: float = 1e-6) -> bool:
    """`given` is a JSON number (not a bool, not a string) within `tolerance`."""
    return (isinstance(given, (int, float)) and not isinstance(given, bool)
            and math.isfinite(given) and abs(given - expected) <= tolerance + 1e-9)


def answer_is(answer: Any, expected: Sequence[Any], tolerance: float = 1e-6) -> bool:
    """`answer` is a list equal to `expected`: numbers within `tolerance`, strings exact,
    dates (``expected`` items of type datetime) as the same instant or the same day."""
    if not isinstance(answer, list) or len(answer) != len(expected):
        return False
    for given, wanted in zip(answer, expected):
        if isinstance(wanted, datetime):
            if not same_time(given, wanted):
                return False
        elif isinstance(wanted, (int, float)) and not isinstance(wanted, bool):
            if not numbers_match(given, float(wanted), tolerance):
                return False
        elif given != wanted:
            return False
    return True


def same_time(given: Any, wanted: datetime) -> bool:
    """`given` names the instant `wanted` (any ISO form) or its calendar day (YYYY-MM-DD)."""
    if not isinstance(given, str):
        return False
    if len(given) == 10:
        return given == wanted.date().isoformat()
    when = parse_instant(given)
    return when is not None and when == wanted


def resources_of(posts: Sequence[Resource], resource_type: str) -> list[Resource]:
    return [p for p in posts if p.get("resourceType") == resource_type]


def no_posts(posts: Sequence[Resource]) -> Grade | None:
    """A failing grade when anything was posted (a query task orders nothing)."""
    if posts:
        kinds = ", ".join(p.get("resourceType", "?") for p in posts)
        return fail(f"placed {len(posts)} unrequested order(s): {kinds}")
    return None
