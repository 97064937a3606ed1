"""Minesweeper (``minesweeper@1``): rules in `game`, the exact solver in `solver`, the env
and suite in `env`."""

from tasks.minesweeper.env import MinesweeperEnv, MinesweeperSuite, parse_task_type
from tasks.minesweeper.game import UNOPENED, flood_open, parse_cell, place_mines, visible_board
from tasks.minesweeper.solver import (
    InconsistentBoardError,
    MineCounts,
    choose_cell,
    mine_counts,
    mine_probabilities,
)

__all__ = [
    "MinesweeperEnv", "MinesweeperSuite", "parse_task_type", "UNOPENED", "flood_open",
    "parse_cell", "place_mines", "visible_board", "InconsistentBoardError", "MineCounts",
    "choose_cell", "mine_counts", "mine_probabilities",
]
