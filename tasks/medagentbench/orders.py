"""The orders the tasks ask for: payload builders (used by the oracle) and checkers (used by
the graders). A checker returns the list of problems with a posted resource (empty: the
order is right); it checks only what the task's context and funcs_v1.json specify."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tasks.medagentbench.clinical import NDC_SYSTEM, NOW, NOW_ISO, VITALS_CATEGORY, parse_instant

Resource = dict[str, Any]


# -- builders ----------------------------------------------------------------------------------
def vitals_observation(mrn: str, code: str, value_string: str) -> Resource:
    return {"resourceType": "Observation", "category": [{"coding": [dict(VITALS_CATEGORY)]}],
            "code": {"text": code}, "effectiveDateTime": NOW_ISO, "status": "final",
            "valueString": value_string, "subject": {"reference": f"Patient/{mrn}"}}


def medication_request(mrn: str, ndc: str, text: str, dose: float, unit: str, route: str,
                       rate: tuple[float, str] | None = None) -> Resource:
    dose_and_rate: dict[str, Any] = {"doseQuantity": {"value": dose, "unit": unit}}
    if rate is not None:
        dose_and_rate["rateQuantity"] = {"value": rate[0], "unit": rate[1]}
    return {"resourceType": "MedicationRequest",
            "medicationCodeableConcept": {"coding": [{"system": NDC_SYSTEM, "code": ndc,
                                                      "display": text}], "text": text},
            "authoredOn": NOW_ISO,
            "dosageInstruction": [{"route": {"text": route}, "doseAndRate": [dose_and_rate]}],
            "status": "active", "intent": "order", "subject": {"reference": f"Patient/{mrn}"}}


def service_request(mrn: str, system: str, code: str, display: str, *,
                    note: str | None = None, occurrence: str | None = None) -> Resource:
    resource: Resource = {
        "resourceType": "ServiceRequest",
        "code": {"coding": [{"system": system, "code": code, "display": display}]},
        "authoredOn": NOW_ISO, "status": "active", "intent": "order", "priority": "stat",
        "subject": {"reference": f"Patient/{mrn}"}}
    if note is not None:
        resource["note"] = [{"text": note}]
    if occurrence is not None:
        resource["occurrenceDateTime"] = occurrence
    return resource


# -- checkers ----------------------------------------------------------------------------------
def _get(resource: Any, *path: Any) -> Any:
    for key in path:
        if isinstance(key, int):
            if not isinstance(resource, list) or len(resource) <= key:
                return None
        elif not isinstance(resource, dict):
            return None
        resource = resource[key] if isinstance(key, int) else resource.get(key)
    return resource


def _codings(concept: Any) -> list[tuple[Any, Any]]:
    return [(c.get("system"), c.get("code")) for c in _get(concept, "coding") or []
            if isinstance(c, dict)]


def _at_now(value: Any) -> bool:
    when = parse_instant(value) if isinstance(value, str) else None
    return when is not None and abs((when - NOW).total_seconds()) < 60


def _is_number(value: Any, expected: float, tolerance: float) -> bool:
    return (isinstance(value, (int, float)) and not isinstance(value, bool)
            and abs(value - expected) <= tolerance + 1e-9)


def common_problems(resource: Resource, mrn: str, time_field: str) -> list[str]:
    problems = []
    if _get(resource, "subject", "reference") != f"Patient/{mrn}":
        problems.append(f"subject must be Patient/{mrn}")
    if not _at_now(resource.get(time_field)):
        problems.append(f"{time_field} must be now ({NOW_ISO})")
    return problems


def vitals_problems(resource: Resource, mrn: str, code: str, value_string: str) -> list[str]:
    problems = common_problems(resource, mrn, "effectiveDateTime")
    categories = [c for entry in resource.get("category") or []
                  for c in (_get(entry, "coding") or [])]
    if not any(isinstance(c, dict) and c.get("code") == VITALS_CATEGORY["code"]
               for c in categories):
        problems.append("category must be vital-signs")
    if _get(resource, "code", "text") != code:
        problems.append(f"code.text must be {code!r}")
    if resource.get("status") != "final":
        problems.append("status must be final")
    if resource.get("valueString") != value_string:
        problems.append(f"valueString must be {value_string!r}")
    return problems


def medication_problems(resource: Resource, mrn: str, ndc: str, dose: float, unit: str, *,
                        route: str | None = None, rate: tuple[float, str] | None = None,
                        tolerance: float = 1e-6) -> list[str]:
    """Problems of a MedicationRequest against the order the task asks for."""
    problems = common_problems(resource, mrn, "authoredOn")
    if (NDC_SYSTEM, ndc) not in _codings(resource.get("medicationCodeableConcept")):
        problems.append(f"medication must be NDC {ndc}")
    if resource.get("status") != "active" or resource.get("intent") != "order":
        problems.append("status must be active and intent order")
    instruction = _get(resource, "dosageInstruction", 0)
    quantity = _get(instruction, "doseAndRate", 0, "doseQuantity") or {}
    if not _is_number(quantity.get("value"), dose, tolerance) or quantity.get("unit") != unit:
        problems.append(f"doseQuantity must be {dose} {unit}")
    if rate is not None:
        given = _get(instruction, "doseAndRate", 0, "rateQuantity") or {}
        if not _is_number(given.get("value"), rate[0], 1e-6) or given.get("unit") != rate[1]:
            problems.append(f"rateQuantity must be {rate[0]} {rate[1]}")
    if route is not None:
        text = _get(instruction, "route", "text")
        if not isinstance(text, str) or text.strip().lower() != route.lower():
            problems.append(f"route.text must be {route!r}")
    return problems


def note_text(resource: Resource) -> str:
    note = resource.get("note")
    notes = note if isinstance(note, list) else [note]
    return "\n".join(n.get("text", "") for n in notes if isinstance(n, dict)
                     and isinstance(n.get("text"), str))


def service_problems(resource: Resource, mrn: str, system: str, code: str, *,
                     occurrence: str | None = None, note: str | None = None,
                     priority: str | None = "stat") -> list[str]:
    """Problems of a ServiceRequest against the order the task asks for."""
    problems = common_problems(resource, mrn, "authoredOn")
    if (system, code) not in _codings(resource.get("code")):
        problems.append(f"code must be {system}|{code}")
    if resource.get("status") != "active" or resource.get("intent") != "order":
        problems.append("status must be active and intent order")
    if priority is not None and resource.get("priority") != priority:
        problems.append(f"priority must be {priority}")
    if occurrence is not None:
        when = parse_instant(resource.get("occurrenceDateTime") or "")
        if when is None or when != parse_instant(occurrence):
            problems.append(f"occurrenceDateTime must be {occurrence}")
    if note is not None and note not in note_text(resource):
        problems.append("note must contain the requested free text")
    return problems


def match_orders(posts: Sequence[Resource], expected: Sequence[tuple[str, Any]]) -> list[str]:
    """Problems when `posts` is not exactly the `expected` orders (any order of posting).

    `expected`: ``(resourceType, check)`` where ``check(resource) -> problems``. Every
    expected order must be matched by one post, and no post may be left over (an
    unrequested order fails the task).
    """
    remaining = list(posts)
    problems = []
    for resource_type, check in expected:
        candidates = [p for p in remaining if p.get("resourceType") == resource_type]
        if not candidates:
            problems.append(f"missing {resource_type} order")
            continue
        results = [(check(p), p) for p in candidates]
        good = [p for found, p in results if not found]
        if good:
            remaining.remove(good[0])
        else:
            problems.append(f"{resource_type}: " + "; ".join(results[0][0]))
            remaining.remove(results[0][1])
    if remaining and not problems:
        problems.append(f"{len(remaining)} unrequested order(s): "
                        + ", ".join(p.get("resourceType", "?") for p in remaining))
    return problems
