"""The Minesweeper env and suite (``minesweeper@1``).

Rules: a ``rows x cols`` board with M mines; the only move opens a cell (no flags). Opening a
mine loses; opening a cell with no adjacent mine opens its neighbours too (breadth-first, so a
zero region opens with its border); opening every safe cell wins.

- **First move always safe**: mines are placed at the first opening, never on the opened cell or
  its neighbours, so the first opening always reveals a zero and its region (as in modern
  Windows/GNOME Minesweeper; classic Windows spared only the cell).
- **Layout seed**: ``derive_seed("minesweeper@1", task_id, e)`` with ``e`` drawn from the
  episode RNG at reset, so the layout depends on both the task and the reset seed and is
  deterministic given them (and the first click). See `tasks.minesweeper.game.place_mines`.
- **Actions**: ``"[row col]"`` (0-indexed, row first), parsed leniently; a closed in-range cell
  is legal, anything else (an opened cell, out of range, unparseable) is invalid and changes
  nothing. `admissible_actions` lists every closed cell as ``"[r c]"``.
- **Reward**: 1.0 on the step that wins, 0.0 otherwise (a loss is 0.0 too).
- **Score**: the fraction of safe cells opened so far; ``won``: all safe cells opened.
- **max_steps**: the number of safe cells + 10 (each legal move opens at least one safe cell or
  ends the game, so the slack is for invalid actions).
- **Oracle**: `tasks.minesweeper.solver.choose_cell` (centre first, then provably safe cells,
  then the lowest exact mine probability).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

import numpy as np

from harness.core import HarnessError, derive_seed, make_rng
from tasks.base import SuiteBase, TaskSpec
from tasks.embedded import EmbeddedEnv
from tasks.minesweeper.game import (
    flood_open,
    format_cell,
    parse_cell,
    place_mines,
    render_grid,
    visible_board,
)
from tasks.minesweeper.solver import choose_cell

SUITE_ID = "minesweeper@1"
TASK_TYPES = ("5x5-3", "6x6-5", "8x8-10")
"""``"{rows}x{cols}-{mines}"``."""
SPLIT_SIZES = (("train", 200), ("dev", 50), ("test", 50))
"""Tasks per split and task type; indices run on across splits, so splits are disjoint."""
STEP_SLACK = 10

_TYPE = re.compile(r"^(\d+)x(\d+)-(\d+)$")


def parse_task_type(task_type: str) -> tuple[int, int, int]:
    """``"8x8-10"`` -> ``(8, 8, 10)``: rows, cols, mines."""
    match = _TYPE.match(task_type)
    if match is None:
        raise ValueError(f"bad minesweeper task type {task_type!r}")
    rows, cols, mines = (int(g) for g in match.groups())
    return rows, cols, mines


@dataclass(frozen=True, eq=False)
class Board:
    """The full game state. `mines` is ``(rows, cols)`` bool, None until the first opening;
    `opened` is ``(rows, cols)`` bool; `exploded` is the mine opened, if the game was lost."""

    n_mines: int
    layout_seed: int
    opened: np.ndarray
    mines: np.ndarray | None = None
    exploded: tuple[int, int] | None = None

    @property
    def shape(self) -> tuple[int, int]:
        return self.opened.shape

    @property
    def n_safe(self) -> int:
        return self.opened.size - self.n_mines

    @property
    def lost(self) -> bool:
        return self.exploded is not None

    @property
    def won(self) -> bool:
        return not self.lost and int(self.opened.sum()) == self.n_safe

    def visible(self) -> np.ndarray:
        """``(rows, cols)`` int: `UNOPENED` (-1) or the opened cell's adjacent-mine count."""
        return visible_board(self.mines, self.opened)


