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

from tasks.alfworld.data import official_data_available  # noqa: E402 - light: no engine import

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
register_suite("webshop", 1, "tasks.webshop:WebShopSuite")
register_suite("webshop-synthetic", 1, "tasks.webshop:WebShopSyntheticSuite")
register_suite("medagentbench-v1", 1, "tasks.medagentbench:MedAgentBenchV1Suite")
register_suite("medagentbench-v2", 1, "tasks.medagentbench:MedAgentBenchV2Suite")
register_suite("medagentbench-v3", 1, "tasks.medagentbench:MedAgentBenchV3Suite")

__all__ = [
    "Env", "EnvCheckError", "StepResult", "Suite", "SuiteBase", "TaskSpec", "check_env",
    "get_suite", "register_suite", "resolve_suite_id", "suite_ids",
]
