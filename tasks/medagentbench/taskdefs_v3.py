"""Task definitions of medagentbench-v3: 20 task types, exact branch tables (V3_DESIGN.md).

Every type has a template (instruction + context) and a branch table for the 25 test tasks;
train (10 per type) and dev (5 per type) splits use the same table scaled by largest
remainder, on disjoint patient pools. Contexts state every field a grader checks.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import date
from typing import Any

import numpy as np

from harness.core import make_rng
from tasks.medagentbench.clinical import NOW, age_on
from tasks.medagentbench.data import load_patients, patient_name
from tasks.medagentbench.grading import TaskDef
from tasks.medagentbench.taskdefs import assign_branches, missing_birth_date
from tasks.medagentbench.v3_texts import TEMPLATES, bp_value, fill, referral_note

SUITE = "medagentbench-v3"
PER_TYPE = {"test": 25, "train": 10, "dev": 5}
POOL_SHARES = {"test": 0.6, "train": 0.3, "dev": 0.1}

BRANCH_TABLE: dict[str, tuple[str, dict[str, int]]] = {
    "task1": ("demographics", {"found": 15, "not_found": 10}),
    "task2": ("demographics", {"default": 25}),
    "task3": ("demographics", {"default": 25}),
    "task4": ("mg", {"recent": 23, "stale": 1, "none": 1}),
    "task5": ("mg", {"mild": 4, "moderate": 4, "severe": 4, "normal": 11, "stale": 1,
                     "none": 1}),
    "task6": ("glu", {"values": 23, "stale": 1, "none": 1}),
    "task7": ("glu", {"history": 23, "none": 2}),
    "task8": ("demographics", {"default": 25}),
    "task9": ("k", {"low": 12, "normal": 11, "none": 2}),
    "task10": ("a1c", {"old": 12, "recent": 11, "none": 2}),
    "task11": ("allergy", {"allergic": 12, "not_allergic": 13}),
    "task12": ("creat", {"high": 12, "normal": 11, "none": 2}),
    "task13": ("mg", {"recent": 11, "mmol": 12, "stale": 1, "none": 1}),
    "task14": ("a1c", {"high": 12, "below": 11, "none": 2}),
    "task15": ("glu", {"low": 12, "normal": 11, "stale": 1, "none": 1}),
    "task16": ("aspirin", {"active": 12, "absent": 7, "stopped": 6}),
    "task17": ("weight", {"heavy_kg": 6, "heavy_lb": 6, "light_kg": 6, "light_lb": 7}),
    "task18": ("bp", {"high": 12, "normal": 11, "none": 2}),
    "task19": ("glu", {"many_high": 12, "few_high": 13}),
    "task20": ("colonoscopy", {"recent": 12, "old": 7, "none": 6}),
}
"""task type -> (record kind, branch counts of the 25 test tasks)."""
NO_ACTION_ANSWER_BRANCHES = {"task4": ("stale", "none"), "task5": ("stale", "none"),
                             "task6": ("stale", "none"), "task7": ("none",),
                             "task9": ("none",), "task12": ("none",),
                             "task13": ("stale", "none"), "task14": ("none",),
                             "task15": ("stale", "none"), "task18": ("none",)}
"""The only branches where doing nothing and answering [-1] is correct (2 of 25 per type)."""


def _age(patient: dict) -> int:
    return age_on(date.fromisoformat(patient["birthDate"]), NOW.date())


def eligible(task_type: str, patient: dict) -> bool:
    """Adults for every clinical task; 45-75 years for colorectal screening (task20)."""
    if task_type in ("task1", "task2"):
        return True
    if task_type == "task20":
        return 45 <= _age(patient) <= 75
    return _age(patient) >= 18


def patient_pools(patients: Sequence[dict]) -> dict[str, list[dict]]:
    order = make_rng(SUITE, "patient-pools").permutation(len(patients))
    pools, start = {}, 0
    for split, share in POOL_SHARES.items():
        size = int(round(share * len(patients)))
        pools[split] = [patients[i] for i in order[start:start + size]]
        start += size
    return pools


def _instance(task_type: str, split: str, k: int, patient: dict, branch: str, kind: str,
              patients: Sequence[dict], rng: np.random.Generator) -> TaskDef:
    template = TEMPLATES[task_type]
    mrn, sol, params = patient["id"], None, {}
    if task_type == "task1":
        given, family = patient_name(patient)
        dob = patient["birthDate"]
        if branch == "not_found":
            dob, mrn = missing_birth_date(patient, patients, rng), None
        params = {"name": f"{given} {family}", "dob": dob}
        sol = (patient["id"],) if branch == "found" else ("Patient not found",)
    elif task_type == "task3":
        params = {"bp": bp_value(rng)}
    elif task_type == "task8":
        params = {"note": referral_note(rng)}
    fields = {"mrn": mrn or "", **params}
    return TaskDef(id=f"{task_type}_{split}{k + 1}" if split != "test" else f"{task_type}_{k + 1}",
                   task_type=task_type, split=split,
                   instruction=fill(template.instruction, **fields),
                   context=fill(template.context, **fields), mrn=mrn, kind=kind,
                   branch=branch, sol=sol, params=params)


def v3_taskdefs(data_dir: Any = None,
                table: Mapping[str, tuple[str, Mapping[str, int]]] = BRANCH_TABLE
                ) -> list[TaskDef]:
    """All v3 tasks: 25 test, 10 train and 5 dev per task type."""
    patients = load_patients(data_dir)
    pools = patient_pools(patients)
    defs = []
    for split, n in PER_TYPE.items():
        for task_type, (kind, counts) in table.items():
            rng = make_rng(SUITE, split, task_type)
            pool = [p for p in pools[split] if eligible(task_type, p)]
            chosen = [pool[i] for i in rng.choice(len(pool), n, replace=False)]
            branches = assign_branches(n, {b: float(c) for b, c in counts.items()}, rng)
            defs += [_instance(task_type, split, k, patient, branch, kind, patients, rng)
                     for k, (patient, branch) in enumerate(zip(chosen, branches))]
    return defs


__all__ = ["BRANCH_TABLE", "NO_ACTION_ANSWER_BRANCHES", "PER_TYPE", "eligible", "v3_taskdefs"]
