"""MedAgentBench on a real FHIR server: suites ``medagentbench-v1``, ``-v2`` and ``-v3``.

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
