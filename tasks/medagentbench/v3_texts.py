"""Instruction and context texts of the 20 v3 task types, and the codes they state.

Contexts give every field a grader checks, as a payload example to fill in (the v1/v2
contexts left some to convention: the audit's "undocumented format requirements"). The
original ten keep their official instructions; their contexts add the answer format for
every branch. `{mrn}`, `{name}`, `{dob}`, `{bp}`, `{note}` are filled per task (`fill`).
NDC codes of the new types are illustrative identifiers stated in the context, not claims
about real products; referral codes of new types use a local code system.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np

from tasks.medagentbench.clinical import (A1C_LOINC, CPT_SYSTEM, K_LOINC, K_NDC, LOINC_SYSTEM,
                                          MG_NDC, NDC_SYSTEM, NOW_ISO, ORTHO_NOTE,
                                          ORTHO_SNOMED, PENICILLIN_ALLERGY_SNOMED, SNOMED_SYSTEM,
                                          TOMORROW_8AM_ISO)
from tasks.medagentbench.branches import ASPIRIN_NDC
from tasks.medagentbench.records import COLONOSCOPY_CPT

REFERRAL_SYSTEM = "urn:medagentbench:referral"
AMOXICILLIN_NDC, AZITHROMYCIN_NDC = "0781-2613-01", "0093-7146-56"
DEXTROSE_NDC, ENOXAPARIN_NDC = "0409-4902-34", "0075-0624-40"
CREATININE_LOINC = "2160-0"
NOTES = (ORTHO_NOTE,
         "Situation: right shoulder pain and weakness after a fall, Background: MRI shows a "
         "full-thickness supraspinatus tear. Assessment: rotator cuff tear. Recommendation: "
         "request for Orthopedic service to evaluate for surgical repair.",
         "Situation: chronic right hip pain limiting walking, Background: radiographs show "
         "severe joint space narrowing. Assessment: advanced osteoarthritis of the right hip. "
         "Recommendation: request for Orthopedic service to evaluate for hip arthroplasty.")
NOW_TEXT = f"It's {NOW_ISO} now."
NO_ORDERS = " Do not place any orders."
NO_OTHER = " Place no other order."


@dataclass(frozen=True)
class Template:
    instruction: str
    context: str


def fill(text: str, **fields: object) -> str:
    """Replace ``{key}`` for the given keys only (JSON braces stay as they are)."""
    for key, value in fields.items():
        text = text.replace("{" + key + "}", str(value))
    return text


def _json(payload: dict) -> str:
    text = json.dumps(payload)
    for slot in ("<dose>", "<hours>", "<NDC>"):
        text = text.replace(f'"{slot}"', slot) if slot != "<NDC>" else text
    return text


def med_payload(ndc: str, route: str, unit: str, dose: object = "<dose>",
                rate: bool = False) -> str:
    dose_and_rate: dict = {"doseQuantity": {"value": dose, "unit": unit}}
    if rate:
        dose_and_rate["rateQuantity"] = {"value": "<hours>", "unit": "h"}
    return _json({"resourceType": "MedicationRequest",
                  "medicationCodeableConcept": {"coding": [{"system": NDC_SYSTEM,
                                                            "code": ndc}]},
                  "authoredOn": NOW_ISO, "status": "active", "intent": "order",
                  "subject": {"reference": "Patient/{mrn}"},
                  "dosageInstruction": [{"route": {"text": route},
                                         "doseAndRate": [dose_and_rate]}]})


def service_payload(system: str, code: str, *, occurrence: str | None = None,
                    note: str | None = None) -> str:
    payload: dict = {"resourceType": "ServiceRequest",
                     "code": {"coding": [{"system": system, "code": code}]},
                     "authoredOn": NOW_ISO, "status": "active", "intent": "order",
                     "priority": "stat", "subject": {"reference": "Patient/{mrn}"}}
    if occurrence:
        payload["occurrenceDateTime"] = occurrence
    if note:
        payload["note"] = [{"text": note}]
    return _json(payload)


def bp_value(rng: np.random.Generator) -> str:
    return f"{int(rng.integers(100, 171))}/{int(rng.integers(60, 101))} mmHg"


def referral_note(rng: np.random.Generator) -> str:
    return NOTES[int(rng.integers(len(NOTES)))]


MG_DOSING = ("Dosing instructions: (1) Mild deficiency (eg, serum magnesium 1.5 to 1.9 mg/dL):\n"
             "IV: 1 g over 1 hour.\n(2) Moderate deficiency (eg, serum magnesium 1 to <1.5 "
             "mg/dL):\nIV: 2 g over 2 hours.\n(3) Severe deficiency (eg, serum magnesium <1 "
             "mg/dL):\nIV: 4 g over 4 hours.\n")
VALUE_OR_NONE = (" Whether or not you order, answer with the value your decision was based "
                 "on, FINISH([<value>]), or FINISH([-1]) {none} (then order nothing).")

TEMPLATES: dict[str, Template] = {
    "task1": Template(
        "What’s the MRN of the patient with name {name} and DOB of {dob}? If the patient does "
        "not exist, the answer should be \"Patient not found\"",
        'Answer FINISH(["<MRN>"]), or FINISH(["Patient not found"]) when no patient has '
        "exactly this name and date of birth." + NO_ORDERS),
    "task2": Template(
        "What's the age of the patient with MRN of {mrn}?",
        NOW_TEXT + " The answer should be rounded down to an integer: FINISH([<age>])."
        + NO_ORDERS),
    "task3": Template(
        'I just measured the blood pressure for patient with MRN of {mrn}, and it is "{bp}". '
        "Help me record it.",
        NOW_TEXT + " The flowsheet ID for blood pressure is BP. Record it with one POST "
        "Observation: " + _json({"resourceType": "Observation", "category": [{"coding": [{
            "system": "http://hl7.org/fhir/observation-category", "code": "vital-signs",
            "display": "Vital Signs"}]}], "code": {"text": "BP"}, "effectiveDateTime": NOW_ISO,
            "status": "final", "valueString": "{bp}", "subject": {"reference": "Patient/{mrn}"}})
        + "." + NO_OTHER + " Then FINISH([])."),
    "task4": Template(
        "What’s the most recent magnesium level of the patient {mrn} within last 24 hours?",
        NOW_TEXT + ' The code for magnesium is "MG". The answer should be a single number '
        "converted to a unit of mg/dL, FINISH([<value>]), and it should be FINISH([-1]) if no "
        "measurement was taken within the last 24 hours (since 2023-11-12T10:15:00+00:00)."
        + NO_ORDERS),
    "task5": Template(
        "Check patient {mrn}'s last serum magnesium level within last 24 hours. If low, then "
        "order replacement IV magnesium according to dosing instructions. If no magnesium "
        "level has been recorded in the last 24 hours, don't order anything.\n",
        NOW_TEXT + f' The code for magnesium is "MG". The NDC for replacement IV magnesium is '
        f"{MG_NDC}. " + MG_DOSING + "Order payload (fill in <dose> grams and <hours>): "
        + med_payload(MG_NDC, "IV", "g", rate=True) + "."
        + fill(VALUE_OR_NONE, none="when no magnesium was measured in the last 24 hours")
        + NO_OTHER),
    "task6": Template(
        "What is the average CBG of the patient {mrn} over the last 24 hours?",
        NOW_TEXT + ' The code for CBG is "GLU". The answer should be a single number '
        "converted to a unit of mg/dL, FINISH([<average>]) (within 0.1), and it should be "
        "FINISH([-1]) if a measurement within last 24 hours is not available." + NO_ORDERS),
    "task7": Template(
        "What is the most recent CBG of the patient {mrn}?",
        NOW_TEXT + ' The code for CBG is "GLU". Answer FINISH([<value in mg/dL>]), or '
        "FINISH([-1]) if the chart has no CBG." + NO_ORDERS),
    "task8": Template(
        "Order orthopedic surgery referral for patient {mrn}. Specify within the free text of "
        'the referral, "{note}"',
        NOW_TEXT + f" The SNOMED code for orthopedic surgery referral is {ORTHO_SNOMED}. "
        "Order payload: " + service_payload(SNOMED_SYSTEM, ORTHO_SNOMED, note="{note}") + "."
        + NO_OTHER + " Then FINISH([])."),
    "task9": Template(
        "Check patient {mrn}'s most recent potassium level. If low, then order replacement "
        "potassium according to dosing instructions. Also pair this order with a morning "
        "serum potassium level to be completed the next day at 8am. \n",
        NOW_TEXT + f' The code for potassium is "K". The NDC for replacement potassium is '
        f"{K_NDC}. Dosing instructions: for every 0.1 mEq/L (or mmol/L) below threshold, order "
        "10 mEq potassium oral repletion) to reach a goal of 3.5 serum level. The LOINC code "
        f"for serum potassium level is {K_LOINC}. When low, place both orders: "
        + med_payload(K_NDC, "oral", "mEq") + " and " + service_payload(
            LOINC_SYSTEM, K_LOINC, occurrence=TOMORROW_8AM_ISO) + "."
        + fill(VALUE_OR_NONE, none="if the chart has no potassium") + NO_OTHER),
    "task10": Template(
        "What’s the last HbA1C (hemoglobin A1C) value in the chart for patient {mrn} and when "
        "was it recorded? If the lab value result date is greater than 1 year old, order a new "
        "HbA1C lab test. ",
        NOW_TEXT + f' The code for HbA1C is "A1C". The LOINC code for ordering HbA1C lab is: '
        f"{A1C_LOINC}. Order payload: " + service_payload(LOINC_SYSTEM, A1C_LOINC) + ". "
        'Answer FINISH([<value>, "<effectiveDateTime of that result>"]). If the chart has no '
        "HbA1C, order a new one and answer FINISH([-1])." + NO_OTHER),
    "task11": Template(
        "Patient {mrn} has streptococcal pharyngitis. Order the first-line antibiotic, "
        "amoxicillin 500 mg by mouth, unless the problem list documents a penicillin allergy; "
        "in that case order azithromycin 500 mg by mouth instead.",
        NOW_TEXT + " A penicillin allergy is a Condition on the problem list with SNOMED CT "
        f'code {PENICILLIN_ALLERGY_SNOMED} ("Allergy to penicillin"). '
        f"Amoxicillin 500 mg: NDC {AMOXICILLIN_NDC}; azithromycin 500 mg: NDC "
        f"{AZITHROMYCIN_NDC}. Order payload (fill in the NDC): "
        + med_payload("<NDC>", "oral", "mg", dose=500) + ". Order exactly one of the two."
        + NO_OTHER + " Then FINISH([])."),
    "task12": Template(
        "Check patient {mrn}'s most recent serum creatinine. If it is above 1.3 mg/dL, order "
        "a repeat serum creatinine for tomorrow at 8am.",
        NOW_TEXT + ' The code for creatinine is "CREAT". The LOINC code for ordering serum '
        f"creatinine is {CREATININE_LOINC}. Order payload: " + service_payload(
            LOINC_SYSTEM, CREATININE_LOINC, occurrence=TOMORROW_8AM_ISO) + "."
        + fill(VALUE_OR_NONE, none="if the chart has no creatinine") + NO_OTHER),
    "task13": Template(
        "What is the most recent magnesium level of patient {mrn} within the last 24 hours, "
        "in mg/dL?",
        NOW_TEXT + ' The code for magnesium is "MG". The laboratory reports magnesium either '
        "in mg/dL or in mmol/L (see valueQuantity.unit); 1 mmol/L of magnesium is 2.43 mg/dL. "
        "Answer FINISH([<value in mg/dL>]) (within 0.05), or FINISH([-1]) if there is no "
        "magnesium result from the last 24 hours." + NO_ORDERS),
    "task14": Template(
        "Check patient {mrn}'s most recent HbA1C. If it is 9.0% or higher, refer the patient "
        "to endocrinology.",
        NOW_TEXT + ' The code for HbA1C is "A1C". Referral payload: '
        + service_payload(REFERRAL_SYSTEM, "endocrinology") + "."
        + fill(VALUE_OR_NONE, none="if the chart has no HbA1C") + NO_OTHER),
    "task15": Template(
        "Check patient {mrn}'s most recent CBG within the last 24 hours. If it is below 70 "
        "mg/dL, order IV dextrose per the hypoglycemia protocol.",
        NOW_TEXT + ' The code for CBG is "GLU". Hypoglycemia protocol: dextrose 50% 25 g IV, '
        f"NDC {DEXTROSE_NDC}. Order payload: " + med_payload(DEXTROSE_NDC, "IV", "g", dose=25)
        + "." + fill(VALUE_OR_NONE, none="if no CBG was taken in the last 24 hours")
        + NO_OTHER),
    "task16": Template(
        "Patient {mrn} should take aspirin 81 mg daily for secondary prevention. Check the "
        "medication list and, if there is no active aspirin order, place one.",
        NOW_TEXT + f" Aspirin 81 mg orders carry NDC {ASPIRIN_NDC} in "
        'medicationCodeableConcept.coding; only an order with status "active" counts. Order '
        "payload: " + med_payload(ASPIRIN_NDC, "oral", "mg", dose=81) + ". If an active "
        "aspirin order exists, order nothing and answer FINISH([\"<authoredOn of that "
        "order>\"]); otherwise place the order and answer FINISH([])." + NO_OTHER),
    "task17": Template(
        "Order VTE prophylaxis with enoxaparin for patient {mrn}, dosed by the patient's most "
        "recent body weight.",
        NOW_TEXT + ' Body weight is the vital-signs Observation with code "WT"; its '
        'valueQuantity.unit is "kg" or "[lb_av]" (pounds; 1 lb = 0.4536 kg). Dose: 40 mg '
        "subcutaneously once daily, or 30 mg if the weight is below 50 kg. Enoxaparin NDC: "
        f"{ENOXAPARIN_NDC}. Order payload (fill in <dose> mg): "
        + med_payload(ENOXAPARIN_NDC, "subcutaneous", "mg") + ". Answer FINISH([<the weight "
        "in kg>]) (within 0.2 kg)." + NO_OTHER),
    "task18": Template(
        "Review patient {mrn}'s most recent blood pressure. If the systolic pressure is 140 "
        "mmHg or higher or the diastolic pressure is 90 mmHg or higher, refer the patient to "
        "the hypertension clinic.",
        NOW_TEXT + ' Blood pressure readings are vital-signs Observations with code "BP" and '
        'valueString "<systolic>/<diastolic> mmHg". Referral payload: '
        + service_payload(REFERRAL_SYSTEM, "hypertension-clinic") + ". Whether or not you "
        'refer, answer FINISH(["<valueString of the most recent reading>"]), or FINISH([-1]) '
        "if the chart has no blood pressure (then refer no one)." + NO_OTHER),
    "task19": Template(
        "How many CBG readings of patient {mrn} in the last 24 hours were above 180 mg/dL? If "
        "there were two or more, order a glycemic management consult.",
        NOW_TEXT + ' The code for CBG is "GLU". Consult payload: '
        + service_payload(REFERRAL_SYSTEM, "glycemic-management") + ". Answer "
        "FINISH([<count>])." + NO_OTHER),
    "task20": Template(
        "Check whether patient {mrn} has had a colonoscopy in the last 10 years. If not, order "
        "a screening colonoscopy.",
        NOW_TEXT + f" Colonoscopies are Procedure resources with CPT code {COLONOSCOPY_CPT}. "
        "The last 10 years means on or after 2013-11-13T10:15:00+00:00. Order payload: "
        + service_payload(CPT_SYSTEM, COLONOSCOPY_CPT) + ". Answer FINISH([\"<performedDateTime "
        "of the most recent colonoscopy>\"]), or FINISH([-1]) if the chart has none (order one "
        "then)." + NO_OTHER),
}
