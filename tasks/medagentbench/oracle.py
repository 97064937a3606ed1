"""The reference policy: solves every task through the API, one action at a time.

An oracle plan sees only what an agent sees: the task and the parsed bodies of the
responses so far. It reads the chart with one search (using the date prefixes, ``_sort``
and ``_count`` of the server), decides by the rule the context states, posts the orders one
per turn, then finishes. Plans share the decision rules with the graders (`rules`) but not
the chart: a search bug or a wrong chart makes the oracle fail its grader.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from datetime import date, timedelta
from typing import Any

from tasks.medagentbench import orders
from tasks.medagentbench.branches import ASPIRIN_NDC, ASPIRIN_TEXT
from tasks.medagentbench.clinical import (A1C_LOINC, K_LOINC, K_NDC, LOINC_SYSTEM, MG_NDC, NOW,
                                          ORTHO_NOTE, ORTHO_SNOMED, PENICILLIN_ALLERGY_SNOMED,
                                          SNOMED_SYSTEM, TOMORROW_8AM_ISO, age_on, iso,
                                          parse_instant)
from tasks.medagentbench.grading import TaskDef
from tasks.medagentbench.records import COLONOSCOPY_CPT
from tasks.medagentbench.rules import (TEN_YEARS_AGO, a1c_order_needed, bp_is_high,
                                       enoxaparin_mg, mg_dose, mg_to_mgdl, potassium_dose,
                                       weight_kg)
from tasks.medagentbench.v3_texts import (AMOXICILLIN_NDC, AZITHROMYCIN_NDC, CPT_SYSTEM,
                                          CREATININE_LOINC, DEXTROSE_NDC, ENOXAPARIN_NDC,
                                          REFERRAL_SYSTEM)

Resource = dict[str, Any]
Orders = list[tuple[str, Resource]]
Decide = Callable[[TaskDef, list[Resource]], tuple[Orders, list]]
SINCE_24H = iso(NOW - timedelta(hours=24))


def entries(bundle: Any) -> list[Resource]:
    if not isinstance(bundle, dict):
        return []
    return [e["resource"] for e in bundle.get("entry") or [] if "resource" in e]


def newest(resources: list[Resource], field: str = "effectiveDateTime") -> Resource | None:
    dated = [(parse_instant(r.get(field, "")), r) for r in resources]
    dated = [(when, r) for when, r in dated if when is not None]
    return max(dated, key=lambda pair: pair[0])[1] if dated else None


def _quantity(resource: Resource | None) -> tuple[float, str] | None:
    if resource is None or "valueQuantity" not in resource:
        return None
    quantity = resource["valueQuantity"]
    return float(quantity["value"]), str(quantity.get("unit", ""))


def plan(query: str | None, decide: Decide) -> Callable[[TaskDef, Sequence[Any], str], str]:
    """An oracle that GETs `query` (formatted with the task's MRN and params) unless its
    answer is already in the conversation, places each order `decide` returns that has not
    been accepted yet, then finishes with the answer. It acts correctly from any state an
    agent left (extra GETs, rejected POSTs), short of a wrong order already accepted."""
    def act(task: TaskDef, exchanges: Sequence[Any], api_base: str) -> str:
        found: list[Resource] = []
        if query is not None:
            url = f"{api_base}{query.format(mrn=task.mrn, **task.params)}"
            reply = next((e for e in exchanges if e.method == "GET" and e.url == url
                          and e.status < 400), None)
            if reply is None:
                return f"GET {url}"
            found = entries(reply.body)
        posts, answer = decide(task, found)
        accepted = [e.sent for e in exchanges if e.method == "POST" and e.status < 400]
        for resource_type, payload in posts:
            if payload in accepted:
                accepted.remove(payload)
                continue
            return f"POST {api_base}{resource_type}\n{json.dumps(payload)}"
        return f"FINISH({json.dumps(answer)})"
    return act


def _lookup(task: TaskDef, found: list[Resource]) -> tuple[Orders, list]:
    name = task.params["name"]
    for patient in found:
        given = " ".join((patient.get("name") or [{}])[0].get("given") or [])
        if f"{given} {(patient.get('name') or [{}])[0].get('family', '')}" == name:
            return [], [patient["id"]]
    return [], ["Patient not found"]


def _age(task: TaskDef, found: list[Resource]) -> tuple[Orders, list]:
    return [], [age_on(date.fromisoformat(found[0]["birthDate"]), NOW.date())]


def _record_bp(task: TaskDef, found: list[Resource]) -> tuple[Orders, list]:
    return [("Observation", orders.vitals_observation(task.mrn, "BP", task.params["bp"]))], []


def _referral(task: TaskDef, found: list[Resource]) -> tuple[Orders, list]:
    note = task.params.get("note", ORTHO_NOTE)
    return [("ServiceRequest", orders.service_request(
        task.mrn, SNOMED_SYSTEM, ORTHO_SNOMED, "Orthopedic surgery referral", note=note))], []


def _mg_value(found: list[Resource]) -> float | None:
    quantity = _quantity(newest(found))
    return None if quantity is None else round(mg_to_mgdl(*quantity), 4)


def _mg_query(task: TaskDef, found: list[Resource]) -> tuple[Orders, list]:
    value = _mg_value(found)
    return [], [value if value is not None else -1]


def _mg_replace(task: TaskDef, found: list[Resource]) -> tuple[Orders, list]:
    value = _mg_value(found)
    dose = None if value is None else mg_dose(value)
    posts = [] if dose is None else [("MedicationRequest", orders.medication_request(
        task.mrn, MG_NDC, "magnesium sulfate in water IV", dose[0], "g", "IV",
        rate=(dose[1], "h")))]
    return posts, [value if value is not None else -1]


def _glucose_mean(task: TaskDef, found: list[Resource]) -> tuple[Orders, list]:
    values = [_quantity(r)[0] for r in found if _quantity(r)]
    return [], [sum(values) / len(values) if values else -1]


def _latest_value(task: TaskDef, found: list[Resource]) -> tuple[Orders, list]:
    quantity = _quantity(newest(found))
    return [], [quantity[0] if quantity else -1]


def _potassium(task: TaskDef, found: list[Resource]) -> tuple[Orders, list]:
    quantity = _quantity(newest(found))
    dose = None if quantity is None else potassium_dose(quantity[0])
    posts = [] if dose is None else [
        ("MedicationRequest", orders.medication_request(
            task.mrn, K_NDC, "potassium chloride oral", dose, "mEq", "oral")),
        ("ServiceRequest", orders.service_request(
            task.mrn, LOINC_SYSTEM, K_LOINC, "Potassium, serum", occurrence=TOMORROW_8AM_ISO))]
    return posts, [quantity[0] if quantity else -1]


def _a1c(task: TaskDef, found: list[Resource]) -> tuple[Orders, list]:
    last = newest(found)
    when = None if last is None else parse_instant(last["effectiveDateTime"])
    posts = [("ServiceRequest", orders.service_request(
        task.mrn, LOINC_SYSTEM, A1C_LOINC, "Hemoglobin A1C"))] if a1c_order_needed(when) else []
    answer = [-1] if last is None else [_quantity(last)[0], last["effectiveDateTime"]]
    return posts, answer


def _antibiotic(task: TaskDef, found: list[Resource]) -> tuple[Orders, list]:
    allergic = bool(found)
    ndc, text = (AZITHROMYCIN_NDC, "azithromycin 500 mg oral") if allergic else (
        AMOXICILLIN_NDC, "amoxicillin 500 mg oral")
    return [("MedicationRequest", orders.medication_request(task.mrn, ndc, text, 500, "mg",
                                                            "oral"))], []


def _threshold(code_system: str, code: str, display: str, is_due: Callable[[float], bool],
               occurrence: str | None = None) -> Decide:
    def decide(task: TaskDef, found: list[Resource]) -> tuple[Orders, list]:
        quantity = _quantity(newest(found))
        due = quantity is not None and is_due(quantity[0])
        posts = [("ServiceRequest", orders.service_request(
            task.mrn, code_system, code, display, occurrence=occurrence))] if due else []
        return posts, [quantity[0] if quantity else -1]
    return decide


def _mg_converted(task: TaskDef, found: list[Resource]) -> tuple[Orders, list]:
    value = _mg_value(found)
    return [], [round(value, 2) if value is not None else -1]


def _dextrose(task: TaskDef, found: list[Resource]) -> tuple[Orders, list]:
    quantity = _quantity(newest(found))
    low = quantity is not None and quantity[0] < 70
    posts = [("MedicationRequest", orders.medication_request(
        task.mrn, DEXTROSE_NDC, "dextrose 50% IV", 25, "g", "IV"))] if low else []
    return posts, [quantity[0] if quantity else -1]


def _aspirin(task: TaskDef, found: list[Resource]) -> tuple[Orders, list]:
    active = newest(found, "authoredOn")
    if active is not None:
        return [], [active["authoredOn"]]
    return [("MedicationRequest", orders.medication_request(
        task.mrn, ASPIRIN_NDC, ASPIRIN_TEXT, 81, "mg", "oral"))], []


def _enoxaparin(task: TaskDef, found: list[Resource]) -> tuple[Orders, list]:
    kg = weight_kg(*_quantity(newest(found)))
    return [("MedicationRequest", orders.medication_request(
        task.mrn, ENOXAPARIN_NDC, "enoxaparin subcutaneous", enoxaparin_mg(kg), "mg",
        "subcutaneous"))], [round(kg, 2)]


def _blood_pressure(task: TaskDef, found: list[Resource]) -> tuple[Orders, list]:
    last = newest(found)
    if last is None:
        return [], [-1]
    posts = [("ServiceRequest", orders.service_request(
        task.mrn, REFERRAL_SYSTEM, "hypertension-clinic", "Hypertension clinic referral"))
    ] if bp_is_high(last["valueString"]) else []
    return posts, [last["valueString"]]


def _high_glucose(task: TaskDef, found: list[Resource]) -> tuple[Orders, list]:
    count = sum(1 for r in found if _quantity(r) and _quantity(r)[0] > 180)
    posts = [("ServiceRequest", orders.service_request(
        task.mrn, REFERRAL_SYSTEM, "glycemic-management", "Glycemic management consult"))
    ] if count >= 2 else []
    return posts, [count]


def _colonoscopy(task: TaskDef, found: list[Resource]) -> tuple[Orders, list]:
    last = newest(found, "performedDateTime")
    when = None if last is None else parse_instant(last["performedDateTime"])
    posts = [("ServiceRequest", orders.service_request(
        task.mrn, CPT_SYSTEM, COLONOSCOPY_CPT, "Screening colonoscopy"))
    ] if when is None or when < TEN_YEARS_AGO else []
    return posts, [-1] if last is None else [last["performedDateTime"]]


_LAB = "Observation?patient={mrn}&code=%s&_sort=-date&_count=1000"
_LAB_24H = "Observation?patient={mrn}&code=%s&date=ge" + SINCE_24H + "&_sort=-date&_count=1000"
ORACLES = {
    "task1": plan("Patient?birthdate={dob}&_count=1000", _lookup),
    "task2": plan("Patient?identifier={mrn}", _age),
    "task3": plan(None, _record_bp),
    "task4": plan(_LAB_24H % "MG", _mg_query),
    "task5": plan(_LAB_24H % "MG", _mg_replace),
    "task6": plan(_LAB_24H % "GLU", _glucose_mean),
    "task7": plan(_LAB % "GLU", _latest_value),
    "task8": plan(None, _referral),
    "task9": plan(_LAB % "K", _potassium),
    "task10": plan(_LAB % "A1C", _a1c),
    "task11": plan("Condition?patient={mrn}&category=problem-list-item&code="
                   + PENICILLIN_ALLERGY_SNOMED, _antibiotic),
    "task12": plan(_LAB % "CREAT", _threshold(LOINC_SYSTEM, CREATININE_LOINC, "Creatinine",
                                              lambda v: v > 1.3, TOMORROW_8AM_ISO)),
    "task13": plan(_LAB_24H % "MG", _mg_converted),
    "task14": plan(_LAB % "A1C", _threshold(REFERRAL_SYSTEM, "endocrinology",
                                            "Endocrinology referral", lambda v: v >= 9.0)),
    "task15": plan(_LAB_24H % "GLU", _dextrose),
    "task16": plan("MedicationRequest?patient={mrn}&code=" + ASPIRIN_NDC + "&status=active",
                   _aspirin),
    "task17": plan(_LAB % "WT", _enoxaparin),
    "task18": plan(_LAB % "BP", _blood_pressure),
    "task19": plan(_LAB_24H % "GLU", _high_glucose),
    "task20": plan("Procedure?patient={mrn}&code=" + COLONOSCOPY_CPT + "&date=ge1900-01-01",
                   _colonoscopy),
}
"""Task type -> oracle ``(task, exchanges, api_base) -> action text``."""
