"""FHIR resource builders and the seeded background record of a patient.

A record is a list of FHIR R4 resource dicts. `RecordBuilder` numbers resources and writes
the timestamps around the fixed clock (`clinical.NOW`); `background_record` draws the
unremarkable history every patient has (labs, vitals, problems, medications, procedures),
leaving out the codes a task is about (those come from `branches`).
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import Any

import numpy as np

from tasks.medagentbench.clinical import (CPT_SYSTEM, DAY, HOUR, LAB_CATEGORY, LAB_CODE_SYSTEM,
                                          LABS, LOINC_SYSTEM, NDC_SYSTEM, NOW, SNOMED_SYSTEM,
                                          VITALS_CATEGORY, iso, round_value)

Resource = dict[str, Any]

CONDITIONS = {
    "38341003": "Hypertensive disorder",
    "44054006": "Type 2 diabetes mellitus",
    "55822004": "Hyperlipidemia",
    "195967001": "Asthma",
    "235595009": "Gastroesophageal reflux disease",
    "239873007": "Osteoarthritis of knee",
    "709044004": "Chronic kidney disease",
    "367498001": "Seasonal allergic rhinitis",
}
"""SNOMED CT problems of the background problem lists."""

MEDICATIONS = {
    "lisinopril": "lisinopril 10 mg oral tablet",
    "metformin": "metformin 500 mg oral tablet",
    "atorvastatin": "atorvastatin 20 mg oral tablet",
    "omeprazole": "omeprazole 20 mg oral capsule",
    "amlodipine": "amlodipine 5 mg oral tablet",
}
"""Background medications (text plus a local code: no real NDC is claimed for them)."""
MEDICATION_SYSTEM = "urn:medagentbench:synthetic-medication"

PROCEDURES = {"93000": "Electrocardiogram, complete", "71046": "Chest X-ray, 2 views"}
COLONOSCOPY_CPT = "45378"


class RecordBuilder:
    """Collects the resources of one record; ids are ``{prefix}{n}`` in creation order."""

    def __init__(self, mrn: str, prefix: str = "", start: int = 1):
        self.mrn, self.prefix, self.next_id = mrn, prefix, start
        self.resources: list[Resource] = []

    def _add(self, resource: Resource) -> Resource:
        resource = {"resourceType": resource.pop("resourceType"),
                    "id": f"{self.prefix}{self.next_id}", **resource,
                    "subject": {"reference": f"Patient/{self.mrn}"}}
        self.next_id += 1
        self.resources.append(resource)
        return resource

    def lab(self, code: str, value: float, when: datetime, unit: str | None = None) -> Resource:
        lab = LABS[code]
        return self._add({
            "resourceType": "Observation", "status": "final", "category": [
                {"coding": [dict(LAB_CATEGORY)]}],
            "code": {"coding": [{"system": LAB_CODE_SYSTEM, "code": code, "display": lab.display},
                                {"system": LOINC_SYSTEM, "code": lab.loinc}], "text": code},
            "effectiveDateTime": iso(when), "issued": iso(when + timedelta(minutes=40)),
            "valueQuantity": {"value": value, "unit": unit or lab.unit,
                              "system": "http://unitsofmeasure.org", "code": unit or lab.unit}})

    def vital(self, code: str, display: str, when: datetime, *, value_string: str | None = None,
              quantity: tuple[float, str] | None = None) -> Resource:
        resource: Resource = {
            "resourceType": "Observation", "status": "final",
            "category": [{"coding": [dict(VITALS_CATEGORY)]}],
            "code": {"coding": [{"system": LAB_CODE_SYSTEM, "code": code, "display": display}],
                     "text": code},
            "effectiveDateTime": iso(when)}
        if value_string is not None:
            resource["valueString"] = value_string
        if quantity is not None:
            resource["valueQuantity"] = {"value": quantity[0], "unit": quantity[1],
                                         "system": "http://unitsofmeasure.org",
                                         "code": quantity[1]}
        return self._add(resource)

    def blood_pressure(self, systolic: int, diastolic: int, when: datetime) -> Resource:
        return self.vital("BP", "Blood pressure", when, value_string=f"{systolic}/{diastolic} mmHg")

    def weight(self, value: float, unit: str, when: datetime) -> Resource:
        return self.vital("WT", "Body weight", when, quantity=(value, unit))

    def condition(self, snomed: str, display: str, onset: datetime,
                  status: str = "active") -> Resource:
        return self._add({
            "resourceType": "Condition",
            "clinicalStatus": {"coding": [{
                "system": "http://terminology.hl7.org/CodeSystem/condition-clinical",
                "code": status}]},
            "category": [{"coding": [{
                "system": "http://terminology.hl7.org/CodeSystem/condition-category",
                "code": "problem-list-item", "display": "Problem List Item"}]}],
            "code": {"coding": [{"system": SNOMED_SYSTEM, "code": snomed, "display": display}],
                     "text": display},
            "onsetDateTime": iso(onset), "recordedDate": iso(onset)})

    def medication(self, code: str, text: str, authored: datetime, *, status: str = "active",
                   system: str = MEDICATION_SYSTEM, route: str = "oral") -> Resource:
        return self._add({
            "resourceType": "MedicationRequest", "status": status, "intent": "order",
            "category": [{"coding": [{
                "system": "http://terminology.hl7.org/CodeSystem/medicationrequest-category",
                "code": "outpatient", "display": "Outpatient"}]}],
            "medicationCodeableConcept": {"coding": [{"system": system, "code": code,
                                                      "display": text}], "text": text},
            "authoredOn": iso(authored),
            "dosageInstruction": [{"route": {"text": route}, "text": f"{text}, once daily"}]})

    def procedure(self, cpt: str, display: str, when: datetime) -> Resource:
        return self._add({
            "resourceType": "Procedure", "status": "completed",
            "code": {"coding": [{"system": CPT_SYSTEM, "code": cpt, "display": display}],
                     "text": display},
            "performedDateTime": iso(when)})


def ago(hours: float) -> datetime:
    """The instant `hours` before the clock, rounded to the minute."""
    return (NOW - timedelta(hours=float(hours))).replace(second=0, microsecond=0)


def draw_hours(rng: np.random.Generator, low_h: float, high_h: float, n: int = 1) -> list[float]:
    """`n` distinct sorted times (hours before now) drawn uniformly from [low_h, high_h]."""
    values = set()
    while len(values) < n:
        values.add(round(float(rng.uniform(low_h, high_h)) * 60) / 60)
    return sorted(values)


def draw_value(rng: np.random.Generator, low: float, high: float, decimals: int) -> float | int:
    """A value uniform on [low, high] with `decimals` decimals, kept inside the range."""
    step = 10.0 ** -decimals
    k = int(rng.integers(int(round(low / step)), int(round(high / step)) + 1))
    return round_value(k * step, decimals)


def background_record(builder: RecordBuilder, rng: np.random.Generator,
                      exclude: Iterable[str] = ()) -> None:
    """Add a seeded, unremarkable history: labs at least 2 days old, vitals, 0-3 problems,
    0-3 medications and 0-2 procedures. Codes in `exclude` (lab codes, ``BP``, ``WT``,
    ``conditions``, ``medications``, ``colonoscopy``) are left out for the task to fill."""
    skip = set(exclude)
    for code, lab in LABS.items():
        if code in skip or rng.random() > 0.6:
            continue
        for hours in draw_hours(rng, 2 * 24, 900 * 24, int(rng.integers(1, 5))):
            builder.lab(code, draw_value(rng, *lab.normal, lab.decimals), ago(hours))
    if "BP" not in skip and rng.random() < 0.7:
        for hours in draw_hours(rng, 24, 400 * 24, int(rng.integers(1, 4))):
            builder.blood_pressure(int(rng.integers(105, 135)), int(rng.integers(62, 85)),
                                   ago(hours))
    if "WT" not in skip and rng.random() < 0.5:
        for hours in draw_hours(rng, 24, 400 * 24, int(rng.integers(1, 3))):
            builder.weight(draw_value(rng, 55, 110, 1), "kg", ago(hours))
    if "conditions" not in skip:
        codes = list(CONDITIONS)
        for i in rng.choice(len(codes), size=int(rng.integers(0, 4)), replace=False):
            builder.condition(codes[i], CONDITIONS[codes[i]], ago(float(rng.uniform(200, 9000)) * 24))
    if "medications" not in skip:
        names = list(MEDICATIONS)
        for i in rng.choice(len(names), size=int(rng.integers(0, 4)), replace=False):
            builder.medication(names[i], MEDICATIONS[names[i]],
                               ago(float(rng.uniform(30, 1500)) * 24),
                               status=str(rng.choice(["active", "active", "stopped"])))
    codes = list(PROCEDURES) + ([] if "colonoscopy" in skip else [COLONOSCOPY_CPT])
    for i in rng.choice(len(codes), size=int(rng.integers(0, 3)), replace=False):
        display = PROCEDURES.get(codes[i], "Colonoscopy, diagnostic")
        builder.procedure(codes[i], display, ago(float(rng.uniform(30, 3000)) * 24))


def shuffled(resources: list[Resource], rng: np.random.Generator) -> list[Resource]:
    """The resources in a seeded random storage order (a server's default order is its
    storage order, so "most recent" must be found, not assumed to come last)."""
    return [resources[i] for i in rng.permutation(len(resources))]


__all__ = ["CONDITIONS", "COLONOSCOPY_CPT", "DAY", "HOUR", "MEDICATIONS", "MEDICATION_SYSTEM",
           "NDC_SYSTEM", "PROCEDURES", "RecordBuilder", "Resource", "ago", "background_record",
           "draw_hours", "draw_value", "shuffled"]
