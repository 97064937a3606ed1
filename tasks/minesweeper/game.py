"""Minesweeper rules as pure functions over numpy boards.

Boards are ``(rows, cols)`` arrays. `mines` is bool (True = mine), `opened` is bool
(True = opened), and the *visible* board the player sees is int: `UNOPENED` (-1) for a closed
cell, 0-8 for an opened cell (its number of adjacent mines). There are no flags: the only move
is opening a cell.
"""

from __future__ import annotations

import re
from collections import deque

import numpy as np

UNOPENED = -1
"""The value of a closed cell in a visible board."""

_ACTION = re.compile(r"^\s*[\[(]?\s*([0-9]{1,6})\s*(?:,\s*|\s+)([0-9]{1,6})\s*[\])]?\s*$")


def neighbours(row: int, col: int, rows: int, cols: int) -> list[tuple[int, int]]:
    """The up to 8 in-board cells adjacent to ``(row, col)``, in row-major order."""
    return [(r, c)
            for r in range(max(row - 1, 0), min(row + 2, rows))
            for c in range(max(col - 1, 0), min(col + 2, cols))
            if (r, c) != (row, col)]


def adjacent_counts(mines: np.ndarray) -> np.ndarray:
    """Number of mines adjacent to each cell (the cell itself excluded).

    `mines`: ``(rows, cols)`` bool. Returns ``(rows, cols)`` int.
    """
    padded = np.pad(mines.astype(np.int64), 1)
    rows, cols = mines.shape
    total = sum(padded[1 + dr:1 + dr + rows, 1 + dc:1 + dc + cols]
                for dr in (-1, 0, 1) for dc in (-1, 0, 1))
    return total - mines.astype(np.int64)


def place_mines(rows: int, cols: int, n_mines: int, first: tuple[int, int],
                rng: np.random.Generator) -> np.ndarray:
    """A uniformly random layout of `n_mines` mines avoiding `first` and its neighbours.

    The cells are ranked by one random permutation drawn from `rng`; the mines are the first
    `n_mines` cells of that ranking outside the safe zone, so the layout moves as little as
    possible when the first click moves. Returns ``(rows, cols)`` bool.
    """
    safe_zone = {first, *neighbours(*first, rows, cols)}
    if rows * cols - len(safe_zone) < n_mines:
        raise ValueError(f"{n_mines} mines do not fit a {rows}x{cols} board with a safe start")
    order = rng.permutation(rows * cols)
    chosen = [i for i in order if divmod(int(i), cols) not in safe_zone][:n_mines]
    mines = np.zeros(rows * cols, dtype=bool)
    mines[chosen] = True
    return mines.reshape(rows, cols)


def flood_open(mines: np.ndarray, opened: np.ndarray, cell: tuple[int, int]) -> np.ndarray:
    """`opened` after opening the safe `cell`: a cell with no adjacent mine also opens its
    neighbours, breadth-first, so a zero opens its whole connected zero region and its border.

    `mines`, `opened`: ``(rows, cols)`` bool. Returns a new ``(rows, cols)`` bool array.
    """
    if mines[cell]:
        raise ValueError(f"cell {cell} is a mine")
    counts = adjacent_counts(mines)
    rows, cols = mines.shape
    result = opened.copy()
    result[cell] = True
    queue = deque([cell])
    while queue:
        r, c = queue.popleft()
        if counts[r, c]:
            continue
        for nb in neighbours(r, c, rows, cols):
            if not result[nb]:
                result[nb] = True
                queue.append(nb)
    return result


def visible_board(mines: np.ndarray | None, opened: np.ndarray) -> np.ndarray:
    """What the player sees: `UNOPENED` for closed cells, the adjacent-mine count for opened ones.

    `mines`: ``(rows, cols)`` bool, or None before mines are placed (nothing is open then).
    `opened`: ``(rows, cols)`` bool. Returns ``(rows, cols)`` int.
    """
    visible = np.full(opened.shape, UNOPENED, dtype=np.int64)
    if mines is not None:
        counts = adjacent_counts(mines)
        visible[opened] = counts[opened]
    return visible


def parse_cell(text: str) -> tuple[int, int] | None:
    """``"[2 3]"`` -> ``(2, 3)``. Lenient: optional brackets (``[]`` or ``()``), a comma and/or
    spaces between two non-negative integers, surrounding whitespace. None when it is not that
    format. Range is not checked here."""
    match = _ACTION.match(text)
    if match is None:
        return None
    return int(match.group(1)), int(match.group(2))


def format_cell(row: int, col: int) -> str:
    """The canonical action text for opening ``(row, col)``: ``"[row col]"``."""
    return f"[{row} {col}]"


def render_grid(visible: np.ndarray, mines: np.ndarray | None = None,
                exploded: tuple[int, int] | None = None) -> list[str]:
    """Text lines of the board with column indices on top and row indices on the left.

    ``?`` closed, ``.`` opened with no adjacent mine, ``1``-``8`` opened with that many, and,
    when `mines` is given (after a loss), ``*`` for every mine and ``X`` for the one opened.
    `visible`: ``(rows, cols)`` int; `mines`: ``(rows, cols)`` bool or None.
    """
    rows, cols = visible.shape
    width = len(str(max(rows, cols) - 1))
    lines = [" " * width + " " + " ".join(f"{c:>{width}}" for c in range(cols))]
    for r in range(rows):
        cells = []
        for c in range(cols):
            value = int(visible[r, c])
            if mines is not None and mines[r, c]:
                cells.append("X" if exploded == (r, c) else "*")
            elif value == UNOPENED:
                cells.append("?")
            else:
                cells.append("." if value == 0 else str(value))
        lines.append(f"{r:>{width}} " + " ".join(f"{s:>{width}}" for s in cells))
    return lines
