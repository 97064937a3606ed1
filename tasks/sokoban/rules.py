"""Sokoban rules and rewards, as in gym-sokoban's ``SokobanEnv`` (push-or-move actions).

A `Room` is the fixed part of a level (walls, targets) plus its start `State` (player and
boxes). Cells are flat indices ``row * width + col`` into the ``(height, width)`` grid; the
outer border is always wall, so a move never leaves the grid.

Rewards (gym-sokoban's constants): every step costs ``STEP_PENALTY`` (-0.1); a step that
raises the number of boxes on targets adds ``BOX_ON_TARGET_REWARD`` (+1), one that lowers it
adds ``BOX_OFF_TARGET_PENALTY`` (-1); the step that puts the last box on a target adds
``FINISH_REWARD`` (+10) and ends the episode. Walking into a wall, or pushing a box into a
wall or another box, is a legal step that changes nothing (and still costs -0.1).

Text follows RAGEN's Sokoban rendering: ``#`` wall, ``_`` floor, ``O`` target, ``X`` box,
``√`` box on target, ``P`` player, ``S`` player on target; one row per line.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from harness.core import HarnessError

__all__ = [
    "ACTIONS", "NOOP", "STEP_PENALTY", "BOX_ON_TARGET_REWARD", "BOX_OFF_TARGET_PENALTY",
    "FINISH_REWARD", "SYMBOLS", "State", "Room", "push_or_move", "transition",
    "boxes_on_targets", "parse_move",
]

ACTIONS = ("Up", "Down", "Left", "Right", "No-op")
"""Action texts; a move is the index into this tuple. gym-sokoban ids: Up..Right = 1..4
("push up" .. "push right", which move when nothing is pushed), No-op = 0."""
NOOP = 4
_BY_NAME = {name.lower(): move for move, name in enumerate(ACTIONS)}

STEP_PENALTY = -0.1
BOX_ON_TARGET_REWARD = 1.0
BOX_OFF_TARGET_PENALTY = -1.0
FINISH_REWARD = 10.0

WALL, FLOOR, TARGET, BOX, BOX_ON_TARGET, PLAYER, PLAYER_ON_TARGET = "#_OX√PS"
SYMBOLS = {
    WALL: "wall", FLOOR: "floor", TARGET: "target", BOX: "box", BOX_ON_TARGET: "box on target",
    PLAYER: "player", PLAYER_ON_TARGET: "player on target",
}


class State(NamedTuple):
    """The movable part of a level: the player's cell and the sorted cells of the boxes."""

    player: int
    boxes: tuple[int, ...]


