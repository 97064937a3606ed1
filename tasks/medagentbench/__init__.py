"""MedAgentBench on a real FHIR server: suites ``medagentbench-v1``, ``-v2`` and ``-v3``.

``medagentbench-v1@2``/``-v2@2`` (`suite_v2`) play the official protocol
(`official_protocol`, `env_official`) and grade with `graders_refsol` (the reference
grader's verdicts, proven by the differential fixture in the tests) and the reference
policy `oracle_official`; the @1 suites keep the FHIR-validating protocol (`protocol`,
`env`) and the graders written from the task texts (`graders_v1`).

Modules: `data` (the shared task files, patients, tool list), `clinical` (clock, codes),
`records` and `branches` (seeded, branch-controlled charts), `search`, `fhirstore`,
`validation`, `server` (FastAPI + uvicorn FHIR R4 server, SQLite storage, per-episode
isolation), `backend` (the process-wide server and client), `protocol` (prompt, actions),
`grading`, `orders`, `rules`, `graders_v1`, `graders_v3` (one grader per task type),
`taskdefs`, `taskdefs_v3`, `v3_texts` (task lists), `oracle`, `env`, `suite`.
The v3 rebuild is documented in ``V3_DESIGN.md`` beside this file.
"""

from tasks.medagentbench.suite import (TRIVIAL_ACTIONS, MedAgentBenchSuite, MedAgentBenchV1Suite,
                                       MedAgentBenchV2Suite, MedAgentBenchV3Suite)

__all__ = ["TRIVIAL_ACTIONS", "MedAgentBenchSuite", "MedAgentBenchV1Suite",
           "MedAgentBenchV2Suite", "MedAgentBenchV3Suite"]
