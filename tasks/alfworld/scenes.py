"""Floor plans shipped inside the `alfworld` package, and random scenes drawn on them.

The `alfworld` package ships, for each of AI2-THOR's 120 floor plans, ``gen/layouts/
FloorPlanN-objects.json`` (the object types present), ``FloorPlanN-openable.json`` (receptacle
ids, THOR style ``Cabinet|+00.68|+00.50|-02.20``, with the navigation pose the ALFRED planner
uses for each) and ``FloorPlanN-layout.npy`` (the navigable floor points, metres, shape
``(n_points, 2)``). A `Scene` is what an ALFRED ``initial_state.pddl`` describes: receptacles
at locations, object instances inside receptacles, and the agent's start location.

How a scene is drawn (`sample_scene`), as close to ALFRED's own scene randomisation as the
shipped files allow:

- receptacles: every entry of ``-openable.json``; a static receptacle type listed in
  ``-objects.json`` but absent there (ALFRED's file omits e.g. toasters, coffee machines,
  stove burners and many garbage cans) gets one synthetic instance (four for stove burners)
  at a navigable point drawn from ``-layout.npy``;
- objects: every pickupable type of the floor plan (a type some receptacle can contain in
  ALFRED's ``VAL_RECEPTACLE_OBJECTS``) gets 1 to ``MAX_INSTANCES`` instances (ALFRED's
  ``MAX_NUM_OF_OBJ_INSTANCES``), each put in a uniformly drawn receptacle that may contain it;
  desk and floor lamps (toggleable, not pickupable) go on a lamp-bearing surface;
- the agent starts at a navigable point facing a random direction, away from every receptacle.

Locations are ALFRED's ``loc|x|z|rotation|horizon`` (grid units of 0.25 m, rotation in
quarter turns, horizon in degrees).
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import numpy as np

__all__ = [
    "FLOOR_PLANS", "UNSEEN_FLOOR_PLANS", "ROOM_TYPES", "MAX_INSTANCES", "FloorPlan", "Receptacle",
    "Item", "Scene", "load_floor_plan", "room_type", "sample_scene", "thor_type",
]

UNSEEN_FLOOR_PLANS = (10, 219, 308, 424)
"""ALFRED/ALFWorld's ``valid_unseen`` floor plans (one kitchen, living room, bedroom, bathroom)."""
FLOOR_PLANS = tuple(range(1, 31)) + tuple(range(201, 231)) + tuple(range(301, 331)) + tuple(
    range(401, 431))
ROOM_TYPES = {"Kitchen": range(1, 31), "LivingRoom": range(201, 231),
              "Bedroom": range(301, 331), "Bathroom": range(401, 431)}
MAX_INSTANCES = 3
"""Most instances of one object type (ALFRED's ``MAX_NUM_OF_OBJ_INSTANCES``)."""
LAMPS = ("DeskLamp", "FloorLamp")
LAMP_SURFACES = ("SideTable", "Desk", "Dresser", "Shelf", "CoffeeTable", "DiningTable", "TVStand",
                 "CounterTop", "ArmChair", "Sofa", "Bed")
"""Receptacle types a lamp may stand on (the ALFRED tables list no container for lamps)."""
STOVE_BURNERS = 4
AGENT_STEP = 0.25


@dataclass(frozen=True)
class Receptacle:
    """A static receptacle: THOR-style `id`, its `type` and the `location` the agent goes to."""

    id: str
    type: str
    location: tuple[int, int, int, int]


@dataclass(frozen=True)
class Item:
    """An object instance inside receptacle `receptacle` (a `Receptacle.id`)."""

    id: str
    type: str
    receptacle: str


@dataclass(frozen=True)
class Scene:
    floor_plan: int
    receptacles: tuple[Receptacle, ...]
    items: tuple[Item, ...]
    agent_location: tuple[int, int, int, int]

    def count(self, object_type: str) -> int:
        return sum(item.type == object_type for item in self.items)

    def receptacle_types(self) -> set[str]:
        return {r.type for r in self.receptacles}


@dataclass(frozen=True)
class FloorPlan:
    """One floor plan's shipped files: object types, receptacles, navigable points."""

    number: int
    object_types: frozenset[str]
    receptacles: tuple[Receptacle, ...]
    navigable: tuple[tuple[float, float], ...]

    @property
    def room(self) -> str:
        return room_type(self.number)


def room_type(floor_plan: int) -> str:
    return next(room for room, numbers in ROOM_TYPES.items() if floor_plan in numbers)


def thor_type(thor_id: str) -> str:
    """``Cabinet|+00.68|...`` -> ``Cabinet``; ``Sink|x|y|z|SinkBasin`` -> ``SinkBasin``."""
    parts = thor_id.split("|")
    return parts[4] if len(parts) == 5 else parts[0]


def _layouts() -> Path:
    return Path(str(resources.files("alfworld"))) / "gen" / "layouts"


def _location(pose) -> tuple[int, int, int, int]:
    x, z, rotation, horizon = pose
    return (int(round(x / AGENT_STEP)), int(round(z / AGENT_STEP)), int(rotation) // 90 % 4,
            int(horizon))


