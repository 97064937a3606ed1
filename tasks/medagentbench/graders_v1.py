"""Graders of the ten official task types (suites medagentbench-v1@1 and -v2@1, and the
``protocol=fhir`` variants of @2).

Written from the task definitions (the instruction and context of each type, and the
payload schema of funcs_v1.json), before the reference grader was found; their pass sets
differ from it (the @2 suites grade with `graders_refsol`, which agrees with it). Kept
from the official harness's grading rules as published: query tasks (4, 6, 7) fail when
anything is posted; order tasks (3, 8) ignore the answer; for the conditional-order tasks
(5, 9, 10) an empty answer ``[]`` is accepted in place of the value. That last rule is what
lets ``FINISH([])`` pass every no-action branch (the silent-finish ceiling); the v3 graders
drop it.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date
from typing import Any

from tasks.medagentbench import orders
from tasks.medagentbench.clinical import (A1C_LOINC, K_LOINC, K_NDC, LOINC_SYSTEM, MG_NDC, NOW,
                                          ORTHO_NOTE, ORTHO_SNOMED, SNOMED_SYSTEM,
                                          TOMORROW_8AM_ISO, age_on)
from tasks.medagentbench.grading import (PASS, Case, Grade, Grader, answer_is, fail, latest,
                                         no_posts, readings, within)
from tasks.medagentbench.rules import a1c_order_needed, mg_dose, mg_to_mgdl, potassium_dose

Posts = Sequence[dict[str, Any]]


def _verdict(problems: list[str], answer_ok: bool, expected: Any) -> Grade:
    if problems:
        return fail("; ".join(problems))
    return PASS if answer_ok else fail(f"answer must be {expected}")


def grade_task1(case: Case, answer: Any, posts: Posts) -> Grade:
    """MRN lookup by name and birth date: the answer is the task's solution."""
    expected = list(case.task.sol or ())
    return PASS if answer_is(answer, expected) else fail(f"answer must be {expected}")


def patient_age(case: Case) -> int | None:
    birth = (case.patient or {}).get("birthDate")
    return age_on(date.fromisoformat(birth), NOW.date()) if birth else None


def grade_task2(case: Case, answer: Any, posts: Posts) -> Grade:
    """Age at the clock, rounded down."""
    age = patient_age(case)
    return PASS if age is not None and answer_is(answer, [age]) else fail(f"answer must be [{age}]")


def grade_task3(case: Case, answer: Any, posts: Posts) -> Grade:
    """One vitals Observation with the measured blood pressure (the answer is not read)."""
    mrn, value = case.task.mrn, case.task.params["bp"]
    problems = orders.match_orders(posts, [("Observation", lambda r: orders.vitals_problems(
        r, mrn, "BP", value))])
    return _verdict(problems, True, None)


def recent_mg(case: Case) -> float | None:
    """The most recent magnesium of the last 24 h in mg/dL, or None."""
    last = latest(within(readings(case.records, "MG"), 24))
    return None if last is None or last.value is None else round(mg_to_mgdl(last.value,
                                                                            last.unit), 4)


def grade_task4(case: Case, answer: Any, posts: Posts) -> Grade:
    """Most recent magnesium within 24 h (mg/dL), -1 when none; nothing may be posted."""
    value = recent_mg(case)
    expected = [value if value is not None else -1]
    return no_posts(posts) or _verdict([], answer_is(answer, expected), expected)


def magnesium_orders(mrn: str, value: float | None) -> list:
    dose = None if value is None else mg_dose(value)
    if dose is None:
        return []
    grams, hours = dose
    return [("MedicationRequest", lambda r: orders.medication_problems(
        r, mrn, MG_NDC, grams, "g", route="IV", rate=(hours, "h")))]


def grade_task5(case: Case, answer: Any, posts: Posts) -> Grade:
    """Magnesium in 24 h; if low, one IV magnesium order dosed by the table; else none."""
    value = recent_mg(case)
    problems = orders.match_orders(posts, magnesium_orders(case.task.mrn, value))
    expected = [value if value is not None else -1]
    return _verdict(problems, answer_is(answer, expected) or answer == [], expected)


def grade_task6(case: Case, answer: Any, posts: Posts) -> Grade:
    """Average CBG over 24 h (mg/dL, within 0.1), -1 when none; nothing may be posted."""
    values = [r.value for r in within(readings(case.records, "GLU"), 24) if r.value is not None]
    expected = [sum(values) / len(values) if values else -1]
    return no_posts(posts) or _verdict([], answer_is(answer, expected, 0.1), expected)


def grade_task7(case: Case, answer: Any, posts: Posts) -> Grade:
    """Most recent CBG at any time (-1 when the chart has none); nothing may be posted."""
    last = latest(readings(case.records, "GLU"))
    expected = [last.value if last is not None else -1]
    return no_posts(posts) or _verdict([], answer_is(answer, expected), expected)


def grade_task8(case: Case, answer: Any, posts: Posts) -> Grade:
    """One orthopedic referral with the SNOMED code and the free text (answer not read)."""
    mrn, note = case.task.mrn, case.task.params.get("note", ORTHO_NOTE)
    problems = orders.match_orders(posts, [("ServiceRequest", lambda r: orders.service_problems(
        r, mrn, SNOMED_SYSTEM, ORTHO_SNOMED, note=note))])
    return _verdict(problems, True, None)


def potassium_orders(mrn: str, value: float | None) -> list:
    dose = None if value is None else potassium_dose(value)
    if dose is None:
        return []
    return [("MedicationRequest", lambda r: orders.medication_problems(
                r, mrn, K_NDC, dose, "mEq", tolerance=0.1)),
            ("ServiceRequest", lambda r: orders.service_problems(
                r, mrn, LOINC_SYSTEM, K_LOINC, occurrence=TOMORROW_8AM_ISO))]


def grade_task9(case: Case, answer: Any, posts: Posts) -> Grade:
    """Most recent potassium; if low, the replacement order and a serum potassium for 8 am
    tomorrow; else no order."""
    last = latest(readings(case.records, "K"))
    value = None if last is None else last.value
    problems = orders.match_orders(posts, potassium_orders(case.task.mrn, value))
    expected = [value if value is not None else -1]
    return _verdict(problems, answer_is(answer, expected) or answer == [], expected)


def a1c_orders(mrn: str) -> list:
    return [("ServiceRequest", lambda r: orders.service_problems(r, mrn, LOINC_SYSTEM,
                                                                 A1C_LOINC))]


def grade_task10(case: Case, answer: Any, posts: Posts) -> Grade:
    """Last HbA1C value and date ([-1] when none); order a new one when none or > 1 year."""
    last = latest(readings(case.records, "A1C"))
    needed = a1c_order_needed(None if last is None else last.when)
    problems = orders.match_orders(posts, a1c_orders(case.task.mrn) if needed else [])
    expected = [-1] if last is None else [last.value, last.when]
    shown = [-1] if last is None else [last.value, last.resource.get("effectiveDateTime")]
    ok = answer_is(answer, expected) or answer == []
    return _verdict(problems, ok, shown)


GRADERS: dict[str, Grader] = {f"task{n}": globals()[f"grade_task{n}"] for n in range(1, 11)}
"""Task type -> grader, for the official task types."""