class MinesweeperEnv(EmbeddedEnv):
    """One Minesweeper task; see the module docstring for the rules."""

    def __init__(self, task_id: str, rows: int, cols: int, n_mines: int):
        super().__init__(max_steps=rows * cols - n_mines + STEP_SLACK)
        self.task_id, self.rows, self.cols, self.n_mines = task_id, rows, cols, n_mines
        self.state: Board

    def new_state(self, rng: np.random.Generator) -> Board:
        entropy = int(rng.integers(2**63))
        return Board(n_mines=self.n_mines,
                     layout_seed=derive_seed(SUITE_ID, self.task_id, entropy),
                     opened=np.zeros((self.rows, self.cols), dtype=bool))

    def parse_action(self, text: str) -> tuple[int, int] | None:
        cell = parse_cell(text)
        if cell is None or self.state.lost or self.state.won:
            return None
        r, c = cell
        if not (r < self.rows and c < self.cols) or self.state.opened[r, c]:
            return None
        return cell

    def apply(self, move: tuple[int, int], rng: np.random.Generator) -> tuple[float, bool]:
        board = self.state
        if board.mines is None:
            mines = place_mines(self.rows, self.cols, self.n_mines, move,
                                make_rng(board.layout_seed))
            board = replace(board, mines=mines)
        if board.mines[move]:
            self.state = replace(board, exploded=move)
            return 0.0, True
        self.state = replace(board, opened=flood_open(board.mines, board.opened, move))
        return (1.0, True) if self.state.won else (0.0, False)

    def render(self) -> str:
        board = self.state
        shown_mines = board.mines if board.lost else None
        grid = render_grid(board.visible(), shown_mines, board.exploded)
        opened = int(board.opened.sum())
        if board.lost:
            status = f"You opened a mine at {format_cell(*board.exploded)}. Game over."
        elif board.won:
            status = "Every safe cell is open. You win!"
        else:
            status = (f"Opened {opened} of {board.n_safe} safe cells. "
                      'Open a closed cell with "[row col]" (0-indexed, row first), e.g. "[2 3]".')
        header = (f"Minesweeper, {self.rows} rows x {self.cols} columns, {self.n_mines} mines. "
                  "Open every cell without a mine; your first opening is always safe.\n"
                  "Legend: ? closed, . open with no adjacent mine, 1-8 open with that many "
                  "adjacent mines, * mine, X the mine you opened.")
        return "\n".join([header, *grid, status])

    def admissible_actions(self) -> list[str]:
        board = self.state
        if board.lost or board.won:
            return []
        rows, cols = np.nonzero(~board.opened)
        return [format_cell(int(r), int(c)) for r, c in zip(rows, cols)]

    def won(self) -> bool:
        return self.state.won

    def score(self) -> float:
        """Fraction of the safe cells opened."""
        return int(self.state.opened.sum()) / self.state.n_safe

    def state_key(self) -> str:
        """The visible board row by row, then the hidden layout (empty before the first
        opening), so equal keys mean equal states."""
        board = self.state
        grid = "/".join(render_grid(board.visible(), board.mines if board.lost else None,
                                    board.exploded)[1:])
        layout = "" if board.mines is None else np.packbits(board.mines).tobytes().hex()
        return f"{grid}|{layout}"

    def oracle_action(self) -> str:
        """`choose_cell` on the visible board, as ``"[r c]"``."""
        if self.state.lost or self.state.won:
            raise HarnessError("the episode is over; there is no oracle action")
        return format_cell(*choose_cell(self.state.visible(), self.n_mines))


class MinesweeperSuite(SuiteBase):
    """``minesweeper@1``: task ids ``"{type}-{index:04d}"`` such as ``"6x6-5-0012"``; indices
    0-199 are train, 200-249 dev, 250-299 test, for each task type in `TASK_TYPES`."""

    name = "minesweeper"
    version = 1
    description = ("Classic Minesweeper without flags: open every safe cell; the first "
                   "opening is always safe. Score: fraction of safe cells opened.")
    instructions = (
        "You are playing Minesweeper without flags. Open every cell that has no mine; opening "
        "a mine loses. Your first opening is always safe. Board symbols: ? closed, . open with "
        "no adjacent mine, 1-8 open with that many adjacent mines, * mine, X the mine you "
        "opened. Answer with one closed cell as [row col], 0-indexed, row first, e.g. [2 3]."
    )
    trivial_actions = {"corner": "[0 0]"}
    """Repeating it opens the corner once, then is invalid: a do-nothing baseline."""

    def __init__(self) -> None:
        specs = []
        for task_type in TASK_TYPES:
            rows, cols, mines = parse_task_type(task_type)
            index = 0
            for split, size in SPLIT_SIZES:
                for _ in range(size):
                    specs.append(TaskSpec(
                        id=f"{task_type}-{index:04d}", split=split, task_type=task_type,
                        metadata={"rows": rows, "cols": cols, "mines": mines, "index": index}))
                    index += 1
        super().__init__(specs)

    def make_env(self, task_id: str) -> MinesweeperEnv:
        spec = self.task(task_id)
        meta = spec.metadata
        return MinesweeperEnv(spec.id, meta["rows"], meta["cols"], meta["mines"])
