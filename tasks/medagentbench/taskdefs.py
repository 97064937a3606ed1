"""Task definitions of the official suites (v1, v2): the task files plus generated splits.

The test split is the official task file, unchanged. Each task gets the branch its chart is
generated in from a *branch mix* (a parameter): per task type, exact counts by largest
remainder, assigned to the type's tasks by a seeded permutation. The train and dev splits
are new instances of the same ten templates on patients that no test task uses, with the
same mix. The mix follows one stated rule, `OFFICIAL_MIX`: equal shares over each task
type's branches (`TYPE_BRANCHES`: one branch per distinct decision the type's task text
leads to). It is not fitted to any published figure: the official charts are not available,
so whatever ceiling these charts give (the audit measures it) is set by the generated
records, and the suites say so (`Comparability.generated_records`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from datetime import date, timedelta
from typing import Any

import numpy as np

from harness.core import make_rng
from tasks.medagentbench.data import load_official_tasks, load_patients, patient_name
from tasks.medagentbench.grading import TaskDef

Mix = Mapping[str, Mapping[str, float]]

KIND = {"task1": "demographics", "task2": "demographics", "task3": "demographics",
        "task4": "mg", "task5": "mg", "task6": "glu", "task7": "glu", "task8": "demographics",
        "task9": "k", "task10": "a1c"}
"""Record kind of each official task type."""

TYPE_BRANCHES: Mapping[str, tuple[str, ...]] = {
    "task2": ("default",), "task3": ("default",), "task8": ("default",),
    "task4": ("recent", "stale", "none"),
    "task5": ("mild", "moderate", "severe", "normal", "stale", "none"),
    "task6": ("values", "stale", "none"),
    "task7": ("history", "none"),
    "task9": ("low", "normal", "none"),
    "task10": ("recent", "old", "none"),
}
"""Per task type, the chart branches its task text tells apart: each distinct order the
stated rule prescribes (task5: the three doses of the table; task9: the replacement and the
lab; task10: the new HbA1C) and each distinct reason for answering without an order (a value
in the window, a value only outside it, no value). task1's branch is fixed by its solution."""


def equal_mix(branches: Mapping[str, Sequence[str]]) -> dict[str, dict[str, float]]:
    """Equal shares over each type's branches."""
    return {t: {b: 1 / len(bs) for b in bs} for t, bs in branches.items()}


OFFICIAL_MIX: Mix = equal_mix(TYPE_BRANCHES)
"""The branch mix of the official-task suites: the stated rule `equal_mix(TYPE_BRANCHES)`."""
GENERATED_PER_TYPE = {"train": 20, "dev": 5}
NOT_FOUND_RATE = 0.2
"""Share of generated MRN lookups whose patient does not exist (as in the official files)."""
_LOOKUP = re.compile(r"name (?P<name>.+?) and DOB of (?P<dob>\d{4}-\d{2}-\d{2})")
_BP = re.compile(r'it is "(?P<bp>[^"]+)"')


def quota(mix: Mapping[str, float], n: int) -> dict[str, int]:
    """Exact branch counts for `n` tasks: largest remainder, ties in `mix` order."""
    total = sum(mix.values())
    shares = {b: n * w / total for b, w in mix.items()}
    counts = {b: int(s) for b, s in shares.items()}
    order = sorted(mix, key=lambda b: (-(shares[b] - counts[b]), list(mix).index(b)))
    for branch in order[: n - sum(counts.values())]:
        counts[branch] += 1
    return counts


def assign_branches(n: int, mix: Mapping[str, float], rng: np.random.Generator) -> list[str]:
    """Branches for `n` tasks with exact `quota` counts, in a seeded random order."""
    labels = [b for b, count in quota(mix, n).items() for _ in range(count)]
    return [labels[i] for i in rng.permutation(n)]


def task_params(task_type: str, instruction: str) -> dict[str, Any]:
    if task_type == "task1":
        match = _LOOKUP.search(instruction)
        return {"name": match["name"], "dob": match["dob"]} if match else {}
    if task_type == "task3":
        match = _BP.search(instruction)
        return {"bp": match["bp"]} if match else {}
    return {}


