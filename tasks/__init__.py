"""Environments behind one text-in/text-out Env contract, and the suite registry."""

from tasks.base import (
    Env,
    EnvCheckError,
    StepResult,
    Suite,
    SuiteBase,
    TaskSpec,
    check_env,
    get_suite,
    register_suite,
    resolve_suite_id,
    suite_ids,
)

import os  # noqa: E402

from tasks.alfworld.data import official_data_available  # noqa: E402 - light: no engine import
from tasks.datasets import register_dataset  # noqa: E402
from tasks.plugins import register_bench, register_bench_part, register_commands, \
    register_generator  # noqa: E402

register_suite("frozenlake", 1, "tasks.frozenlake:FrozenLakeSuite")
register_suite("frozenlake-slippery", 1, "tasks.frozenlake:SlipperyFrozenLakeSuite")
register_suite("frozenlake-random", 1, "tasks.frozenlake_random:RandomFrozenLakeSuite")
register_suite("sokoban", 1, "tasks.sokoban:SokobanSuite")
register_suite("minesweeper", 1, "tasks.minesweeper:MinesweeperSuite")
register_suite("alfworld-generated", 1, "tasks.alfworld:GeneratedAlfworldSuite")
if official_data_available():
    register_suite("alfworld", 1, "tasks.alfworld:AlfworldSuite")
# needs Java 17 and the scienceworld extra; without them `harness list` marks it unavailable
register_suite("scienceworld", 1, "tasks.scienceworld:ScienceWorldSuite")
register_suite("webshop", 1, "tasks.webshop:WebShopSuiteV1")  # earlier reward variant
register_suite("webshop", 2, "tasks.webshop:WebShopSuite")
register_suite("webshop-synthetic", 1, "tasks.webshop:WebShopSyntheticSuite")
register_suite("medagentbench-v1", 1, "tasks.medagentbench:MedAgentBenchV1Suite")
register_suite("medagentbench-v2", 1, "tasks.medagentbench:MedAgentBenchV2Suite")
register_suite("medagentbench-v3", 1, "tasks.medagentbench:MedAgentBenchV3Suite")
# sandboxed shell tasks (bubblewrap + a Debian rootfs; `harness list` marks them unavailable
# without); terminal-bench@1 reads TERMINAL_BENCH_TASKS
register_suite("terminal-lite", 2, "tasks.terminal:TerminalLiteSuite")
if os.environ.get("TERMINAL_BENCH_TASKS"):
    register_suite("terminal-bench", 1, "tasks.terminal:TerminalBenchSuite")
# needs the sandbox and desktop-env (--no-deps); without them `harness list` marks it unavailable
register_suite("osworld-files", 1, "tasks.osworld:OSWorldFilesSuite")
register_suite("appworld-lite", 2, "tasks.appworld:AppWorldLiteSuite")
register_suite("appworld-lite", 3, "tasks.appworld:AppWorldLiteSuiteV3")  # + scope templates
from tasks.appworld.official import official_available as _appworld_available  # noqa: E402
if _appworld_available() is None:  # PyPI appworld (its own venv) and APPWORLD_ROOT data
    register_suite("appworld", 1, "tasks.appworld.official:AppWorldOfficialSuite")
# SWE-bench: swe-lite@2 is bundled; the official tables (SWEBENCH_DATA or ../shared/data/swebench)
# need the repositories (a mirror directory in SWEBENCH_REPOS) for the local sandbox backend
register_suite("swe-lite", 2, "tasks.swebench:SweLiteSuite")
if os.environ.get("SWEBENCH_REPOS"):
    register_suite("swebench-verified", 2, "tasks.swebench:VerifiedSuite")
    register_suite("swebench-lite", 2, "tasks.swebench:LiteSuite")
    register_suite("swebench-dev", 2, "tasks.swebench:DevSuite")

# what families plug into the command line (`tasks.plugins`): their commands and servers,
# their `harness bench` entries, their parts of the engine's benches, their generators
register_commands("tasks.medagentbench.cli")  # harness serve-fhir
register_commands("tasks.swebench.cli")  # harness swebench validate / crosscheck
register_bench("medagentbench", "tasks.medagentbench.cli:medagentbench_report")
register_bench("webshop", "tasks.webshop.bench:webshop_report")
register_bench("sandbox", "tasks.terminal.bench:sandbox_report")
register_bench("dbbench", "tasks.dbbench.bench:dbbench_report")
register_bench("swebench", "tasks.swebench.bench:swebench_report")
register_bench_part("env", "alfworld", "tasks.alfworld.bench:alfworld_bench")
register_bench_part("env", "webshop", "tasks.webshop.bench:webshop_env_bench")
register_bench_part("signals", "frozenlake", "tasks.frozenlake_bench:exact_q_lines")
register_generator("alfworld", "tasks.alfworld.tools")

# data sets the suites read (`harness data pull SUITE`); declared beside each family's loader
register_dataset("webshop", "tasks.webshop.sources:DATASET")
for _name in ("medagentbench-v1", "medagentbench-v2", "medagentbench-v3"):
    register_dataset(_name, "tasks.medagentbench.sources:DATASET")
register_suite("medagentbench-v1", 2, "tasks.medagentbench.suite_v2:MedAgentBenchV1Suite2")
register_suite("medagentbench-v2", 2, "tasks.medagentbench.suite_v2:MedAgentBenchV2Suite2")
# the @2 suites with protocol=fhir (the @1 protocol: POSTs validated and executed)
register_suite("medagentbench-v1-fhir", 2,
               "tasks.medagentbench.suite_v2:MedAgentBenchV1FhirSuite2")
register_suite("medagentbench-v2-fhir", 2,
               "tasks.medagentbench.suite_v2:MedAgentBenchV2FhirSuite2")
# τ-bench (TAUBENCH_DATA or ../shared/data/taubench; user simulator from TAUBENCH_USER) and
# DB-Bench (a MariaDB server the suite starts on a private Unix socket)
register_suite("taubench-retail", 1, "tasks.taubench:TauRetailSuite")
register_suite("taubench-airline", 1, "tasks.taubench:TauAirlineSuite")
register_dataset("taubench-retail", "tasks.taubench.sources:DATASET")
register_dataset("taubench-airline", "tasks.taubench.sources:DATASET")
register_suite("dbbench", 2, "tasks.dbbench:DBBenchSuite")
register_dataset("dbbench", "tasks.dbbench.sources:DATASET")

__all__ = [
    "Env", "EnvCheckError", "StepResult", "Suite", "SuiteBase", "TaskSpec", "check_env",
    "get_suite", "register_suite", "resolve_suite_id", "suite_ids",
]