@dataclass(frozen=True)
class Room:
    """A level: grid size, wall cells, target cells (sorted) and the start state.

    Hashable, so solver results can be cached per room. `walls` includes the whole border.
    """

    height: int
    width: int
    walls: frozenset[int]
    targets: tuple[int, ...]
    start: State

    def __post_init__(self) -> None:
        h, w = self.height, self.width
        border = {r * w + c for r in range(h) for c in range(w) if r in (0, h - 1) or c in (0, w - 1)}
        if not border <= self.walls:
            raise HarnessError("a Sokoban room must be enclosed by walls")
        occupied = (self.start.player, *self.start.boxes, *self.targets)
        if any(cell in self.walls or not 0 <= cell < h * w for cell in occupied):
            raise HarnessError("player, boxes and targets must lie on floor cells")
        if len(set(self.start.boxes)) != len(self.targets) or len(set(self.targets)) != len(self.targets):
            raise HarnessError("a Sokoban room needs as many distinct boxes as targets")
        if self.start.player in self.start.boxes or tuple(sorted(self.start.boxes)) != self.start.boxes:
            raise HarnessError("the start state must have sorted boxes and a free player cell")

    @property
    def deltas(self) -> tuple[int, int, int, int]:
        """Flat-index offsets of Up, Down, Left, Right."""
        return (-self.width, self.width, -1, 1)

    @property
    def num_boxes(self) -> int:
        return len(self.targets)

    def floor_cells(self) -> list[int]:
        """Every non-wall cell, in row-major order."""
        return [cell for cell in range(self.height * self.width) if cell not in self.walls]

    def render(self, state: State) -> str:
        """The grid as text (RAGEN symbols), ``height`` lines of ``width`` characters."""
        targets, boxes = set(self.targets), set(state.boxes)
        rows = []
        for r in range(self.height):
            row = []
            for c in range(self.width):
                cell = r * self.width + c
                if cell in self.walls:
                    row.append(WALL)
                elif cell in boxes:
                    row.append(BOX_ON_TARGET if cell in targets else BOX)
                elif cell == state.player:
                    row.append(PLAYER_ON_TARGET if cell in targets else PLAYER)
                else:
                    row.append(TARGET if cell in targets else FLOOR)
            rows.append("".join(row))
        return "\n".join(rows)

    @classmethod
    def from_text(cls, text: str) -> Room:
        """Parse a grid written with the RAGEN symbols (the inverse of `render`)."""
        lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
        if not lines or len({len(line) for line in lines}) != 1:
            raise HarnessError("a Sokoban room must be a non-empty rectangle of symbols")
        height, width = len(lines), len(lines[0])
        walls, targets, boxes, players = set(), [], [], []
        for r, line in enumerate(lines):
            for c, symbol in enumerate(line):
                cell = r * width + c
                if symbol not in SYMBOLS:
                    raise HarnessError(f"unknown Sokoban symbol {symbol!r} at row {r}, col {c}")
                if symbol == WALL:
                    walls.add(cell)
                if symbol in (TARGET, BOX_ON_TARGET, PLAYER_ON_TARGET):
                    targets.append(cell)
                if symbol in (BOX, BOX_ON_TARGET):
                    boxes.append(cell)
                if symbol in (PLAYER, PLAYER_ON_TARGET):
                    players.append(cell)
        if len(players) != 1:
            raise HarnessError(f"a Sokoban room needs exactly one player, found {len(players)}")
        return cls(height, width, frozenset(walls), tuple(targets), State(players[0], tuple(boxes)))


def push_or_move(room: Room, state: State, move: int) -> State:
    """The state after `move` (an index into `ACTIONS`): the player steps onto a free cell, or
    pushes the adjacent box one cell when the cell behind it is free; otherwise nothing moves."""
    if move == NOOP:
        return state
    delta = room.deltas[move]
    ahead = state.player + delta
    if ahead in room.walls:
        return state
    if ahead not in state.boxes:
        return State(ahead, state.boxes)
    beyond = ahead + delta
    if beyond in room.walls or beyond in state.boxes:
        return state
    boxes = tuple(sorted(beyond if box == ahead else box for box in state.boxes))
    return State(ahead, boxes)


def boxes_on_targets(room: Room, state: State) -> int:
    """How many boxes stand on targets."""
    return sum(box in room.targets for box in state.boxes)


def transition(room: Room, state: State, move: int) -> tuple[State, float, bool]:
    """One step: ``(next_state, reward, solved)``, with gym-sokoban's reward rule (the change
    in the number of boxes on targets decides +1 / -1; +10 when all are on targets)."""
    after = push_or_move(room, state, move)
    reward = STEP_PENALTY
    before_on, after_on = boxes_on_targets(room, state), boxes_on_targets(room, after)
    if after_on > before_on:
        reward += BOX_ON_TARGET_REWARD
    elif after_on < before_on:
        reward += BOX_OFF_TARGET_PENALTY
    solved = after_on == room.num_boxes
    if solved:
        reward += FINISH_REWARD
    return after, reward, solved


def parse_move(text: str) -> int | None:
    """The move named by `text` (case-insensitive, surrounding whitespace ignored), else None."""
    return _BY_NAME.get(text.strip().lower()) if isinstance(text, str) else None
