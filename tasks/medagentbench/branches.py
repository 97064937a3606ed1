"""Branch-controlled clinical records: which branch a task falls in is a parameter.

A task type reads one *kind* of record (magnesium in the last 24 h, latest potassium, ...).
For each kind, each branch (``none``, ``stale``, ``normal``, ``low``, ``old``, ...) has a
generator that writes the readings that put the patient in that branch, with seeded values,
units and timestamps; near-boundary distractors (a reading 25 h old, an earlier low value,
an older reading in the other unit) make the branch visible only to an agent that reads
the timestamps. `task_record` adds the patient's unrelated background (`records`).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from tasks.medagentbench.clinical import K_NDC, LABS, PENICILLIN_ALLERGY_SNOMED
from tasks.medagentbench.records import (COLONOSCOPY_CPT, NDC_SYSTEM, RecordBuilder, Resource,
                                         ago, background_record, draw_hours, draw_value,
                                         shuffled)

ASPIRIN_NDC = "63739-0520-10"
"""The aspirin order code the v3 reconciliation task states in its context."""
ASPIRIN_TEXT = "aspirin 81 mg oral tablet"
IN_WINDOW = (0.5, 23.5)
"""Hours before now of readings "within the last 24 hours" (clear of the boundary)."""
STALE = (24.5, 90 * 24)

Branch = Callable[[RecordBuilder, np.random.Generator], None]


def _labs(b: RecordBuilder, rng: np.random.Generator, code: str, hours: tuple[float, float],
          values: tuple[float, float], n: int = 1, unit: str | None = None,
          decimals: int | None = None) -> list[float]:
    decimals = LABS[code].decimals if decimals is None else decimals
    written = []
    for h in draw_hours(rng, *hours, n):
        value = draw_value(rng, *values, decimals)
        b.lab(code, value, ago(h), unit)
        written.append(value)
    return written


def _latest_in_window(code: str, latest: tuple[float, float], earlier: tuple[float, float]
                      ) -> Branch:
    """Latest reading in the 24 h window with a value in `latest`; maybe an earlier in-window
    reading (values in `earlier`) and 0-2 stale readings."""
    def write(b: RecordBuilder, rng: np.random.Generator) -> None:
        first = draw_hours(rng, IN_WINDOW[0], 12.0)[0]
        b.lab(code, draw_value(rng, *latest, LABS[code].decimals), ago(first))
        if rng.random() < 0.5:
            _labs(b, rng, code, (first + 0.5, IN_WINDOW[1]), earlier)
        _labs(b, rng, code, STALE, earlier, n=int(rng.integers(0, 3)))
    return write


def _stale(code: str, values: tuple[float, float]) -> Branch:
    """Only readings older than 24 h, one of them just past the boundary (24.5-36 h)."""
    def write(b: RecordBuilder, rng: np.random.Generator) -> None:
        _labs(b, rng, code, (24.5, 36.0), values)
        _labs(b, rng, code, (37.0, STALE[1]), values, n=int(rng.integers(0, 3)))
    return write


def _latest_any(code: str, latest: tuple[float, float], earlier: tuple[float, float],
                span_h: tuple[float, float] = (1.0, 20 * 24)) -> Branch:
    """Latest reading at any time in `span_h` with a value in `latest`; 1-3 older ones."""
    def write(b: RecordBuilder, rng: np.random.Generator) -> None:
        first = draw_hours(rng, *span_h)[0]
        b.lab(code, draw_value(rng, *latest, LABS[code].decimals), ago(first))
        _labs(b, rng, code, (first + 24, first + 400 * 24), earlier, n=int(rng.integers(1, 4)))
    return write


def _nothing(b: RecordBuilder, rng: np.random.Generator) -> None:
    return None


def _mg_mmol(b: RecordBuilder, rng: np.random.Generator) -> None:
    first = draw_hours(rng, IN_WINDOW[0], 12.0)[0]
    b.lab("MG", draw_value(rng, 0.45, 1.10, 2), ago(first), unit="mmol/L")
    _labs(b, rng, "MG", STALE, (1.5, 2.6), n=int(rng.integers(1, 3)))


def _glucose_count(many: bool) -> Branch:
    def write(b: RecordBuilder, rng: np.random.Generator) -> None:
        high = int(rng.integers(2, 5)) if many else int(rng.integers(0, 2))
        _labs(b, rng, "GLU", IN_WINDOW, (185, 320), n=high)
        _labs(b, rng, "GLU", IN_WINDOW, (90, 175), n=int(rng.integers(1, 4)))
        _labs(b, rng, "GLU", (25.0, 72.0), (185, 320), n=int(rng.integers(1, 3)))
    return write


def _allergy(allergic: bool) -> Branch:
    def write(b: RecordBuilder, rng: np.random.Generator) -> None:
        if allergic:
            b.condition(PENICILLIN_ALLERGY_SNOMED, "Allergy to penicillin",
                        ago(float(rng.uniform(300, 9000)) * 24))
        elif rng.random() < 0.5:
            b.condition("367498001", "Seasonal allergic rhinitis",
                        ago(float(rng.uniform(300, 9000)) * 24))
    return write


def _aspirin(status: str | None) -> Branch:
    def write(b: RecordBuilder, rng: np.random.Generator) -> None:
        if status is not None:
            b.medication(ASPIRIN_NDC, ASPIRIN_TEXT, ago(float(rng.uniform(30, 700)) * 24),
                         status=status, system=NDC_SYSTEM)
        if rng.random() < 0.5:
            b.medication(K_NDC, "potassium chloride 20 mEq oral tablet",
                         ago(float(rng.uniform(30, 700)) * 24), status="stopped",
                         system=NDC_SYSTEM)
    return write


def _weight(heavy: bool, unit: str) -> Branch:
    kg = (55.0, 120.0) if heavy else (35.0, 47.0)
    other_kg = (35.0, 47.0) if heavy else (55.0, 120.0)

    def write(b: RecordBuilder, rng: np.random.Generator) -> None:
        first = draw_hours(rng, 2.0, 60 * 24)[0]
        if unit == "kg":
            b.weight(draw_value(rng, *kg, 1), "kg", ago(first))
        else:
            b.weight(draw_value(rng, kg[0] / 0.4536 + 0.5, kg[1] / 0.4536 - 0.5, 1), "[lb_av]",
                     ago(first))
        if rng.random() < 0.6:
            b.weight(draw_value(rng, *other_kg, 1), "kg", ago(first + float(rng.uniform(200, 3000))))
    return write


def _blood_pressure(high: bool | None) -> Branch:
    def reading(rng: np.random.Generator, is_high: bool) -> tuple[int, int]:
        if not is_high:
            return int(rng.integers(100, 139)), int(rng.integers(60, 89))
        if rng.random() < 0.7:
            return int(rng.integers(140, 186)), int(rng.integers(70, 111))
        return int(rng.integers(120, 139)), int(rng.integers(90, 111))

    def write(b: RecordBuilder, rng: np.random.Generator) -> None:
        if high is None:
            return
        first = draw_hours(rng, 1.0, 90 * 24)[0]
        b.blood_pressure(*reading(rng, high), ago(first))
        for h in draw_hours(rng, first + 24, first + 300 * 24, int(rng.integers(1, 3))):
            b.blood_pressure(*reading(rng, not high), ago(h))
    return write


def _colonoscopy(years: tuple[float, float] | None) -> Branch:
    def write(b: RecordBuilder, rng: np.random.Generator) -> None:
        if years is not None:
            b.procedure(COLONOSCOPY_CPT, "Colonoscopy, diagnostic",
                        ago(float(rng.uniform(*years)) * 365.25 * 24))
    return write


ANY_MG, ANY_K, ANY_A1C = (1.0, 2.6), (2.8, 5.0), (5.0, 11.0)
KINDS: dict[str, tuple[tuple[str, ...], dict[str, Branch]]] = {
    "demographics": ((), {"default": _nothing, "found": _nothing, "not_found": _nothing}),
    "mg": (("MG",), {
        "recent": _latest_in_window("MG", (1.0, 2.6), ANY_MG),
        "normal": _latest_in_window("MG", (2.0, 2.6), ANY_MG),
        "mild": _latest_in_window("MG", (1.5, 1.9), (2.0, 2.6)),
        "moderate": _latest_in_window("MG", (1.0, 1.4), (2.0, 2.6)),
        "severe": _latest_in_window("MG", (0.4, 0.9), (1.5, 2.6)),
        "mmol": _mg_mmol,
        "stale": _stale("MG", ANY_MG), "none": _nothing}),
    "glu": (("GLU",), {
        "values": _latest_in_window("GLU", (80, 260), (80, 260)),
        "low": _latest_in_window("GLU", (40, 68), (75, 200)),
        "normal": _latest_in_window("GLU", (72, 250), (45, 250)),
        "history": _latest_any("GLU", (70, 260), (70, 260), (1.0, 30 * 24)),
        "many_high": _glucose_count(True), "few_high": _glucose_count(False),
        "stale": _stale("GLU", (80, 260)), "none": _nothing}),
    "k": (("K",), {
        "low": _latest_any("K", (2.5, 3.4), ANY_K),
        "normal": _latest_any("K", (3.5, 5.0), ANY_K), "none": _nothing}),
    "a1c": (("A1C",), {
        "recent": _latest_any("A1C", ANY_A1C, ANY_A1C, (10 * 24, 355 * 24)),
        "old": _latest_any("A1C", ANY_A1C, ANY_A1C, (375 * 24, 1500 * 24)),
        "high": _latest_any("A1C", (9.0, 12.5), (5.5, 8.8), (10 * 24, 700 * 24)),
        "below": _latest_any("A1C", (5.0, 8.9), (9.0, 12.0), (10 * 24, 700 * 24)),
        "none": _nothing}),
    "creat": (("CREAT",), {
        "high": _latest_any("CREAT", (1.40, 3.50), (0.6, 1.2), (2.0, 60 * 24)),
        "normal": _latest_any("CREAT", (0.60, 1.30), (1.4, 2.5), (2.0, 60 * 24)),
        "none": _nothing}),
    "allergy": ((), {"allergic": _allergy(True), "not_allergic": _allergy(False)}),
    "aspirin": ((), {"active": _aspirin("active"), "absent": _aspirin(None),
                     "stopped": _aspirin("stopped")}),
    "weight": (("WT",), {"heavy_kg": _weight(True, "kg"), "heavy_lb": _weight(True, "lb"),
                         "light_kg": _weight(False, "kg"), "light_lb": _weight(False, "lb")}),
    "bp": (("BP",), {"high": _blood_pressure(True), "normal": _blood_pressure(False),
                     "none": _blood_pressure(None)}),
    "colonoscopy": (("colonoscopy",), {"recent": _colonoscopy((1.0, 9.5)),
                                       "old": _colonoscopy((10.5, 20.0)),
                                       "none": _colonoscopy(None)}),
}
"""kind -> (codes left out of the background, {branch: generator})."""

EPISODE_ID_START = 800001
"""First resource id of an episode's patient record (base records use lower ids)."""


def branches_of(kind: str) -> list[str]:
    return list(KINDS[kind][1])


def task_record(kind: str, branch: str, mrn: str, rng: np.random.Generator) -> list[Resource]:
    """The task patient's full record: background without the kind's codes, plus the
    branch's readings, in a seeded storage order."""
    excluded, generators = KINDS[kind]
    if branch not in generators:
        raise KeyError(f"record kind {kind!r} has no branch {branch!r}")
    builder = RecordBuilder(mrn, start=EPISODE_ID_START)
    background_record(builder, rng, exclude=excluded)
    generators[branch](builder, rng)
    return shuffled(builder.resources, rng)