@functools.lru_cache(maxsize=None)
def load_floor_plan(number: int) -> FloorPlan:
    """The shipped files of ``FloorPlan{number}`` (read once per process)."""
    root = _layouts()
    object_types = frozenset(json.loads((root / f"FloorPlan{number}-objects.json").read_text()))
    openable = json.loads((root / f"FloorPlan{number}-openable.json").read_text())
    receptacles = tuple(Receptacle(thor_id, thor_type(thor_id), _location(pose))
                        for thor_id, pose in sorted(openable.items()))
    points = np.load(root / f"FloorPlan{number}-layout.npy")
    navigable = tuple((float(x), float(z)) for x, z in points)
    return FloorPlan(number, object_types, receptacles, navigable)


# ---------------------------------------------------------------------------------------------
# Sampling

def _constants():
    import alfworld.gen.constants as constants

    return constants


def _coordinate(value: float) -> str:
    return f"{value:+06.2f}"


def _thor_id(kind: str, x: float, y: float, z: float, suffix: str = "") -> str:
    base = f"{kind}|{_coordinate(x)}|{_coordinate(y)}|{_coordinate(z)}"
    return f"{base}|{suffix}" if suffix else base


def _free_point(plan: FloorPlan, taken: set[tuple[int, int, int, int]],
                rng: np.random.Generator, horizon: int = 30) -> tuple[int, int, int, int]:
    """A navigable pose (random point, random facing) not in `taken`."""
    for _ in range(1000):
        x, z = plan.navigable[int(rng.integers(len(plan.navigable)))]
        location = _location((x, z, 90 * int(rng.integers(4)), horizon))
        if location not in taken:
            return location
    raise RuntimeError(f"FloorPlan{plan.number}: no free navigable point")


def _all_receptacles(plan: FloorPlan, rng: np.random.Generator) -> list[Receptacle]:
    constants = _constants()
    static = set(constants.RECEPTACLES) - set(constants.MOVABLE_RECEPTACLES)
    receptacles = list(plan.receptacles)
    present = {r.type for r in receptacles}
    taken = {r.location for r in receptacles}
    for kind in sorted((plan.object_types & static) - present):
        for _ in range(STOVE_BURNERS if kind == "StoveBurner" else 1):
            location = _free_point(plan, taken, rng)
            taken.add(location)
            x, z = location[0] * AGENT_STEP, location[1] * AGENT_STEP
            dx, dz = ((0, 0.5), (0.5, 0), (0, -0.5), (-0.5, 0))[location[2]]
            y = 0.9 if kind in ("Toaster", "CoffeeMachine", "StoveBurner") else 0.0
            used = {r.id for r in receptacles}
            while True:
                if kind in ("SinkBasin", "BathtubBasin"):
                    thor_id = _thor_id(kind[:-5], x + dx, y, z + dz, kind)
                else:
                    thor_id = _thor_id(kind, x + dx, y, z + dz)
                if thor_id not in used:
                    break
                y += 0.01
            receptacles.append(Receptacle(thor_id, kind, location))
    return sorted(receptacles, key=lambda r: r.id)


def pickupable_types() -> frozenset[str]:
    """Object types some receptacle may contain (ALFRED's tables), sliced pieces excluded."""
    contents = set().union(*_constants().VAL_RECEPTACLE_OBJECTS.values())
    return frozenset(t for t in contents if not t.endswith("Sliced"))


def hosts(object_type: str, receptacles: list[Receptacle]) -> list[Receptacle]:
    """The receptacles of `receptacles` that may hold an object of `object_type`."""
    if object_type in LAMPS:
        return [r for r in receptacles if r.type in LAMP_SURFACES]
    table = _constants().VAL_RECEPTACLE_OBJECTS
    return [r for r in receptacles if object_type in table.get(r.type, ())]


def _item_id(kind: str, host: Receptacle, rng: np.random.Generator, used: set[str]) -> str:
    parts = host.id.split("|")
    x, y, z = (float(p) for p in parts[1:4])
    while True:
        offset = rng.uniform(-0.4, 0.4, size=3)
        thor_id = _thor_id(kind, x + offset[0], y + abs(offset[1]), z + offset[2])
        if thor_id not in used:
            used.add(thor_id)
            return thor_id


def sample_scene(plan: FloorPlan, rng: np.random.Generator,
                 minimum: dict[str, int] | None = None) -> Scene:
    """A random scene on `plan` (see the module docstring); `minimum` forces at least that
    many instances of some types (e.g. two of the target for "pick two" tasks)."""
    minimum = minimum or {}
    receptacles = _all_receptacles(plan, rng)
    kinds = sorted((plan.object_types & pickupable_types()) | (plan.object_types & set(LAMPS)))
    items: list[Item] = []
    used: set[str] = set()
    for kind in kinds:
        candidates = hosts(kind, receptacles)
        if not candidates:
            continue
        count = 1 if kind in LAMPS else int(rng.integers(1, MAX_INSTANCES + 1))
        count = max(count, minimum.get(kind, 0))
        for _ in range(count):
            host = candidates[int(rng.integers(len(candidates)))]
            items.append(Item(_item_id(kind, host, rng, used), kind, host.id))
    start = _free_point(plan, {r.location for r in receptacles}, rng)
    return Scene(plan.number, tuple(receptacles), tuple(sorted(items, key=lambda i: i.id)), start)
