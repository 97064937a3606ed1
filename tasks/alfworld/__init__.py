"""ALFWorld in the real engine (PyPI ``alfworld`` + ``textworld``, TextWorld's PDDL backend
with ALFWorld's ``alfred.pddl`` and ``alfred.twl2``): ``alfworld@1`` on the official data
(``$ALFWORLD_DATA``) and ``alfworld-generated@1`` on games generated from the floor plans and
goal templates shipped in the ``alfworld`` package.

Modules: `data` (where games live, listing), `scenes` and `problems` (floor plans, random
scenes, ALFRED-style PDDL problems), `generator` (`generate_games`), `planning` (the replanning
task), `speedups` (memoised engine internals), `engine` (one game in the stock engine), `env`
(the Env protocol), `suite` (the two suites). Importing this package does not import the engine.
"""

from tasks.alfworld.data import collect_games, official_data_available, official_data_root
from tasks.alfworld.env import GAMMA, INSTRUCTIONS, MAX_STEPS, AlfworldEnv
from tasks.alfworld.suite import (DEFAULT_COUNTS, AlfworldDataMissing, AlfworldSuite,
                                  GeneratedAlfworldSuite, pinned_game)


def generate_games(out_dir, n, rng, **options):
    """`tasks.alfworld.generator.generate_games` (imported on use)."""
    from tasks.alfworld.generator import generate_games as generate

    return generate(out_dir, n, rng, **options)


__all__ = [
    "AlfworldDataMissing", "AlfworldEnv", "AlfworldSuite", "DEFAULT_COUNTS", "GAMMA",
    "GeneratedAlfworldSuite", "INSTRUCTIONS", "MAX_STEPS", "collect_games",
    "generate_games", "official_data_available", "official_data_root", "pinned_game",
]
