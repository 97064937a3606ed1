"""Fixed facts of the benchmark: the clock, codes, units, value ranges and time helpers.

Everything that decides what a record looks like or how a grader reads it lives here, so the
generator, the graders and the oracle agree on one definition.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, timedelta, timezone

NOW = datetime(2023, 11, 13, 10, 15, tzinfo=timezone.utc)
"""The benchmark's fixed clock ("It's 2023-11-13T10:15:00+00:00 now")."""
NOW_ISO = "2023-11-13T10:15:00+00:00"
TOMORROW_8AM_ISO = "2023-11-14T08:00:00+00:00"
OFFICIAL_API_BASE = "http://localhost:8080/fhir/"
"""The api_base the official prompt names; the env maps it onto the real server."""

NDC_SYSTEM = "http://hl7.org/fhir/sid/ndc"
LOINC_SYSTEM = "http://loinc.org"
SNOMED_SYSTEM = "http://snomed.info/sct"
CPT_SYSTEM = "http://www.ama-assn.org/go/cpt"
LAB_CODE_SYSTEM = "urn:medagentbench:lab-code"
"""Local code system of the short lab and flowsheet codes (MG, GLU, ...) the tasks name."""
VITALS_CATEGORY = {"system": "http://hl7.org/fhir/observation-category", "code": "vital-signs",
                   "display": "Vital Signs"}
"""The category coding of a vitals Observation, as funcs_v1.json describes it."""
LAB_CATEGORY = {"system": "http://terminology.hl7.org/CodeSystem/observation-category",
                "code": "laboratory", "display": "Laboratory"}


@dataclass(frozen=True)
class Lab:
    """A lab test: its short code, LOINC, unit, decimals and generated normal range."""

    code: str
    display: str
    loinc: str
    unit: str
    decimals: int
    normal: tuple[float, float]


LABS = {
    "MG": Lab("MG", "Magnesium, serum", "19123-9", "mg/dL", 1, (2.0, 2.6)),
    "GLU": Lab("GLU", "Glucose, capillary blood (CBG)", "2345-7", "mg/dL", 0, (75, 175)),
    "K": Lab("K", "Potassium, serum", "2823-3", "mmol/L", 1, (3.5, 5.0)),
    "A1C": Lab("A1C", "Hemoglobin A1C", "4548-4", "%", 1, (4.8, 8.8)),
    "CREAT": Lab("CREAT", "Creatinine, serum", "2160-0", "mg/dL", 2, (0.6, 1.25)),
    "NA": Lab("NA", "Sodium, serum", "2951-2", "mmol/L", 0, (136, 144)),
}

MG_MMOL_TO_MGDL = 2.43
"""mg/dL per mmol/L of magnesium (molar mass 24.3 g/mol), as the v3 context states it."""
LB_TO_KG = 0.4536
"""kg per pound, as the v3 context states it."""

# -- orders the tasks name -------------------------------------------------------------------
MG_NDC = "0338-1715-40"
K_NDC = "40032-917-01"
K_LOINC = "2823-3"
A1C_LOINC = "4548-4"
ORTHO_SNOMED = "306181000000106"
ORTHO_NOTE = ("Situation: acute left knee injury, Background: radiology report indicates ACL "
              "tear. Assessment: ACL tear grade II. Recommendation: request for Orthopedic "
              "service to evaluate and provide management recommendations.")
PENICILLIN_ALLERGY_SNOMED = "91936005"

HOUR = timedelta(hours=1)
DAY = timedelta(days=1)


def iso(when: datetime) -> str:
    """ISO 8601 with an explicit +00:00 offset, seconds precision (the records' format)."""
    return when.astimezone(timezone.utc).replace(microsecond=0).isoformat()


def parse_instant(text: str) -> datetime | None:
    """A FHIR dateTime/instant as an aware datetime (UTC when no offset), or None."""
    if not isinstance(text, str) or not text:
        return None
    try:
        value = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return value if value.tzinfo else value.replace(tzinfo=timezone.utc)


def age_on(birth: date, today: date) -> int:
    """Completed years between `birth` and `today` (age rounded down)."""
    return today.year - birth.year - ((today.month, today.day) < (birth.month, birth.day))


def round_value(value: float, decimals: int) -> float | int:
    """`value` rounded as a lab reports it (an int when `decimals` is 0)."""
    return int(round(value)) if decimals == 0 else round(float(value), decimals)
