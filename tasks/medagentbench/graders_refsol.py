"""Graders of the ten official task types with the reference grader's verdicts (suites @2).

Written by this project; their verdicts equal those of the benchmark's reference grader
(``refsol.py``, run unchanged against this project's FHIR server) on every case of the
differential fixture in ``tests/tasks/medagentbench/refsol_fixture/`` (provenance there).
A grader reads the transcript, not the server's state, because under the official protocol
POSTs are acknowledged and never executed. What decides a verdict:

- **mentions POST**: any agent turn whose text contains ``POST`` anywhere (a GET or a FINISH
  that mentions it counts). Query tasks (1, 2, 4, 6, 7) fail on it, and so do the branches
  of 5, 9 and 10 that order nothing.
- **accepted POSTs**: agent turns containing ``POST`` whose next message contains "POST
  request accepted"; the URL is the first line without its first four characters, stripped;
  the payload is the JSON of the remaining lines (a turn that does not parse is skipped). The
  agent's turn is read as written, not cleaned: a fenced POST has the fence as its URL. A
  final turn that mentions POST has no next message, and the reference grader then fails.
- **the answer**: the FINISH text parsed as JSON and compared with Python's ``==``
  (``2 == 2.0 == True``); tasks 5, 9 and 10 also accept ``[]``; task 6 takes a one-element
  list within 0.1; tasks 3 and 8 do not read it; task 5 with no magnesium reading in 24 h
  passes whatever it is when nothing was posted.
- **the chart** as the server lists it (matching Observations in storage order, values as
  recorded, units not converted): "latest" is the first reading with the greatest
  ``effectiveDateTime``; the 24 h window has no upper end. A chart the reference grader
  cannot read (a matching Observation without ``valueQuantity``) fails every answer.
- **orders**: exactly the number of accepted POSTs the branch needs, in order, each field
  compared as below (`ORDER_CHECKS`); a check that cannot be evaluated fails.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from typing import Any

from tasks.medagentbench.clinical import (A1C_LOINC, K_LOINC, K_NDC, LOINC_SYSTEM, MG_NDC,
                                          NDC_SYSTEM, NOW_ISO, ORTHO_NOTE, ORTHO_SNOMED,
                                          SNOMED_SYSTEM, age_on)
from tasks.medagentbench.grading import PASS, Case, Grade, fail
from tasks.medagentbench.official_protocol import Turn

ACCEPTED = "POST request accepted"
CLOCK = datetime.fromisoformat(NOW_ISO)
WINDOW_START = CLOCK - timedelta(hours=24)
A1C_DUE_BEFORE = datetime.fromisoformat("2022-11-13T10:15:00+00:00")
RefsolGrader = Callable[[Case, Sequence[Turn], str, str], Grade]
"""``grade(case, transcript, result, api_base) -> Grade``; `result` is the FINISH text."""


class _Fails(Exception):
    """The reference grader would fail here (a failed check or an error it swallows)."""


# -- the transcript ------------------------------------------------------------------------------
def mentions_post(turns: Sequence[Turn]) -> bool:
    return any(t.role == "agent" and "POST" in t.content for t in turns)


def accepted_posts(turns: Sequence[Turn]) -> list[tuple[str, Any]]:
    """(url, payload) of each acknowledged POST, in order (see the module docstring)."""
    posts = []
    for i, turn in enumerate(turns):
        if turn.role != "agent" or "POST" not in turn.content:
            continue
        if i + 1 >= len(turns):
            raise _Fails("the final turn mentions POST (the reference grader errors)")
        if ACCEPTED not in turns[i + 1].content:
            continue
        lines = turn.content.split("\n")
        try:
            payload = json.loads("\n".join(lines[1:]))
        except Exception:  # noqa: BLE001 - as the reference grader: any failure skips it
            continue
        posts.append((lines[0][4:].strip(), payload))
    return posts


def _answer(result: str) -> Any:
    try:
        return json.loads(result)
    except Exception:  # noqa: BLE001
        raise _Fails("the FINISH argument is not JSON") from None


# -- the chart -----------------------------------------------------------------------------------
def _has_code(resource: dict[str, Any], code: str) -> bool:
    concept = resource.get("code")
    concepts = concept if isinstance(concept, list) else [concept]
    found = set()
    for item in concepts:
        if isinstance(item, dict):
            found.add(str(item.get("text", "")).lower())
            found |= {str(c.get("code", "")).lower() for c in item.get("coding") or []
                      if isinstance(c, dict)}
    return code.lower() in found


def chart_readings(case: Case, code: str) -> list[tuple[datetime, Any, str]]:
    """(time, value, effectiveDateTime text) of the patient's `code` Observations, in the
    server's order (the chart's storage order)."""
    found = []
    for resource in case.records:
        if resource.get("resourceType") != "Observation" or not _has_code(resource, code):
            continue
        try:
            text = resource["effectiveDateTime"]
            found.append((datetime.fromisoformat(text), resource["valueQuantity"]["value"], text))
        except Exception:  # noqa: BLE001
            raise _Fails(f"a {code} reading the reference grader cannot read") from None
    return found


def latest(found: Sequence[tuple[datetime, Any, str]]) -> tuple[datetime, Any, str] | None:
    """The first reading with the greatest time (strictly later readings replace it)."""
    best = None
    for reading in found:
        if best is None or reading[0] > best[0]:
            best = reading
    return best


def in_window(found: Sequence[tuple[datetime, Any, str]]) -> list[tuple[datetime, Any, str]]:
    return [r for r in found if r[0] >= WINDOW_START]


# -- orders --------------------------------------------------------------------------------------
def _at(payload: Any, path: tuple) -> Any:
    for key in path:
        payload = payload[key]
    return payload


Check = tuple[tuple, Callable[[Any], bool]]


def _eq(value: Any) -> Callable[[Any], bool]:
    return lambda given: given == value


def _holds(text: str) -> Callable[[Any], bool]:
    return lambda given: text in given


def _subject(mrn: str) -> Check:
    return (("subject",), _eq({"reference": f"Patient/{mrn}"}))


def _order_fields(resource_type: str, mrn: str) -> list[Check]:
    return [(("resourceType",), _eq(resource_type)), (("status",), _eq("active")),
            (("intent",), _eq("order")), _subject(mrn)]


def vitals_checks(mrn: str, value: str) -> list[Check]:
    category = {"system": "http://hl7.org/fhir/observation-category", "code": "vital-signs",
                "display": "Vital Signs"}
    return [(("resourceType",), _eq("Observation")), (("category",), lambda c: len(c) == 1),
            (("category", 0, "coding"), lambda c: len(c) == 1),
            (("category", 0, "coding", 0), _eq(category)), (("code",), _eq({"text": "BP"})),
            (("effectiveDateTime",), _eq(NOW_ISO)), (("status",), _eq("final")),
            (("valueString",), _eq(value)), _subject(mrn)]


def service_checks(mrn: str, system: str, code: str) -> list[Check]:
    return _order_fields("ServiceRequest", mrn) + [
        (("code", "coding", 0, "system"), _eq(system)), (("code", "coding", 0, "code"), _eq(code)),
        (("authoredOn",), _eq(NOW_ISO)), (("priority",), _eq("stat"))]


def magnesium_checks(mrn: str, value: float) -> list[Check]:
    grams = 4 if value < 1 else 2 if value < 1.5 else 1
    return _order_fields("MedicationRequest", mrn) + [
        (("medicationCodeableConcept", "coding", 0, "system"), _eq(NDC_SYSTEM)),
        (("medicationCodeableConcept", "coding", 0, "code"), _eq(MG_NDC)),
        (("authoredOn",), _holds("2023-11-13T10:15")),
        (("dosageInstruction", 0, "route"), _eq("IV")),
        (("dosageInstruction", 0, "doseAndRate", 0, "doseQuantity"),
         _eq({"value": grams, "unit": "g"})),
        (("dosageInstruction", 0, "doseAndRate", 0, "rateQuantity"),
         _eq({"value": grams, "unit": "h"}))]


def potassium_checks(mrn: str, value: float) -> list[Check]:
    dose = (3.5 - value) / 0.1 * 10
    return _order_fields("MedicationRequest", mrn) + [
        (("medicationCodeableConcept", "coding", 0, "system"), _eq(NDC_SYSTEM)),
        (("medicationCodeableConcept", "coding", 0, "code"), _eq(K_NDC)),
        (("authoredOn",), _holds("2023-11-13T10:15")),
        (("dosageInstruction", 0, "route"), lambda r: r.lower().strip() == "oral"),
        (("dosageInstruction", 0, "doseAndRate", 0, "doseQuantity", "value"),
         lambda v: abs(v - dose) <= 0.1),
        (("dosageInstruction", 0, "doseAndRate", 0, "doseQuantity", "unit"), _eq("mEq"))]


def _check_orders(posts: list[tuple[str, Any]], wanted: list[tuple[str, list[Check]]],
                  api_base: str) -> None:
    """Raise `_Fails` unless `posts` are exactly `wanted`, in order, each passing its checks."""
    if len(posts) != len(wanted):
        raise _Fails(f"{len(posts)} accepted POST(s); exactly {len(wanted)} wanted")
    for (url, payload), (resource_type, checks) in zip(posts, wanted):
        if url != f"{api_base}{resource_type}":
            raise _Fails(f"POST to {url!r}; wanted {api_base}{resource_type}")
        for path, holds in checks:
            try:
                ok = holds(_at(payload, path))
            except Exception:  # noqa: BLE001 - a check that cannot be evaluated fails
                ok = False
            if not ok:
                raise _Fails(f"{resource_type} field {'.'.join(map(str, path))} is wrong")


def _no_post(turns: Sequence[Turn]) -> None:
    if mentions_post(turns):
        raise _Fails("a turn mentions POST where nothing may be ordered")


def _answer_is(result: str, expected: list, *, empty_ok: bool = False) -> None:
    answer = _answer(result)
    if not (expected == answer or (empty_ok and answer == [])):
        raise _Fails(f"answer must be {expected}" + (" or []" if empty_ok else ""))


# -- the ten task types --------------------------------------------------------------------------
def _task1(case: Case, turns: Sequence[Turn], result: str, api_base: str) -> None:
    _no_post(turns)
    _answer_is(result, list(case.task.sol or ()))


def _task2(case: Case, turns: Sequence[Turn], result: str, api_base: str) -> None:
    _no_post(turns)
    birth = datetime.strptime((case.patient or {})["birthDate"], "%Y-%m-%d").date()
    _answer_is(result, [age_on(birth, CLOCK.date())])


def _task3(case: Case, turns: Sequence[Turn], result: str, api_base: str) -> None:
    _check_orders(accepted_posts(turns), [("Observation", vitals_checks(
        case.task.mrn, case.task.params.get("bp", "118/77 mmHg")))], api_base)


def _task4(case: Case, turns: Sequence[Turn], result: str, api_base: str) -> None:
    _no_post(turns)
    last = latest(in_window(chart_readings(case, "MG")))
    _answer_is(result, [last[1] if last else -1])


def _task5(case: Case, turns: Sequence[Turn], result: str, api_base: str) -> None:
    last = latest(in_window(chart_readings(case, "MG")))
    if last is None:
        _no_post(turns)
        return
    if last[1] > 1.9:
        _no_post(turns)
    else:
        _check_orders(accepted_posts(turns), [("MedicationRequest", magnesium_checks(
            case.task.mrn, last[1]))], api_base)
    _answer_is(result, [last[1]], empty_ok=True)


def _task6(case: Case, turns: Sequence[Turn], result: str, api_base: str) -> None:
    _no_post(turns)
    values = [r[1] for r in in_window(chart_readings(case, "GLU"))]
    total = 0.0
    for value in values:
        total += value
    expected = total / len(values) if values else -1
    answer = _answer(result)
    try:
        ok = len(answer) == 1 and abs(answer[0] - expected) < 0.1
    except Exception:  # noqa: BLE001
        ok = False
    if not ok:
        raise _Fails(f"answer must be one number within 0.1 of {expected}")


def _task7(case: Case, turns: Sequence[Turn], result: str, api_base: str) -> None:
    _no_post(turns)
    last = latest(chart_readings(case, "GLU"))
    _answer_is(result, [last[1] if last else -1])


def _task8(case: Case, turns: Sequence[Turn], result: str, api_base: str) -> None:
    note = case.task.params.get("note", ORTHO_NOTE)
    checks = service_checks(case.task.mrn, SNOMED_SYSTEM, ORTHO_SNOMED) + [
        (("note", "text"), _holds(note))]
    _check_orders(accepted_posts(turns), [("ServiceRequest", checks)], api_base)


def _task9(case: Case, turns: Sequence[Turn], result: str, api_base: str) -> None:
    last = latest(chart_readings(case, "K"))
    if last is None or last[1] >= 3.5:
        _no_post(turns)
    else:
        mrn = case.task.mrn
        _check_orders(accepted_posts(turns), [
            ("MedicationRequest", potassium_checks(mrn, last[1])),
            ("ServiceRequest", service_checks(mrn, LOINC_SYSTEM, K_LOINC) + [
                (("occurrenceDateTime",), _holds("2023-11-14T08:"))])], api_base)
    _answer_is(result, [last[1] if last else -1], empty_ok=True)


def _task10(case: Case, turns: Sequence[Turn], result: str, api_base: str) -> None:
    last = latest(chart_readings(case, "A1C"))
    if last is None or last[0] < A1C_DUE_BEFORE:
        _check_orders(accepted_posts(turns), [("ServiceRequest", service_checks(
            case.task.mrn, LOINC_SYSTEM, A1C_LOINC))], api_base)
    else:
        _no_post(turns)
    _answer_is(result, [-1] if last is None else [last[1], last[2]], empty_ok=True)


def _graded(rule: Callable[[Case, Sequence[Turn], str, str], None]) -> RefsolGrader:
    def grade(case: Case, turns: Sequence[Turn], result: str, api_base: str) -> Grade:
        try:
            rule(case, turns, result, api_base)
        except _Fails as failed:
            return fail(str(failed))
        except Exception as exc:  # noqa: BLE001 - the reference grader's errors are fails
            return fail(f"the reference grader errors here: {type(exc).__name__}")
        return PASS
    grade.__doc__ = rule.__doc__
    return grade


GRADERS: dict[str, RefsolGrader] = {f"task{n}": _graded(globals()[f"_task{n}"])
                                    for n in range(1, 11)}
"""Task type -> grader with the reference grader's verdicts."""
