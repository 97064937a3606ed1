"""FrozenLake with a random start and goal: many distinct small maps for training tiny models.

``frozenlake-random@1`` keeps ``frozenlake@1``'s deterministic dynamics, text rendering,
actions, rewards and exact Q* (imported from `tasks.frozenlake`), and changes only the maps:

Maps. 4x4; the start S, the goal G and exactly ``N_HOLES = 3`` holes sit on distinct cells
drawn uniformly (``rng.choice(16, 5, replace=False)``); a draw is kept when the shortest path
from S to G (BFS around the holes) has between ``MIN_PATH = 3`` and ``MAX_PATH = 8`` moves,
and when no earlier task drew the same map. Each map comes from
``make_rng("frozenlake-random/map", task_id)``; maps are drawn test, dev, train, so growing
the train split never changes a held-out map and no map appears in two splits.

Tasks. Ids ``4x4-{index:05d}``; indices 0-4999 train, 5000-5499 dev, 5500-6499 test.
``task_type`` is the distance class of the shortest path: ``near`` (3-4 moves), ``mid`` (5-6)
and ``far`` (7-8). Metadata: ``size``, ``rows`` (Gymnasium letters), ``slippery`` (False),
``max_steps``, ``shortest_path``, ``start`` and ``goal`` (state indices ``row * 4 + col``).

Observation: the grid (``P`` player, ``_`` frozen, start tile included, ``O`` hole, ``G`` goal)
and the actions line, exactly as in ``frozenlake@1``, so the start is visible only as P.
Step limit ``MAX_STEPS = 16`` (twice the longest shortest path).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

import numpy as np

from tasks.base import SuiteBase, TaskSpec
from tasks.frozenlake import ACTIONS, FrozenLakeEnv, draw_distinct_maps, shortest_path

__all__ = ["SIZE", "N_HOLES", "MIN_PATH", "MAX_PATH", "MAX_STEPS", "SPLIT_SIZES",
           "path_length", "generate_random_map", "distance_class", "RandomFrozenLakeEnv",
           "RandomFrozenLakeSuite"]

SIZE = 4
N_HOLES = 3
MIN_PATH, MAX_PATH = 3, 8
MAX_STEPS = 16
SPLIT_SIZES = {"train": 5000, "dev": 500, "test": 1000}
"""Tasks per split; ids are numbered in this order (train first)."""
INSTRUCTIONS = "Reach the goal; avoid holes."
"""The one-line instruction model-backed policies are given."""



def path_length(desc: Sequence[str]) -> int | None:
    """Fewest moves from S to G avoiding holes (BFS), wherever S and G are; None if none."""
    return shortest_path(desc)


def generate_random_map(rng: np.random.Generator) -> tuple[str, ...]:
    """A 4x4 map with random S, G and `N_HOLES` holes whose S-G path has 3-8 moves."""
    while True:
        cells = ["F"] * (SIZE * SIZE)
        start, goal, *holes = rng.choice(SIZE * SIZE, 2 + N_HOLES, replace=False).tolist()
        cells[start], cells[goal] = "S", "G"
        for hole in holes:
            cells[hole] = "H"
        rows = tuple("".join(cells[r * SIZE:(r + 1) * SIZE]) for r in range(SIZE))
        length = path_length(rows)
        if length is not None and MIN_PATH <= length <= MAX_PATH:
            return rows


def distance_class(length: int) -> str:
    """``near`` (3-4 moves), ``mid`` (5-6) or ``far`` (7-8)."""
    return "near" if length <= 4 else "mid" if length <= 6 else "far"


@lru_cache(maxsize=None)
def _suite_maps() -> dict[str, tuple[str, tuple[str, ...]]]:
    """``{task_id: (split, rows)}``; maps distinct, drawn test, dev, train."""
    return draw_distinct_maps(SPLIT_SIZES, lambda index: f"{SIZE}x{SIZE}-{index:05d}",
                              "frozenlake-random/map", generate_random_map)


class RandomFrozenLakeEnv(FrozenLakeEnv):
    """A deterministic FrozenLake map whose episodes start on its S tile."""

    def __init__(self, desc: Sequence[str], *, max_steps: int = MAX_STEPS):
        super().__init__(desc, slippery=False, max_steps=max_steps)
        self.start = self._flat.index("S")

    def new_state(self, rng: np.random.Generator) -> int:
        return self.start


class RandomFrozenLakeSuite(SuiteBase):
    """Deterministic 4x4 FrozenLake with random start, goal and 3 holes (module docstring)."""

    name = "frozenlake-random"
    version = 1
    description = "FrozenLake 4x4, random start/goal and 3 holes, shortest path 3-8, deterministic"
    trivial_actions = {f"always-{a.lower()}": a for a in ACTIONS}
    instructions = INSTRUCTIONS

    def __init__(self) -> None:
        specs = []
        for task_id, (split, rows) in _suite_maps().items():
            flat = "".join(rows)
            length = path_length(rows)
            metadata = {"size": SIZE, "rows": rows, "slippery": False, "max_steps": MAX_STEPS,
                        "shortest_path": length, "start": flat.index("S"),
                        "goal": flat.index("G")}
            specs.append(TaskSpec(task_id, split, distance_class(length), metadata))
        super().__init__(specs)

    def make_env(self, task_id: str) -> RandomFrozenLakeEnv:
        return RandomFrozenLakeEnv(self.task(task_id).metadata["rows"])
