"""The ALFWorld suites: ``alfworld@1`` (official data) and ``alfworld-generated@1``.

Both list games with `tasks.alfworld.data.collect_games`; task ids are the game folders
relative to ``json_2.1.1`` (``valid_unseen/pick_and_place_simple-Cloth-None-Toilet-424/
trial_...``); ALFWorld's ``train``/``valid_seen``/``valid_unseen`` are the harness's
``train``/``dev``/``test``; the task type is ALFWorld's (six types).

Command wording, pinned per suite version: version 1 uses the grammar and domain shipped in
``alfworld`` 0.4.x (``alfred.twl2``: ``move X to Y``, not the older ``put X in/on Y``). An
official game is played with that pinned domain and grammar (its own problem and goal sentence
are kept), so every game of ``alfworld@1`` reads the same way whatever data release it comes
from; generated games are written with them already. A different installed grammar is refused.

Scores on the two suites are not comparable: ``alfworld@1`` is the official benchmark (134
``valid_unseen`` games in the official release), ``alfworld-generated@1`` is this project's
deterministic set (`DEFAULT_COUNTS` games per task type and split, generator seed
`DEFAULT_SEED`; task ids ``{split}/{task_type}/{index}``). Its games are generated one at a time,
the first time a task is played (about a second each), into
`tasks.alfworld.data.generated_cache_root`; listing the suite generates nothing.
"""

from __future__ import annotations

import json
import logging
import re
import threading
from pathlib import Path

from harness.core import HarnessError, make_rng
from tasks.alfworld.data import collect_games, generated_cache_root, official_data_root
from tasks.alfworld.env import INSTRUCTIONS, MAX_STEPS, AlfworldEnv
from tasks.base import Comparability, SuiteBase, TaskSpec

__all__ = ["AlfworldSuite", "GeneratedAlfworldSuite", "AlfworldDataMissing", "DEFAULT_COUNTS",
           "DEFAULT_SEED", "pinned_game", "PUT_TEMPLATE"]

log = logging.getLogger(__name__)

DEFAULT_COUNTS = {"train": 100, "valid_seen": 20, "valid_unseen": 20}
"""Games per task type and ALFWorld split in ``alfworld-generated@1`` (the official release has
about 590, 23 and 22 per task type)."""
DEFAULT_SEED = 0
PUT_TEMPLATE = 'template :: "move {o} to {r}";'
"""The pinned wording of ``PutObject`` in ``alfred.twl2`` (suite version 1)."""
TRIVIAL_ACTIONS = {"look": "look", "inventory": "inventory", "help": "help"}
_GOAL = re.compile(r"Your task is to: (.*?)\.\"")


OFFICIAL_COMPARABILITY = Comparability(
    engine="upstream", tasks="upstream", grader="upstream", protocol="rebuilt", data="upstream",
    comparable="comparable with published ALFWorld (text) results on valid_unseen at the same "
               "step limit (50 here); command wording pinned to alfworld 0.4's grammar")
GENERATED_COMPARABILITY = Comparability(
    engine="upstream", tasks="generated", grader="upstream", protocol="rebuilt",
    data="generated", comparable="not comparable: engine exact, games generated",
    generated_records=True)


class AlfworldDataMissing(HarnessError):
    """``ALFWORLD_DATA`` does not point at the official data."""


class AlfworldWordingMismatch(HarnessError):
    """The installed ``alfworld`` grammar is not the wording this suite version pins."""


def _pinned_logic() -> tuple[str, str]:
    from tasks.alfworld.engine import pinned_logic

    domain, grammar = pinned_logic()
    if PUT_TEMPLATE not in grammar:
        raise AlfworldWordingMismatch(
            "the installed alfworld grammar does not use 'move X to Y'; alfworld@1 pins the "
            "alfworld 0.4.x wording: pip install 'alfworld>=0.4.2,<0.5'")
    return domain, grammar


def pinned_game(game_file: str | Path) -> dict:
    """An official ``game.tw-pddl`` with the pinned domain and grammar (its problem and its
    goal sentence kept)."""
    data = json.loads(Path(game_file).read_text())
    domain, grammar = _pinned_logic()
    match = _GOAL.search(data.get("grammar", ""))
    goal = match.group(1) if match else "UNKNOWN GOAL"
    return {**data, "pddl_domain": domain, "grammar": grammar.replace("UNKNOWN GOAL", goal)}


def _is_generated(trial: Path) -> bool:
    """Whether a game folder was written by `tasks.alfworld.generator` (its traj_data says)."""
    try:
        return "generator" in json.loads((trial / "traj_data.json").read_text())
    except (OSError, ValueError):
        return False


