"""Room generation by reverse play, after gym-sokoban's ``room_utils.generate_room``.

1. `room_topology`: a random walk carves floor out of a solid ``(height, width)`` block,
   stamping one of five small masks at every step; the border stays wall.
2. `place_targets_and_player`: the player and the targets go on random floor cells; every
   box starts on its target.
3. `reverse_play`: a depth-first search plays backwards (the player moves or *pulls* a box)
   and keeps the state with the best room score, ``box_swaps * box_displacement`` (sum of
   Manhattan distances of boxes from their own targets), among states where no target is
   covered by a box or the player. Pulls are reversed pushes, so the result is solvable.

``box_swaps`` follows gym-sokoban's code, not its name: the search there hands the root's
``last_pull`` to every child, so every pull counts as a swap; here too ``box_swaps`` is the
number of pulls on the search path (measured: switching to "pulls that change box" barely
changes plan lengths). Every random step uses the explicit `numpy.random.Generator` passed in.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tasks.sokoban.rules import Room, State

__all__ = ["GeneratorConfig", "room_topology", "place_targets_and_player", "reverse_play",
           "generate_room"]

_MASKS = np.array([
    [[0, 0, 0], [1, 1, 1], [0, 0, 0]],
    [[0, 1, 0], [0, 1, 0], [0, 1, 0]],
    [[0, 0, 0], [1, 1, 0], [0, 1, 0]],
    [[0, 0, 0], [1, 1, 0], [1, 1, 0]],
    [[0, 0, 0], [0, 1, 1], [0, 1, 0]],
], dtype=bool)
_WALK_DIRECTIONS = ((1, 0), (0, 1), (-1, 0), (0, -1))


@dataclass(frozen=True)
class GeneratorConfig:
    """Parameters of one room family; defaults follow gym-sokoban."""

    height: int
    """Rows, outer wall included."""
    width: int
    """Columns, outer wall included."""
    num_boxes: int
    p_change_direction: float = 0.35
    """Probability that the carving walk turns at a step (gym-sokoban: 0.35)."""
    walk_steps: int | None = None
    """Steps of the carving walk; None = gym-sokoban's ``int(1.7 * (height + width))``."""
    search_depth: int = 300
    """gym-sokoban's ``ttl=300``: reverse-play paths of up to ``search_depth - 2`` steps."""
    max_explored: int = 300_000
    """Reverse play stops after this many distinct states (gym-sokoban: 300,000)."""

    @property
    def steps(self) -> int:
        return self.walk_steps if self.walk_steps is not None else int(1.7 * (self.height + self.width))


def room_topology(config: GeneratorConfig, rng: np.random.Generator) -> np.ndarray:
    """Floor mask of shape ``(height, width)`` (True = floor) carved by a random walk."""
    h, w = config.height, config.width
    level = np.zeros((h, w), dtype=bool)
    direction = _WALK_DIRECTIONS[int(rng.integers(4))]
    position = np.array([rng.integers(1, h), rng.integers(1, w)])
    for _ in range(config.steps):
        if rng.random() < config.p_change_direction:
            direction = _WALK_DIRECTIONS[int(rng.integers(4))]
        position = np.clip(position + direction, 1, [h - 2, w - 2])
        r, c = position - 1
        level[r:r + 3, c:c + 3] |= _MASKS[int(rng.integers(len(_MASKS)))]
    level[[0, h - 1], :] = False
    level[:, [0, w - 1]] = False
    return level


def place_targets_and_player(floor: np.ndarray, num_boxes: int,
                             rng: np.random.Generator) -> tuple[int, tuple[int, ...]] | None:
    """``(player_cell, target_cells)`` drawn from the floor mask of shape ``(height, width)``,
    or None when it has no more than ``num_boxes + 1`` floor cells (gym-sokoban's rule)."""
    free = list(np.flatnonzero(floor.ravel()))
    if len(free) <= num_boxes + 1:
        return None
    player = int(free.pop(int(rng.integers(len(free)))))
    targets = [int(free.pop(int(rng.integers(len(free))))) for _ in range(num_boxes)]
    return player, tuple(targets)


def reverse_play(room: Room, config: GeneratorConfig) -> tuple[State, int]:
    """The best-scoring state reachable from ``room.start`` (boxes on targets) by reverse
    moves and pulls, and its score (0 when no state leaves every target uncovered)."""
    width, deltas = room.width, room.deltas
    targets = room.targets
    explored: set[State] = set()
    best_state, best_score = room.start, -1
    # Depth-first with an explicit stack; children are pushed in reverse so the visiting
    # order equals gym-sokoban's recursion (pull up/down/left/right, then move up/../right).
    # Entry: (state, (origin target, current cell) per box, pulls so far, depth)
    start_mapping = tuple((t, t) for t in targets)
    stack = [(room.start, start_mapping, 0, 0)]
    while stack and len(explored) < config.max_explored:
        state, mapping, swaps, depth = stack.pop()
        if depth >= config.search_depth - 1 or state in explored:  # gym's ttl: depths < 299
            continue
        explored.add(state)
        covered = state.player in targets or any(box in targets for box in state.boxes)
        score = 0 if covered else swaps * _displacement(mapping, width)
        if score > best_score:
            best_state, best_score = state, score
        children = []
        for action in range(8):
            pull, delta = action < 4, deltas[action % 4]
            ahead = state.player + delta
            if ahead in room.walls or ahead in state.boxes:
                continue
            behind = state.player - delta
            if pull and behind in state.boxes:
                boxes = tuple(sorted(state.player if b == behind else b for b in state.boxes))
                child_mapping = tuple((o, state.player if cell == behind else cell)
                                      for o, cell in mapping)
                children.append((State(ahead, boxes), child_mapping, swaps + 1, depth + 1))
            else:
                children.append((State(ahead, state.boxes), mapping, swaps, depth + 1))
        stack.extend(reversed(children))
    return best_state, max(best_score, 0)


def _displacement(mapping: tuple[tuple[int, int], ...], width: int) -> int:
    total = 0
    for origin, cell in mapping:
        (r0, c0), (r1, c1) = divmod(origin, width), divmod(cell, width)
        total += abs(r0 - r1) + abs(c0 - c1)
    return total


def generate_room(config: GeneratorConfig, rng: np.random.Generator) -> Room | None:
    """One reverse-played room, or None when this draw gives too little floor or only
    score-0 rooms (the caller redraws with a new seed, as gym-sokoban retries)."""
    floor = room_topology(config, rng)
    placed = place_targets_and_player(floor, config.num_boxes, rng)
    if placed is None:
        return None
    player, targets = placed
    walls = frozenset(int(cell) for cell in np.flatnonzero(~floor.ravel()))
    solved = Room(config.height, config.width, walls, tuple(sorted(targets)),
                  State(player, tuple(sorted(targets))))
    start, score = reverse_play(solved, config)
    if score <= 0:
        return None
    return Room(config.height, config.width, walls, solved.targets, start)
