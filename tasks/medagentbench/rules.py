"""The clinical decision rules the task contexts state, as functions (graders and oracle)."""

from __future__ import annotations

from datetime import datetime

from tasks.medagentbench.clinical import MG_MMOL_TO_MGDL, NOW

ONE_YEAR_AGO = NOW.replace(year=NOW.year - 1)
TEN_YEARS_AGO = NOW.replace(year=NOW.year - 10)


def mg_dose(mg_dl: float) -> tuple[int, int] | None:
    """(grams, hours) of IV magnesium for a serum level, or None when not low (>= 2.0).

    The official dosing table: mild 1.5-1.9 mg/dL -> 1 g over 1 h; moderate 1 to <1.5 ->
    2 g over 2 h; severe < 1 -> 4 g over 4 h.
    """
    if mg_dl >= 2.0:
        return None
    if mg_dl >= 1.5:
        return 1, 1
    if mg_dl >= 1.0:
        return 2, 2
    return 4, 4


def potassium_dose(k: float) -> float | None:
    """mEq of oral potassium: 10 mEq per 0.1 mEq/L below 3.5, or None when k >= 3.5."""
    if k >= 3.5:
        return None
    return round((3.5 - k) / 0.1 * 10, 6)


def a1c_order_needed(last: datetime | None) -> bool:
    """An HbA1C is ordered when there is none or the last is more than a year old."""
    return last is None or last < ONE_YEAR_AGO


def mg_to_mgdl(value: float, unit: str) -> float:
    """A magnesium value in mg/dL (converting from mmol/L at the stated 2.43 mg/dL each)."""
    return value * MG_MMOL_TO_MGDL if unit.strip().lower() == "mmol/l" else value


def weight_kg(value: float, unit: str) -> float:
    """A body weight in kg (pounds: ``[lb_av]``/``lb``, at the stated 0.4536 kg each)."""
    from tasks.medagentbench.clinical import LB_TO_KG

    return value * LB_TO_KG if unit.strip().lower() in ("[lb_av]", "lb", "lbs") else value


def enoxaparin_mg(kg: float) -> int:
    """The v3 prophylaxis dose: 40 mg once daily, 30 mg under 50 kg."""
    return 30 if kg < 50 else 40


def bp_is_high(reading: str) -> bool | None:
    """Whether a ``"sys/dia mmHg"`` reading is >= 140 systolic or >= 90 diastolic (None
    when it cannot be read)."""
    try:
        systolic, diastolic = reading.split()[0].split("/")
        return int(systolic) >= 140 or int(diastolic) >= 90
    except (ValueError, IndexError):
        return None
