"""Graders of the 20 v3 task types.

Every grader checks both sides: the orders the branch requires were placed exactly as the
context states, and nothing else was posted (an unrequested order fails the task). On
no-action branches the answer must report the value the decision rests on; the empty
answer ``[]`` is accepted only where the context asks for it (order-only tasks and the
"order placed" branch of task16). So ``FINISH([])`` and ``FINISH([-1])`` pass only the
branches whose true answer is "no data, nothing to do" (at most 2 of 25 per type).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tasks.medagentbench import graders_v1 as v1
from tasks.medagentbench import orders
from tasks.medagentbench.branches import ASPIRIN_NDC
from tasks.medagentbench.clinical import (CPT_SYSTEM, LOINC_SYSTEM, PENICILLIN_ALLERGY_SNOMED,
                                          TOMORROW_8AM_ISO, parse_instant)
from tasks.medagentbench.grading import (PASS, Case, Grade, Grader, answer_is, fail, latest,
                                         readings, within)
from tasks.medagentbench.records import COLONOSCOPY_CPT
from tasks.medagentbench.rules import (TEN_YEARS_AGO, a1c_order_needed, bp_is_high,
                                       enoxaparin_mg, weight_kg)
from tasks.medagentbench.v3_texts import (AMOXICILLIN_NDC, AZITHROMYCIN_NDC, CREATININE_LOINC,
                                          DEXTROSE_NDC, ENOXAPARIN_NDC, REFERRAL_SYSTEM)

Posts = Sequence[dict[str, Any]]


def _grade(posts: Posts, expected_orders: list, answer_ok: bool, expected: Any) -> Grade:
    problems = orders.match_orders(posts, expected_orders)
    if problems:
        return fail("; ".join(problems))
    return PASS if answer_ok else fail(f"answer must be {expected}")


def _value_or_minus_one(reading: Any) -> list:
    return [reading.value] if reading is not None and reading.value is not None else [-1]


def grade_task1(case: Case, answer: Any, posts: Posts) -> Grade:
    expected = list(case.task.sol or ())
    return _grade(posts, [], answer_is(answer, expected), expected)


def grade_task2(case: Case, answer: Any, posts: Posts) -> Grade:
    age = v1.patient_age(case)
    return _grade(posts, [], age is not None and answer_is(answer, [age]), [age])


grade_task3 = v1.grade_task3
grade_task8 = v1.grade_task8


def grade_task4(case: Case, answer: Any, posts: Posts) -> Grade:
    value = v1.recent_mg(case)
    expected = [value if value is not None else -1]
    return _grade(posts, [], answer_is(answer, expected), expected)


def grade_task5(case: Case, answer: Any, posts: Posts) -> Grade:
    value = v1.recent_mg(case)
    expected = [value if value is not None else -1]
    return _grade(posts, v1.magnesium_orders(case.task.mrn, value), answer_is(answer, expected),
                  expected)


def grade_task6(case: Case, answer: Any, posts: Posts) -> Grade:
    values = [r.value for r in within(readings(case.records, "GLU"), 24) if r.value is not None]
    expected = [sum(values) / len(values) if values else -1]
    return _grade(posts, [], answer_is(answer, expected, 0.1), expected)


def grade_task7(case: Case, answer: Any, posts: Posts) -> Grade:
    expected = _value_or_minus_one(latest(readings(case.records, "GLU")))
    return _grade(posts, [], answer_is(answer, expected), expected)


def grade_task9(case: Case, answer: Any, posts: Posts) -> Grade:
    last = latest(readings(case.records, "K"))
    expected = _value_or_minus_one(last)
    return _grade(posts, v1.potassium_orders(case.task.mrn, None if last is None else last.value),
                  answer_is(answer, expected), expected)


def grade_task10(case: Case, answer: Any, posts: Posts) -> Grade:
    last = latest(readings(case.records, "A1C"))
    needed = a1c_order_needed(None if last is None else last.when)
    expected = [-1] if last is None else [last.value, last.when]
    return _grade(posts, v1.a1c_orders(case.task.mrn) if needed else [],
                  answer_is(answer, expected), expected)


def grade_task11(case: Case, answer: Any, posts: Posts) -> Grade:
    """Amoxicillin unless a penicillin allergy is on the problem list, then azithromycin."""
    allergic = any(r.get("resourceType") == "Condition" and any(
        c.get("code") == PENICILLIN_ALLERGY_SNOMED for c in (r.get("code") or {}).get("coding", []))
        for r in case.records)
    ndc = AZITHROMYCIN_NDC if allergic else AMOXICILLIN_NDC
    expected = [("MedicationRequest", lambda r: orders.medication_problems(
        r, case.task.mrn, ndc, 500, "mg", route="oral"))]
    return _grade(posts, expected, True, None)


def _service(mrn: str, system: str, code: str, occurrence: str | None = None) -> list:
    return [("ServiceRequest", lambda r: orders.service_problems(r, mrn, system, code,
                                                                 occurrence=occurrence))]


def grade_task12(case: Case, answer: Any, posts: Posts) -> Grade:
    """Repeat creatinine for 8 am tomorrow when the latest is above 1.3 mg/dL."""
    last = latest(readings(case.records, "CREAT"))
    high = last is not None and last.value is not None and last.value > 1.3
    expected = _service(case.task.mrn, LOINC_SYSTEM, CREATININE_LOINC, TOMORROW_8AM_ISO) \
        if high else []
    return _grade(posts, expected, answer_is(answer, _value_or_minus_one(last)),
                  _value_or_minus_one(last))


def grade_task13(case: Case, answer: Any, posts: Posts) -> Grade:
    """Magnesium of the last 24 h converted to mg/dL (within 0.05), -1 when none."""
    value = v1.recent_mg(case)
    expected = [value if value is not None else -1]
    return _grade(posts, [], answer_is(answer, expected, 0.05), expected)


def grade_task14(case: Case, answer: Any, posts: Posts) -> Grade:
    """Endocrinology referral when the latest HbA1C is >= 9.0%."""
    last = latest(readings(case.records, "A1C"))
    high = last is not None and last.value is not None and last.value >= 9.0
    expected = _service(case.task.mrn, REFERRAL_SYSTEM, "endocrinology") if high else []
    return _grade(posts, expected, answer_is(answer, _value_or_minus_one(last)),
                  _value_or_minus_one(last))


def grade_task15(case: Case, answer: Any, posts: Posts) -> Grade:
    """IV dextrose when the latest CBG of the last 24 h is below 70 mg/dL."""
    last = latest(within(readings(case.records, "GLU"), 24))
    low = last is not None and last.value is not None and last.value < 70
    expected = [("MedicationRequest", lambda r: orders.medication_problems(
        r, case.task.mrn, DEXTROSE_NDC, 25, "g", route="IV"))] if low else []
    return _grade(posts, expected, answer_is(answer, _value_or_minus_one(last)),
                  _value_or_minus_one(last))


def _active_aspirin(case: Case) -> dict | None:
    active = [r for r in case.records if r.get("resourceType") == "MedicationRequest"
              and r.get("status") == "active" and any(
                  c.get("code") == ASPIRIN_NDC
                  for c in (r.get("medicationCodeableConcept") or {}).get("coding", []))]
    return max(active, key=lambda r: r["authoredOn"]) if active else None


def grade_task16(case: Case, answer: Any, posts: Posts) -> Grade:
    """No second order when an active aspirin order exists (answer its date); else order."""
    active = _active_aspirin(case)
    if active is not None:
        when = parse_instant(active["authoredOn"])
        return _grade(posts, [], answer_is(answer, [when]), [active["authoredOn"]])
    expected = [("MedicationRequest", lambda r: orders.medication_problems(
        r, case.task.mrn, ASPIRIN_NDC, 81, "mg", route="oral"))]
    return _grade(posts, expected, answer == [], [])


def grade_task17(case: Case, answer: Any, posts: Posts) -> Grade:
    """Enoxaparin 40 mg (30 mg under 50 kg) by the latest weight; answer the weight in kg."""
    last = latest(readings(case.records, "WT"))
    if last is None or last.value is None:
        return fail("the chart has no weight (a generator bug: every task17 chart has one)")
    kg = weight_kg(last.value, last.unit)
    expected = [("MedicationRequest", lambda r: orders.medication_problems(
        r, case.task.mrn, ENOXAPARIN_NDC, enoxaparin_mg(kg), "mg", route="subcutaneous"))]
    return _grade(posts, expected, answer_is(answer, [kg], 0.2), [round(kg, 1)])


def grade_task18(case: Case, answer: Any, posts: Posts) -> Grade:
    """Hypertension-clinic referral when the latest BP is >= 140 systolic or >= 90
    diastolic; answer the reading as recorded."""
    last = latest(readings(case.records, "BP"))
    if last is None:
        return _grade(posts, [], answer_is(answer, [-1]), [-1])
    expected = _service(case.task.mrn, REFERRAL_SYSTEM, "hypertension-clinic") \
        if bp_is_high(last.text) else []
    return _grade(posts, expected, answer_is(answer, [last.text]), [last.text])


def grade_task19(case: Case, answer: Any, posts: Posts) -> Grade:
    """Count CBGs above 180 in 24 h; a glycemic consult when there are two or more."""
    count = sum(1 for r in within(readings(case.records, "GLU"), 24)
                if r.value is not None and r.value > 180)
    expected = _service(case.task.mrn, REFERRAL_SYSTEM, "glycemic-management") \
        if count >= 2 else []
    return _grade(posts, expected, answer_is(answer, [count]), [count])


def grade_task20(case: Case, answer: Any, posts: Posts) -> Grade:
    """Screening colonoscopy order when none in the last 10 years; answer the last date."""
    last = latest(readings(case.records, COLONOSCOPY_CPT, "Procedure"))
    due = last is None or last.when < TEN_YEARS_AGO
    expected_answer = [-1] if last is None else [last.when]
    shown = [-1] if last is None else [last.resource.get("performedDateTime")]
    return _grade(posts, _service(case.task.mrn, CPT_SYSTEM, COLONOSCOPY_CPT) if due else [],
                  answer_is(answer, expected_answer), shown)


GRADERS: dict[str, Grader] = {f"task{n}": globals()[f"grade_task{n}"] for n in range(1, 21)}
"""Task type -> grader, for the v3 task types."""
