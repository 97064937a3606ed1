"""Generate ALFWorld games in the official layout from the floor plans and goal templates that
ship inside the ``alfworld`` package.

`generate_games` writes ``json_2.1.1/{train,valid_seen,valid_unseen}/{task folder}/{trial}/``
with ``game.tw-pddl`` (the JSON ``alfworld-generate`` writes: ``pddl_domain``, ``grammar`` with
the goal sentence in place of ``UNKNOWN GOAL``, ``pddl_problem``, ``solvable``,
``walkthrough``), ``initial_state.pddl`` and ``traj_data.json``. A game is kept only when the
bundled planner solves it from the start with at most `MAX_PLAN` steps and that plan, replayed
command by command through the real engine, reaches ``won`` on its last step and not before.

Splits follow ALFRED: ``train`` and ``valid_seen`` draw floor plans from ALFRED's training
scenes except the four unseen ones; ``valid_unseen`` uses only floor plans 10, 219, 308 and 424.
Task types are allowed in the rooms ALFRED allows them (``GOALS_VALID``: heat and cool in
kitchens, clean in kitchens and bathrooms, look-in-light in living rooms and bedrooms, pick and
pick-two everywhere). A task never names the appliance of its own state change as the place
to put the object (no "heat ... put it in the microwave"), and the initial state never
satisfies the goal.

Game ``i`` of a (split, task type) is drawn from ``make_rng(base, split, task_type, i,
attempt)`` where ``base`` is drawn once from the caller's generator, so a game does not depend on
how many others are generated or on the number of worker processes.
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from harness.core import make_rng, stable_hash
from tasks.alfworld.problems import TASK_TYPES, TaskParams, goal_text, scene_problem, traj_data
from tasks.alfworld.scenes import (FLOOR_PLANS, LAMPS, UNSEEN_FLOOR_PLANS, load_floor_plan,
                                   pickupable_types, room_type, sample_scene)

__all__ = ["GENERATOR_VERSION", "MAX_PLAN", "OFFICIAL_SPLITS", "GameRecord", "GenerationReport",
           "generate_games", "generate_one", "find_game", "floor_plans_for", "trial_name",
           "base_seed"]

log = logging.getLogger(__name__)

GENERATOR_VERSION = 1
MAX_PLAN = 40
"""Longest accepted plan; the suites stop episodes at 50 steps."""
MAX_ATTEMPTS = 200
OFFICIAL_SPLITS = ("train", "valid_seen", "valid_unseen")
ROOMS = {"pick_and_place_simple": {"Kitchen", "LivingRoom", "Bathroom", "Bedroom"},
         "pick_two_obj_and_place": {"Kitchen", "LivingRoom", "Bathroom", "Bedroom"},
         "look_at_obj_in_light": {"LivingRoom", "Bedroom"},
         "pick_clean_then_place_in_recep": {"Kitchen", "Bathroom"},
         "pick_heat_then_place_in_recep": {"Kitchen"},
         "pick_cool_then_place_in_recep": {"Kitchen"}}
"""ALFRED's ``constants.GOALS_VALID`` for the six ALFWorld task types."""
_APPLIANCE = {"pick_clean_then_place_in_recep": ("SinkBasin", "Cleanable"),
              "pick_heat_then_place_in_recep": ("Microwave", "Heatable"),
              "pick_cool_then_place_in_recep": ("Fridge", "Coolable")}
_TRAIN_SCENES = tuple(n for n in FLOOR_PLANS if n % 100 >= 7 and n not in UNSEEN_FLOOR_PLANS)
"""ALFRED's ``TRAIN_SCENE_NUMBERS`` (7-30 of each room type) minus the unseen floor plans."""


@dataclass(frozen=True)
class GameRecord:
    """One written game: its folder relative to the output root, and how it was found."""

    path: str
    split: str
    task_type: str
    plan_length: int
    attempts: int


