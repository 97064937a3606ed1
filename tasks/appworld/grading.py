"""Grading by database-state diff, in the style of AppWorld's evaluator.

The start and end states of the world are compared table by table (rows matched by id:
added, updated, removed). A task's `Expectation` (host-side only) lists the changes it
requires; the grader's tests are AppWorld's kind of requirements: the task was marked
complete, the answer matches (question tasks), every expected change is there, and nothing
else changed (no collateral changes, updated rows change only the expected fields). Success
means every test passes.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from tasks.appworld.world import table_rows

PROTOCOL_TABLES = ("task",)  # the supervisor's task row records completion, not a change


@dataclass(frozen=True)
class Expectation:
    """The changes a task requires. `added`: table -> rows (field subsets) to be added;
    `updated`: table -> id -> fields after; `removed`: table -> ids; `answer`: the expected
    answer of a question task (None when the task asks none)."""

    added: Mapping[str, tuple[Mapping[str, Any], ...]] = field(default_factory=dict)
    updated: Mapping[str, Mapping[int, Mapping[str, Any]]] = field(default_factory=dict)
    removed: Mapping[str, frozenset[int]] = field(default_factory=dict)
    answer: Any = None


@dataclass(frozen=True)
class Diff:
    added: dict[str, dict[int, dict]]
    updated: dict[str, dict[int, tuple[dict, dict]]]
    removed: dict[str, dict[int, dict]]


def _as_dicts(db: sqlite3.Connection) -> dict[str, dict[int, dict]]:
    columns = {t: [c[1] for c in db.execute(f"PRAGMA table_info({t})")]
               for t in table_rows(db)}
    return {t: {i: dict(zip(columns[t], row)) for i, row in rows.items()}
            for t, rows in table_rows(db).items()}


def diff_worlds(start: sqlite3.Connection, end: sqlite3.Connection) -> Diff:
    """Rows added, updated and removed per table (protocol tables left out)."""
    a, b = _as_dicts(start), _as_dicts(end)
    added, updated, removed = {}, {}, {}
    for table in a:
        if table in PROTOCOL_TABLES:
            continue
        before, after = a[table], b.get(table, {})
        added[table] = {i: r for i, r in after.items() if i not in before}
        removed[table] = {i: r for i, r in before.items() if i not in after}
        updated[table] = {i: (before[i], after[i]) for i in before.keys() & after.keys()
                          if before[i] != after[i]}
    return Diff(added, updated, removed)


def _same(field_name: str, got: Any, want: Any) -> bool:
    if field_name == "tags":
        got = json.loads(got) if isinstance(got, str) else got
        return sorted(set(got or [])) == sorted(set(want))
    if isinstance(want, float) or isinstance(got, float):
        try:
            return round(float(got), 2) == round(float(want), 2)
        except (TypeError, ValueError):
            return False
    return got == want


def _matches(row: Mapping[str, Any], want: Mapping[str, Any]) -> bool:
    return all(_same(k, row.get(k), v) for k, v in want.items())


def _added_ok(rows: dict[int, dict], wanted: tuple[Mapping[str, Any], ...]) -> bool:
    free = dict(rows)
    for want in wanted:
        hit = next((i for i, r in free.items() if _matches(r, want)), None)
        if hit is None:
            return False
        del free[hit]
    return True


def _answer_ok(given: Any, want: Any) -> bool:
    return str(given).strip().lower() == str(want).strip().lower()


def grade(start: sqlite3.Connection, end: sqlite3.Connection,
          expectation: Expectation) -> list[tuple[str, bool]]:
    """The requirement tests, each ``(requirement, passed)``."""
    diff = diff_worlds(start, end)
    status, answer = end.execute("SELECT status, answer FROM task").fetchone()
    tests = [("the task is marked complete", status == "success")]
    if expectation.answer is not None:
        given = json.loads(answer) if answer else None
        tests.append(("the answer is correct", _answer_ok(given, expectation.answer)))
    for table, wanted in expectation.added.items():
        tests.append((f"expected {table} rows added", _added_ok(diff.added[table], wanted)))
    for table, by_id in expectation.updated.items():
        ok = all(i in diff.updated[table] and _matches(diff.updated[table][i][1], fields)
                 for i, fields in by_id.items())
        tests.append((f"expected {table} rows updated", ok))
    for table, ids in expectation.removed.items():
        tests.append((f"expected {table} rows removed", set(ids) <= set(diff.removed[table])))
    tests.append(("no collateral changes", _no_collateral(diff, expectation)))
    return tests


def _no_collateral(diff: Diff, expectation: Expectation) -> bool:
    """Nothing changed beyond the expectation: every added row is one of the expected rows,
    updated rows are expected ones and change only expected fields, removals are expected."""
    for table in diff.added:
        wanted = list(expectation.added.get(table, ()))
        for row in diff.added[table].values():
            hit = next((k for k, want in enumerate(wanted) if _matches(row, want)), None)
            if hit is None:
                return False
            wanted.pop(hit)
        if not set(diff.removed[table]) <= set(expectation.removed.get(table, ())):
            return False
        updates = expectation.updated.get(table, {})
        for i, (before, after) in diff.updated[table].items():
            changed = {k for k in after if before[k] != after[k]}
            if i not in updates or not changed <= set(updates[i]):
                return False
    return True


APP_TABLES = {"simple_note": ("note",), "phone": ("contact", "message"),
              "venmo": ("wallet", "payment", "payment_request")}
"""The tables each app owns: an app's sub-goal is the expected changes to its tables."""


