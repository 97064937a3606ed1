"""Where ALFWorld games live, and how they are listed (no engine import here).

- Official data: ``$ALFWORLD_DATA`` laid out as ``alfworld-download`` lays it out,
  ``json_2.1.1/{train,valid_seen,valid_unseen}/{task folder}/{trial}/`` with ``game.tw-pddl``
  and ``traj_data.json``. `official_data_root` is that folder when it holds ``json_2.1.1``.
- Generated data: a deterministic default set written on first use under ``$ALFWORLD_CACHE``
  (default ``results/cache/alfworld-generated``, relative to the working directory, like the
  results database), one subfolder per generator version and seed.

`collect_games` lists games as ``AlfredTWEnv.collect_game_files`` does: folders holding
``traj_data.json``, skipping ``movable`` and ``Sliced`` trajectories, task types outside the six,
folders without ``game.tw-pddl`` and games not marked ``"solvable": true``. The task type is
read from the task folder name (``{task_type}-{object}-{mrecep}-{parent}-{scene}``), which is
how the official data names it.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

__all__ = ["OFFICIAL_SPLITS", "SPLIT_OF", "SIX_TASK_TYPES", "GameEntry", "official_data_root",
           "generated_cache_root", "collect_games", "official_data_available"]

OFFICIAL_SPLITS = ("train", "valid_seen", "valid_unseen")
SPLIT_OF = {"train": "train", "valid_seen": "dev", "valid_unseen": "test"}
"""ALFWorld split -> harness split (``valid_unseen``, ALFWorld's reported split, is ``test``)."""
SIX_TASK_TYPES = ("pick_and_place_simple", "look_at_obj_in_light",
                  "pick_clean_then_place_in_recep", "pick_heat_then_place_in_recep",
                  "pick_cool_then_place_in_recep", "pick_two_obj_and_place")
_SOLVABLE = re.compile(rb'"solvable"\s*:\s*true')


@dataclass(frozen=True)
class GameEntry:
    """One game: `task_id` is its folder relative to ``json_2.1.1`` (``split/task/trial``)."""

    task_id: str
    official_split: str
    task_type: str
    floor_plan: int

    @property
    def split(self) -> str:
        return SPLIT_OF[self.official_split]


def official_data_root() -> Path | None:
    """``$ALFWORLD_DATA`` when it holds ``json_2.1.1``, else None."""
    value = os.environ.get("ALFWORLD_DATA")
    if not value:
        return None
    root = Path(value).expanduser()
    return root if (root / "json_2.1.1").is_dir() else None


def official_data_available() -> bool:
    return official_data_root() is not None


def generated_cache_root() -> Path:
    """``$ALFWORLD_CACHE``, else ``results/cache/alfworld-generated``."""
    return Path(os.environ.get("ALFWORLD_CACHE") or "results/cache/alfworld-generated")


def _task_type(folder: str) -> str | None:
    return next((t for t in SIX_TASK_TYPES if folder.startswith(t + "-")), None)


def collect_games(root: str | Path) -> list[GameEntry]:
    """The solvable games of the six task types under ``root/json_2.1.1``, sorted by id."""
    base = Path(root) / "json_2.1.1"
    games = []
    for split in OFFICIAL_SPLITS:
        for traj in sorted((base / split).glob("*/*/traj_data.json")):
            trial = traj.parent
            task_folder = trial.parent.name
            task_type = _task_type(task_folder)
            if "movable" in str(trial) or "Sliced" in str(trial) or task_type is None:
                continue
            game_file = trial / "game.tw-pddl"
            if not game_file.is_file() or not _SOLVABLE.search(game_file.read_bytes()):
                continue
            scene = task_folder.rsplit("-", 1)[-1]
            games.append(GameEntry(f"{split}/{task_folder}/{trial.name}", split, task_type,
                                   int(scene) if scene.isdigit() else -1))
    return games