@dataclass(frozen=True)
class GenerationReport:
    games: tuple[GameRecord, ...]
    seconds: float

    def counts(self) -> dict[tuple[str, str], int]:
        out: dict[tuple[str, str], int] = {}
        for game in self.games:
            out[game.split, game.task_type] = out.get((game.split, game.task_type), 0) + 1
        return out


def floor_plans_for(split: str, task_type: str) -> tuple[int, ...]:
    """The floor plans a game of `task_type` in `split` may use."""
    pool = UNSEEN_FLOOR_PLANS if split == "valid_unseen" else _TRAIN_SCENES
    return tuple(n for n in pool if room_type(n) in ROOMS[task_type])


def _constants():
    import alfworld.gen.constants as constants

    return constants


def _candidate_params(task_type: str, floor_plan: int) -> list[tuple[TaskParams, int]]:
    """Every ``(params, minimum instances of the object)`` the floor plan allows."""
    plan = load_floor_plan(floor_plan)
    constants = _constants()
    present = plan.object_types
    receptacle_types = {r.type for r in plan.receptacles} | (
        present & (set(constants.RECEPTACLES) - set(constants.MOVABLE_RECEPTACLES)))
    objects = sorted(present & pickupable_types())
    out = []
    if task_type == "look_at_obj_in_light":
        for lamp in sorted(present & set(LAMPS)):
            out += [(TaskParams(task_type, obj, toggle_target=lamp), 1) for obj in objects]
        return out
    appliance, ability = _APPLIANCE.get(task_type, (None, None))
    if appliance is not None and appliance not in receptacle_types:
        return []
    for obj in objects:
        if ability is not None and obj not in constants.VAL_ACTION_OBJECTS[ability]:
            continue
        for parent in sorted(receptacle_types):
            if parent == appliance or obj not in constants.VAL_RECEPTACLE_OBJECTS.get(parent, ()):
                continue
            minimum = 2 if task_type == "pick_two_obj_and_place" else 1
            out.append((TaskParams(task_type, obj, parent), minimum))
    return out


def _draw(split: str, task_type: str, rng: np.random.Generator):
    plans = floor_plans_for(split, task_type)
    while True:
        floor_plan = plans[int(rng.integers(len(plans)))]
        candidates = _candidate_params(task_type, floor_plan)
        if candidates:
            params, minimum = candidates[int(rng.integers(len(candidates)))]
            scene = sample_scene(load_floor_plan(floor_plan), rng, {params.object_target: minimum})
            if scene.count(params.object_target) >= minimum and _has_target(scene, params):
                return params, scene


def _has_target(scene, params: TaskParams) -> bool:
    if params.toggle_target:
        return scene.count(params.toggle_target) > 0
    return params.parent_target in scene.receptacle_types()


def _verify(game: dict) -> list[str] | None:
    """The planner's plan if it reaches ``won`` through the real engine, else None."""
    from tasks.alfworld.engine import Engine

    engine = Engine(game)
    if engine.won:
        return None
    plan = engine.plan()
    if not plan or len(plan) > MAX_PLAN:
        return None
    for index, command in enumerate(plan):
        if not engine.step(command) or engine.won != (index == len(plan) - 1):
            return None
    return list(plan)


def trial_name(base: int, split: str, task_type: str, index: int) -> str:
    """The trial folder of game `index` (fixed by the seed, not by what is drawn)."""
    return f"trial_G{stable_hash(f'{base}/{split}/{task_type}/{index}') % 10**12:012d}"


def find_game(out_dir: str | Path, base: int, split: str, task_type: str,
              index: int) -> Path | None:
    """The ``game.tw-pddl`` of game `index` when it was written under `out_dir`, else None."""
    trial = trial_name(base, split, task_type, index)
    found = sorted((Path(out_dir) / "json_2.1.1" / split).glob(f"{task_type}-*/{trial}/"
                                                               "game.tw-pddl"))
    return found[0] if found else None