def app_subgoals(expectation: Expectation) -> tuple[str, ...]:
    """The per-app sub-goals of a task, ``"<app>: expected changes made"`` for each app whose
    tables the expectation changes (in `APP_TABLES` order)."""
    tables = set(expectation.added) | set(expectation.updated) | set(expectation.removed)
    return tuple(f"{app}: expected changes made" for app, owned in APP_TABLES.items()
                 if tables & set(owned))


def subgoals_reached(start: sqlite3.Connection, end: sqlite3.Connection,
                     expectation: Expectation) -> dict[str, bool]:
    """Each sub-goal of `app_subgoals` and whether it is reached: every expected change to
    the app's tables is there (the grader's per-table tests; collateral changes are the scope
    metric's and the grader's business, not a sub-goal's)."""
    diff = diff_worlds(start, end)
    passed: dict[str, bool] = {}
    for table, wanted in expectation.added.items():
        passed[table] = passed.get(table, True) and _added_ok(diff.added[table], wanted)
    for table, by_id in expectation.updated.items():
        ok = all(i in diff.updated[table] and _matches(diff.updated[table][i][1], fields)
                 for i, fields in by_id.items())
        passed[table] = passed.get(table, True) and ok
    for table, ids in expectation.removed.items():
        passed[table] = passed.get(table, True) and set(ids) <= set(diff.removed[table])
    return {goal: all(ok for table, ok in passed.items() if table in APP_TABLES[app])
            for goal, app in ((g, g.split(":")[0]) for g in app_subgoals(expectation))}


def acted_entries(start: sqlite3.Connection, end: sqlite3.Connection,
                  entries: Mapping[str, bool]) -> list[str]:
    """The entries (ids ``"<table>:<row id>"``) the episode acted on: the row was updated or
    removed; for a ``contact`` entry also a text message sent to its phone number. Sorted."""
    diff = diff_worlds(start, end)
    texted = {row["phone_number"] for row in diff.added.get("message", {}).values()}
    acted = []
    for entry in entries:
        table, _, row_id = entry.partition(":")
        i = int(row_id)
        touched = i in diff.updated.get(table, {}) or i in diff.removed.get(table, {})
        if table == "contact" and not touched:
            phone = start.execute("SELECT phone_number FROM contact WHERE id=?",
                                  (i,)).fetchone()
            touched = phone is not None and phone[0] in texted
        if touched:
            acted.append(entry)
    return sorted(acted)