def official_taskdefs(suite: str, version: int, mix: Mix = OFFICIAL_MIX,
                      data_dir: Any = None) -> list[TaskDef]:
    """The test split: every task of ``test_data_v{version}.json`` with its branch."""
    records = load_official_tasks(version, data_dir)
    by_type: dict[str, list[dict]] = {}
    for record in records:
        by_type.setdefault(record["id"].split("_")[0], []).append(record)
    defs = []
    for task_type, group in by_type.items():
        if task_type == "task1":
            branches = ["not_found" if r.get("sol") == ["Patient not found"] else "found"
                        for r in group]
        else:
            branches = assign_branches(len(group), mix[task_type],
                                       make_rng(suite, "branches", task_type))
        for record, branch in zip(group, branches):
            defs.append(TaskDef(
                id=record["id"], task_type=task_type, split="test",
                instruction=record["instruction"], context=record["context"],
                mrn=record.get("eval_MRN"), kind=KIND[task_type], branch=branch,
                sol=tuple(record["sol"]) if "sol" in record else None,
                params=task_params(task_type, record["instruction"]), official=True))
    return defs


def lookup_instruction(template: str, name: str, dob: str) -> str:
    return _LOOKUP.sub(f"name {name} and DOB of {dob}", template, count=1)


def missing_birth_date(patient: dict, patients: Sequence[dict], rng: np.random.Generator
                       ) -> str:
    """A birth date near the patient's that no patient of that name has (a near miss)."""
    name = patient_name(patient)
    taken = {p["birthDate"] for p in patients if patient_name(p) == name}
    birth = date.fromisoformat(patient["birthDate"])
    while True:
        candidate = (birth + timedelta(days=int(rng.choice([-1, 1]) * rng.integers(1, 40)))
                     ).isoformat()
        if candidate not in taken:
            return candidate


def generated_taskdefs(suite: str, templates: Mapping[str, TaskDef], pools: Mapping[str, list],
                       patients: Sequence[dict], mix: Mix = OFFICIAL_MIX) -> list[TaskDef]:
    """Train and dev tasks: the official template of each type on `pools[split]` patients."""
    defs = []
    for split, n in GENERATED_PER_TYPE.items():
        for task_type, template in templates.items():
            rng = make_rng(suite, split, task_type)
            chosen = [pools[split][i] for i in rng.choice(len(pools[split]), n, replace=False)]
            branch_mix = mix.get(task_type) or {"found": 1 - NOT_FOUND_RATE,
                                                "not_found": NOT_FOUND_RATE}
            for k, (patient, branch) in enumerate(zip(chosen, assign_branches(n, branch_mix,
                                                                              rng))):
                mrn, instruction, sol = patient["id"], template.instruction, None
                params = dict(template.params)
                if task_type == "task1":
                    given, family = patient_name(patient)
                    dob = (patient["birthDate"] if branch == "found"
                           else missing_birth_date(patient, patients, rng))
                    instruction = lookup_instruction(instruction, f"{given} {family}", dob)
                    sol = (mrn,) if branch == "found" else ("Patient not found",)
                    params = {"name": f"{given} {family}", "dob": dob}
                    mrn = mrn if branch == "found" else None
                else:
                    instruction = instruction.replace(template.mrn or "", mrn)
                defs.append(TaskDef(f"{task_type}_{split}{k + 1}", task_type, split,
                                    instruction, template.context, mrn, template.kind, branch,
                                    sol, params))
    return defs


def official_suite_taskdefs(suite: str, version: int, mix: Mix = OFFICIAL_MIX,
                            data_dir: Any = None) -> list[TaskDef]:
    """All tasks of ``medagentbench-v{version}``: official test split, generated train/dev."""
    tests = official_taskdefs(suite, version, mix, data_dir)
    patients = load_patients(data_dir)
    used = {t.mrn for t in tests}
    free = [p for p in patients if p["id"] not in used]
    order = make_rng(suite, "patient-pools").permutation(len(free))
    cut = int(0.8 * len(free))
    pools = {"train": [free[i] for i in order[:cut]], "dev": [free[i] for i in order[cut:]]}
    templates = {}
    for task in tests:
        if task.task_type not in templates and (task.mrn or task.task_type != "task1"):
            templates[task.task_type] = task
    return tests + generated_taskdefs(suite, templates, pools, patients, mix)