def _write(path: Path, text: str) -> None:
    """Write atomically: a reader never sees a partly written file."""
    partial = path.with_name(f".{path.name}.{os.getpid()}.partial")
    partial.write_text(text)
    os.replace(partial, path)


def generate_one(out_dir: str | Path, base: int, split: str, task_type: str,
                 index: int) -> GameRecord:
    """Draw, check and write game `index` of (`split`, `task_type`); see the module docstring.
    ``game.tw-pddl`` is written last, so its presence marks a complete game."""
    from tasks.alfworld.engine import pinned_logic

    domain, grammar = pinned_logic()
    for attempt in range(MAX_ATTEMPTS):
        rng = make_rng("alfworld-generator", GENERATOR_VERSION, base, split, task_type, index,
                       attempt)
        params, scene = _draw(split, task_type, rng)
        trial = trial_name(base, split, task_type, index)
        problem = scene_problem(scene, params, f"plan_{trial}")
        goal = goal_text(params, int(rng.integers(2)))
        game = {"pddl_domain": domain, "grammar": grammar.replace("UNKNOWN GOAL", goal),
                "pddl_problem": problem, "solvable": None, "walkthrough": None}
        plan = _verify(game)
        if plan is None:
            continue
        game.update(solvable=True, walkthrough=plan)
        folder = Path("json_2.1.1") / split / params.directory(scene.floor_plan) / trial
        target = Path(out_dir) / folder
        target.mkdir(parents=True, exist_ok=True)
        seed = int(rng.integers(2**31))
        info = traj_data(params, scene, task_id=trial, goal=goal, plan=plan, seed=seed)
        _write(target / "initial_state.pddl", problem)
        _write(target / "traj_data.json", json.dumps(info, indent=1))
        _write(target / "game.tw-pddl", json.dumps(game))
        return GameRecord(str(folder), split, task_type, len(plan), attempt + 1)
    raise RuntimeError(f"no solvable {task_type} game in {split} after {MAX_ATTEMPTS} attempts")


def base_seed(rng: np.random.Generator) -> int:
    """The one number `generate_games` draws from its generator; every game derives from it."""
    return int(rng.integers(2**62))


def _jobs(n: int | Mapping[str, int], splits: Sequence[str],
          task_types: Iterable[str]) -> list[tuple[str, str, int]]:
    counts = {split: n for split in splits} if isinstance(n, int) else dict(n)
    return [(split, task_type, index) for split in splits for task_type in task_types
            for index in range(counts.get(split, 0))]


def generate_games(out_dir: str | Path, n: int | Mapping[str, int], rng: np.random.Generator,
                   *, splits: Sequence[str] = OFFICIAL_SPLITS,
                   task_types: Sequence[str] = tuple(TASK_TYPES.values()),
                   workers: int = 1) -> GenerationReport:
    """Write `n` games per task type in each of `splits` (or ``n[split]`` per task type) under
    `out_dir`; `workers` processes share the work. Returns what was written."""
    unknown = set(splits) - set(OFFICIAL_SPLITS) or set(task_types) - set(TASK_TYPES.values())
    if unknown:
        raise ValueError(f"unknown splits or task types: {sorted(unknown)}")
    base = base_seed(rng)
    jobs = _jobs(n, splits, task_types)
    started = time.perf_counter()
    Path(out_dir).mkdir(parents=True, exist_ok=True)
    if workers <= 1 or len(jobs) <= 1:
        games = [generate_one(out_dir, base, *job) for job in jobs]
    else:
        with ProcessPoolExecutor(max_workers=workers) as pool:
            games = list(pool.map(_generate_job, [(str(out_dir), base, *job) for job in jobs],
                                  chunksize=4))
    report = GenerationReport(tuple(games), time.perf_counter() - started)
    log.info("generated %d ALFWorld games in %.1fs", len(games), report.seconds)
    return report


def _generate_job(job: tuple) -> GameRecord:
    return generate_one(*job)