class _AlfworldSuiteBase(SuiteBase):
    version = 1
    trivial_actions = TRIVIAL_ACTIONS
    blocking = True
    instructions = INSTRUCTIONS

    def __init__(self, root: Path):
        _pinned_logic()
        self.root = Path(root)
        specs = [TaskSpec(game.task_id, game.split, game.task_type,
                          {"official_split": game.official_split, "floor_plan": game.floor_plan,
                           "max_steps": MAX_STEPS})
                 for game in collect_games(self.root)]
        super().__init__(specs)

    def game_file(self, task_id: str) -> Path:
        self.task(task_id)
        return self.root / "json_2.1.1" / task_id / "game.tw-pddl"


class AlfworldSuite(_AlfworldSuiteBase):
    """ALFWorld on the official data at ``$ALFWORLD_DATA`` (or `root`). A folder written by
    ``harness tasks generate`` is refused unless `allow_generated` (tests, custom sets built in
    the official layout): its scores would not be ``alfworld@1`` scores."""

    name = "alfworld"
    comparability = OFFICIAL_COMPARABILITY
    description = "ALFWorld (official data, real TextWorld/Fast Downward engine), 6 task types"

    def __init__(self, root: str | Path | None = None, *, allow_generated: bool = False):
        root = Path(root) if root is not None else official_data_root()
        if root is None:
            raise AlfworldDataMissing(
                "ALFWORLD_DATA does not point at the official ALFWorld data (json_2.1.1/...); "
                "run `alfworld-download` and set ALFWORLD_DATA, or use alfworld-generated")
        super().__init__(root)
        if not allow_generated and self._specs and _is_generated(self.root / "json_2.1.1" / self._specs[0].id):
            raise AlfworldDataMissing(
                f"{self.root} holds games written by `harness tasks generate`, not the official "
                "data; scores on them are not alfworld@1 scores")

    def make_env(self, task_id: str) -> AlfworldEnv:
        return AlfworldEnv(pinned_game(self.game_file(task_id)), max_steps=MAX_STEPS)


class GeneratedAlfworldSuite(SuiteBase):
    """ALFWorld on this project's generated games: a fixed list of `DEFAULT_COUNTS` games per
    task type and split, each generated (and checked) the first time it is used and kept under
    ``root`` (default `tasks.alfworld.data.generated_cache_root`)."""

    name = "alfworld-generated"
    version = 1
    comparability = GENERATED_COMPARABILITY
    description = ("ALFWorld on generated games (shipped floor plans and goal templates, real "
                   "engine), 6 task types; not comparable with the official data")
    trivial_actions = TRIVIAL_ACTIONS
    blocking = True
    instructions = INSTRUCTIONS

    def __init__(self, root: str | Path | None = None):
        from tasks.alfworld.data import OFFICIAL_SPLITS, SIX_TASK_TYPES, SPLIT_OF
        from tasks.alfworld.generator import GENERATOR_VERSION, base_seed

        base = Path(root) if root is not None else generated_cache_root()
        self.root = base / f"v{GENERATOR_VERSION}-seed{DEFAULT_SEED}"
        self.base = base_seed(make_rng("alfworld-generated", DEFAULT_SEED))
        self._lock = threading.Lock()
        specs = [TaskSpec(f"{split}/{task_type}/{index:04d}", SPLIT_OF[split], task_type,
                          {"official_split": split, "index": index, "max_steps": MAX_STEPS})
                 for split in OFFICIAL_SPLITS for task_type in SIX_TASK_TYPES
                 for index in range(DEFAULT_COUNTS[split])]
        super().__init__(specs)

    def game_file(self, task_id: str) -> Path:
        """The task's ``game.tw-pddl``, generated first if it is not on disk yet."""
        from tasks.alfworld.generator import find_game, generate_one

        spec = self.task(task_id)
        key = (spec.metadata["official_split"], spec.task_type, spec.metadata["index"])
        with self._lock:
            found = find_game(self.root, self.base, *key)
            if found is None:
                _pinned_logic()
                log.info("generating ALFWorld game %s under %s", task_id, self.root)
                record = generate_one(self.root, self.base, *key)
                found = self.root / record.path / "game.tw-pddl"
            return found

    def make_env(self, task_id: str) -> AlfworldEnv:
        self.task(task_id)
        return AlfworldEnv(lambda: self.game_file(task_id), max_steps=MAX_STEPS)
