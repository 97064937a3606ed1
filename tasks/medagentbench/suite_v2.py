"""Suites ``medagentbench-v1@2`` and ``medagentbench-v2@2``: the official tasks under the
official protocol, graded with the reference grader's verdicts.

Same task lists, splits and generated charts as the @1 suites (`taskdefs`, the branch mix
`taskdefs.OFFICIAL_MIX`); what changes is the protocol (`official_protocol`: POSTs
acknowledged and not executed, an invalid turn ends the episode, 8 rounds) and the graders
(`graders_refsol`, equal to the reference grader on the differential fixture). Option
``protocol="fhir"`` keeps the @1 protocol and graders (POSTs validated and executed on the
server, invalid turns continue, `graders_v1` grading the accepted resources) on the @2
charts; it is registered as ``medagentbench-v1-fhir@2`` and ``medagentbench-v2-fhir@2``.
The reference grader's conventions cannot be used there: it requires a medication
``route`` to be a plain string, which a FHIR R4 server rejects.
"""

from __future__ import annotations

from typing import Any

from harness.core import UnknownNameError
from tasks.base import Comparability, Env
from tasks.medagentbench.data import data_dir as resolve_data_dir
from tasks.medagentbench import graders_v1
from tasks.medagentbench.env import MedAgentBenchEnv
from tasks.medagentbench.env_official import OfficialProtocolEnv
from tasks.medagentbench.graders_refsol import GRADERS
from tasks.medagentbench.official_protocol import MAX_ROUNDS
from tasks.medagentbench.oracle import ORACLES
from tasks.medagentbench.oracle_official import ORACLES_OFFICIAL
from tasks.medagentbench.suite import MedAgentBenchSuite
from tasks.medagentbench.taskdefs import OFFICIAL_MIX, Mix, official_suite_taskdefs

PROTOCOLS = ("official", "fhir")
EVIDENCE = "tests/tasks/medagentbench/test_mab_refsol_fixture.py"
COMPARABILITY = Comparability(
    engine="rebuilt", tasks="upstream", grader="upstream", protocol="upstream",
    data="generated", generated_records=True, evidence=EVIDENCE,
    comparable=("not comparable: official tasks, grader and protocol, but generated charts "
                "(the official records are not available)"))
COMPARABILITY_FHIR = Comparability(
    engine="rebuilt", tasks="upstream", grader="rebuilt", protocol="rebuilt",
    data="generated", generated_records=True, evidence="",
    comparable=("not comparable: official tasks; graders written from the task texts; "
                "POSTs executed on a validating server; generated charts"))


class OfficialProtocolSuite(MedAgentBenchSuite):
    """Shared machinery of the @2 suites; `protocol` is ``"official"`` or ``"fhir"``."""

    version = 2
    graders = GRADERS
    _file_version = 1
    """Which official task file (test_data_v1.json or _v2) the suite plays."""

    def __init__(self, *, mix: Mix = OFFICIAL_MIX, protocol: str = "official",
                 max_steps: int = MAX_ROUNDS, **options: Any):
        if protocol not in PROTOCOLS:
            raise UnknownNameError("MedAgentBench protocol", protocol, PROTOCOLS)
        self.protocol = protocol
        self.comparability = COMPARABILITY if protocol == "official" else COMPARABILITY_FHIR
        data = resolve_data_dir(options.get("data_dir"))
        super().__init__(official_suite_taskdefs(self.base_name, self._file_version, mix, data),
                         max_steps=max_steps, **options)

    @property
    def base_name(self) -> str:
        return self.name.removesuffix("-fhir")

    def make_env(self, task_id: str) -> Env:
        task = self.task_def(task_id)
        common = dict(suite_id=f"{self.base_name}@{self.version}", backend=self.backend,
                      functions=self.functions, api_base=self.api_base,
                      max_steps=self.max_steps)
        kind = task.task_type
        if self.protocol == "fhir":
            return MedAgentBenchEnv(task, grader=graders_v1.GRADERS[kind], oracle=ORACLES[kind],
                                    **common)
        return OfficialProtocolEnv(task, grader=GRADERS[kind], oracle=ORACLES_OFFICIAL[kind],
                                   **common)


class MedAgentBenchV1Suite2(OfficialProtocolSuite):
    name = "medagentbench-v1"
    description = ("MedAgentBench v1: the 100 official tasks under the official protocol "
                   "(POSTs acknowledged, not executed) with the reference grader's verdicts; "
                   "generated charts (equal branch shares); train/dev generated.")


class MedAgentBenchV2Suite2(OfficialProtocolSuite):
    name = "medagentbench-v2"
    _file_version = 2
    description = ("MedAgentBench v2: the 300 official tasks under the official protocol "
                   "(POSTs acknowledged, not executed) with the reference grader's verdicts; "
                   "generated charts (equal branch shares); train/dev generated.")


class MedAgentBenchV1FhirSuite2(MedAgentBenchV1Suite2):
    name = "medagentbench-v1-fhir"
    description = ("medagentbench-v1@2 with protocol=fhir: POSTs validated and executed, "
                   "invalid turns continue, the @1 graders.")

    def __init__(self, **options: Any):
        super().__init__(protocol="fhir", **options)


class MedAgentBenchV2FhirSuite2(MedAgentBenchV2Suite2):
    name = "medagentbench-v2-fhir"
    description = ("medagentbench-v2@2 with protocol=fhir: POSTs validated and executed, "
                   "invalid turns continue, the @1 graders.")

    def __init__(self, **options: Any):
        super().__init__(protocol="fhir", **options)
