"""The suites: ``medagentbench-v1`` (100 official tasks), ``-v2`` (300) and ``-v3`` (the
rebuild, 500 test tasks of 20 types). All three run over the same FHIR server; see the
package docstring and V3_DESIGN.md. Tasks whose type decides whether to order declare their
answerability (`tasks.medagentbench.answerability`)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from tasks.base import Comparability, SuiteBase, TaskSpec
from tasks.medagentbench import graders_v1, graders_v3
from tasks.medagentbench.answerability import answerability
from tasks.medagentbench.backend import FhirBackend
from tasks.medagentbench.clinical import OFFICIAL_API_BASE
from tasks.medagentbench.data import data_dir as resolve_data_dir
from tasks.medagentbench.data import load_functions
from tasks.medagentbench.env import MAX_STEPS, MedAgentBenchEnv
from tasks.medagentbench.grading import Grader, TaskDef
from tasks.medagentbench.oracle import ORACLES
from tasks.medagentbench.protocol import INSTRUCTIONS
from tasks.medagentbench.taskdefs import OFFICIAL_MIX, Mix, official_suite_taskdefs
from tasks.medagentbench.taskdefs_v3 import v3_taskdefs

TRIVIAL_ACTIONS = {"finish-empty": "FINISH([])", "finish-minus-one": "FINISH([-1])"}
"""The "finish without acting" answers the audit plays (``noop:finish-empty`` ...)."""

COMPARABILITY_V1 = Comparability(
    engine="rebuilt", tasks="upstream", grader="rebuilt", protocol="rebuilt", data="generated",
    comparable="not comparable: graders and protocol differ from the official ones (the @2 "
               "suites follow them); charts generated",
    generated_records=True)
"""``medagentbench-v1@1`` and ``-v2@1``: official task files and prompt, graders rewritten from
the task texts (their pass sets differ from the reference grader's), POSTs executed."""
COMPARABILITY_V3 = Comparability(
    engine="rebuilt", tasks="rebuilt", grader="rebuilt", protocol="rebuilt", data="generated",
    comparable="not comparable: a rebuild of the published MedAgentBench-v3 design, not "
               "MAB-v3 itself", generated_records=True)


class MedAgentBenchSuite(SuiteBase):
    """Shared machinery; subclasses set the name, version and task list."""

    trivial_actions = TRIVIAL_ACTIONS
    blocking = True
    instructions = INSTRUCTIONS
    multiline_actions = True  # POST url, then the JSON body on the following lines
    graders: Mapping[str, Grader] = graders_v1.GRADERS

    def __init__(self, defs: list[TaskDef], *, data_dir: str | os.PathLike | None = None,
                 max_steps: int = MAX_STEPS, api_base: str = OFFICIAL_API_BASE):
        self.data_dir = resolve_data_dir(data_dir)
        self.max_steps, self.api_base = max_steps, api_base
        self.functions = load_functions(self.data_dir)
        self._defs = {d.id: d for d in defs}
        super().__init__([TaskSpec(d.id, d.split, d.task_type, {
            "mrn": d.mrn, "branch": d.branch, "record_kind": d.kind, "official": d.official,
            "max_steps": max_steps}, answerability(d.task_type, d.branch)) for d in defs])

    def task_def(self, task_id: str) -> TaskDef:
        self.task(task_id)
        return self._defs[task_id]

    def backend(self) -> FhirBackend:
        """The shared FHIR backend of this suite's data directory (started on first use)."""
        return FhirBackend.shared(self.data_dir)

    def make_env(self, task_id: str) -> MedAgentBenchEnv:
        task = self.task_def(task_id)
        return MedAgentBenchEnv(task, suite_id=self.id, grader=self.graders[task.task_type],
                                oracle=ORACLES[task.task_type], backend=self.backend,
                                functions=self.functions, api_base=self.api_base,
                                max_steps=self.max_steps)


class MedAgentBenchV1Suite(MedAgentBenchSuite):
    name, version = "medagentbench-v1", 1
    comparability = COMPARABILITY_V1
    description = ("MedAgentBench v1, earlier variant: the 100 official tasks on a FHIR "
                   "R4 server (POSTs validated and executed), graders written from the task "
                   "texts, generated charts (equal branch shares); train/dev generated.")

    def __init__(self, *, mix: Mix = OFFICIAL_MIX, **options: Any):
        data = resolve_data_dir(options.get("data_dir"))
        super().__init__(official_suite_taskdefs(self.name, 1, mix, data), **options)


class MedAgentBenchV2Suite(MedAgentBenchSuite):
    name, version = "medagentbench-v2", 1
    comparability = COMPARABILITY_V1
    description = ("MedAgentBench v2, earlier variant: the 300 official tasks on a FHIR "
                   "R4 server (POSTs validated and executed), graders written from the task "
                   "texts, generated charts (equal branch shares); train/dev generated.")

    def __init__(self, *, mix: Mix = OFFICIAL_MIX, **options: Any):
        data = resolve_data_dir(options.get("data_dir"))
        super().__init__(official_suite_taskdefs(self.name, 2, mix, data), **options)


class MedAgentBenchV3Suite(MedAgentBenchSuite):
    name, version = "medagentbench-v3", 1
    comparability = COMPARABILITY_V3
    description = ("MedAgentBench-v3 rebuild: 500 test tasks of 20 types, balanced branches, "
                   "graders that check required and unrequested orders (silent-finish "
                   "ceiling 4%).")
    graders = graders_v3.GRADERS

    def __init__(self, **options: Any):
        data = resolve_data_dir(options.get("data_dir"))
        super().__init__(v3_taskdefs(data), **options)
