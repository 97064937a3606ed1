"""The reference policy of the @2 suites: orders in the reference grader's conventions.

The same plans as `oracle` (one search, the stated rule, one order per turn, then FINISH),
with the payloads the reference grader accepts: a medication ``route`` as a plain string,
a ServiceRequest ``note`` as one object, the answer values as recorded (magnesium not
converted). `oracle.ORACLES` keeps the payloads as ``funcs_v1.json`` documents them.
"""

from __future__ import annotations

from typing import Any

from tasks.medagentbench.clinical import (A1C_LOINC, K_LOINC, K_NDC, LOINC_SYSTEM, MG_NDC,
                                          NDC_SYSTEM, NOW_ISO, ORTHO_NOTE, ORTHO_SNOMED,
                                          SNOMED_SYSTEM, TOMORROW_8AM_ISO, parse_instant)
from tasks.medagentbench.grading import TaskDef
from tasks.medagentbench.oracle import _LAB, _LAB_24H, ORACLES, _quantity, newest, plan
from tasks.medagentbench.rules import a1c_order_needed, potassium_dose

Resource = dict[str, Any]
Orders = list[tuple[str, Resource]]


def medication_order(mrn: str, ndc: str, dose: float, unit: str, route: str,
                     rate: tuple[float, str] | None = None) -> Resource:
    dose_and_rate: dict[str, Any] = {"doseQuantity": {"value": dose, "unit": unit}}
    if rate is not None:
        dose_and_rate["rateQuantity"] = {"value": rate[0], "unit": rate[1]}
    return {"resourceType": "MedicationRequest",
            "medicationCodeableConcept": {"coding": [{"system": NDC_SYSTEM, "code": ndc}]},
            "authoredOn": NOW_ISO,
            "dosageInstruction": [{"route": route, "doseAndRate": [dose_and_rate]}],
            "status": "active", "intent": "order", "subject": {"reference": f"Patient/{mrn}"}}


def service_order(mrn: str, system: str, code: str, *, note: str | None = None,
                  occurrence: str | None = None) -> Resource:
    resource: Resource = {
        "resourceType": "ServiceRequest", "code": {"coding": [{"system": system, "code": code}]},
        "authoredOn": NOW_ISO, "status": "active", "intent": "order", "priority": "stat",
        "subject": {"reference": f"Patient/{mrn}"}}
    if note is not None:
        resource["note"] = {"text": note}
    if occurrence is not None:
        resource["occurrenceDateTime"] = occurrence
    return resource


def magnesium_grams(value: float) -> int | None:
    """The dosing table as the reference grader applies it (an order at 1.9 and below)."""
    if value > 1.9:
        return None
    return 4 if value < 1 else 2 if value < 1.5 else 1


def _mg_replace(task: TaskDef, found: list[Resource]) -> tuple[Orders, list]:
    quantity = _quantity(newest(found))
    grams = None if quantity is None else magnesium_grams(quantity[0])
    posts = [] if grams is None else [("MedicationRequest", medication_order(
        task.mrn, MG_NDC, grams, "g", "IV", rate=(grams, "h")))]
    return posts, [quantity[0] if quantity else -1]


def _mg_query(task: TaskDef, found: list[Resource]) -> tuple[Orders, list]:
    quantity = _quantity(newest(found))
    return [], [quantity[0] if quantity else -1]


def _referral(task: TaskDef, found: list[Resource]) -> tuple[Orders, list]:
    return [("ServiceRequest", service_order(task.mrn, SNOMED_SYSTEM, ORTHO_SNOMED,
                                             note=task.params.get("note", ORTHO_NOTE)))], []


def _potassium(task: TaskDef, found: list[Resource]) -> tuple[Orders, list]:
    quantity = _quantity(newest(found))
    dose = None if quantity is None else potassium_dose(quantity[0])
    posts = [] if dose is None else [
        ("MedicationRequest", medication_order(task.mrn, K_NDC, dose, "mEq", "oral")),
        ("ServiceRequest", service_order(task.mrn, LOINC_SYSTEM, K_LOINC,
                                         occurrence=TOMORROW_8AM_ISO))]
    return posts, [quantity[0] if quantity else -1]


def _a1c(task: TaskDef, found: list[Resource]) -> tuple[Orders, list]:
    last = newest(found)
    when = None if last is None else parse_instant(last["effectiveDateTime"])
    posts = ([("ServiceRequest", service_order(task.mrn, LOINC_SYSTEM, A1C_LOINC))]
             if a1c_order_needed(when) else [])
    answer = [-1] if last is None else [_quantity(last)[0], last["effectiveDateTime"]]
    return posts, answer


ORACLES_OFFICIAL = {
    **{t: ORACLES[t] for t in ("task1", "task2", "task3", "task6", "task7")},
    "task4": plan(_LAB_24H % "MG", _mg_query),
    "task5": plan(_LAB_24H % "MG", _mg_replace),
    "task8": plan(None, _referral),
    "task9": plan(_LAB % "K", _potassium),
    "task10": plan(_LAB % "A1C", _a1c),
}
"""Task type -> oracle ``(task, exchanges, api_base) -> action text`` for the @2 suites."""

__all__ = ["ORACLES_OFFICIAL", "magnesium_grams", "medication_order", "service_order"]
