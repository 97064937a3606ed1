"""Exact mine probabilities from a visible board, and the oracle's choice of cell.

Every mine layout consistent with the visible numbers and the total mine count is equally
likely (true of the game's placement: uniform over layouts avoiding the first click's zone, and
that zone is always open on the visible board). The solver counts those layouts exactly:

1. single-constraint propagation fixes cells a number alone decides (a number whose remaining
   mines are 0 makes its closed neighbours safe; one equal to its closed neighbours makes them
   mines), repeated to a fixed point;
2. the remaining *frontier* (closed cells next to an opened cell) splits into independent
   components (cells linked by shared numbers); each is enumerated by backtracking, giving, per
   mine count k, the number of consistent assignments and how many put a mine on each cell;
3. the components are combined by convolution, and every total m of frontier mines is weighted
   by ``C(n_interior, M - m)``, the ways to place the rest among the unconstrained interior.

Counts are Python integers, so "provably safe" means a probability of exactly zero.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import comb

import numpy as np

from tasks.minesweeper.game import UNOPENED, neighbours

Cell = tuple[int, int]


class InconsistentBoardError(ValueError):
    """No mine layout agrees with the visible board and the mine count."""


@dataclass(frozen=True)
class MineCounts:
    """Exact layout counts: cell ``(r, c)`` is a mine in ``mine_layouts[r][c]`` of the
    ``total_layouts`` consistent layouts (0 for opened cells)."""

    mine_layouts: tuple[tuple[int, ...], ...]
    total_layouts: int

    def probabilities(self) -> np.ndarray:
        """``(rows, cols)`` float: each cell's mine probability."""
        return np.array([[n / self.total_layouts for n in row] for row in self.mine_layouts],
                        dtype=np.float64)


def _constraints(visible: np.ndarray) -> list[tuple[list[Cell], int]]:
    rows, cols = visible.shape
    out = []
    for r in range(rows):
        for c in range(cols):
            if visible[r, c] == UNOPENED:
                continue
            closed = [nb for nb in neighbours(r, c, rows, cols) if visible[nb] == UNOPENED]
            if int(visible[r, c]) > len(closed):
                raise InconsistentBoardError(f"cell {(r, c)} shows more mines than closed cells")
            if closed:
                out.append((closed, int(visible[r, c])))
    return out


def _propagate(constraints: list[tuple[list[Cell], int]]
               ) -> tuple[dict[Cell, int], list[tuple[list[Cell], int]]]:
    """Single-constraint rules to a fixed point: ``(known {cell: 0 or 1}, reduced constraints)``."""
    known: dict[Cell, int] = {}
    changed = True
    while changed:
        changed, reduced = False, []
        for cells, need in constraints:
            need -= sum(known.get(cell, 0) for cell in cells)
            cells = [cell for cell in cells if cell not in known]
            if need < 0 or need > len(cells):
                raise InconsistentBoardError("the visible numbers contradict each other")
            if cells and need in (0, len(cells)):
                known.update({cell: int(need > 0) for cell in cells})
                changed = True
            elif cells:
                reduced.append((cells, need))
        constraints = reduced
    return known, constraints


def _components(constraints: list[tuple[list[Cell], int]]) -> list[list[int]]:
    """Indices of constraints grouped into connected components (sharing a cell)."""
    parent = list(range(len(constraints)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    owner: dict[Cell, int] = {}
    for i, (cells, _) in enumerate(constraints):
        for cell in cells:
            if cell in owner:
                parent[find(i)] = find(owner[cell])
            else:
                owner[cell] = i
    groups: dict[int, list[int]] = {}
    for i in range(len(constraints)):
        groups.setdefault(find(i), []).append(i)
    return list(groups.values())


def _enumerate(constraints: list[tuple[list[Cell], int]], max_mines: int
               ) -> tuple[list[Cell], list[int], list[list[int]]]:
    """All assignments of one component's cells satisfying every constraint, with at most
    `max_mines` mines. Returns ``(cells, layouts[k], mine_layouts[k][i])``: the number of
    assignments with k mines, and how many of those put a mine on ``cells[i]``."""
    cells: list[Cell] = []
    index: dict[Cell, int] = {}
    for group, _ in constraints:  # constraint order keeps neighbouring cells close
        for cell in group:
            if cell not in index:
                index[cell] = len(cells)
                cells.append(cell)
    need = [n for _, n in constraints]
    left = [len(group) for group, _ in constraints]
    touches = [[] for _ in cells]
    for j, (group, _) in enumerate(constraints):
        for cell in group:
            touches[index[cell]].append(j)
    n = len(cells)
    top = min(n, max_mines)
    layouts = [0] * (top + 1)
    mine_layouts = [[0] * n for _ in range(top + 1)]
    assignment = [0] * n

    def search(i: int, mines: int) -> None:
        if i == n:
            layouts[mines] += 1
            row = mine_layouts[mines]
            for k in range(n):
                row[k] += assignment[k]
            return
        for value in (0, 1):
            if mines + value > top:
                break
            ok = True
            for j in touches[i]:
                need[j] -= value
                left[j] -= 1
                if need[j] < 0 or need[j] > left[j]:
                    ok = False
            if ok:
                assignment[i] = value
                search(i + 1, mines + value)
            for j in touches[i]:
                need[j] += value
                left[j] += 1
        assignment[i] = 0

    search(0, 0)
    return cells, layouts, mine_layouts


def _convolve(a: list[int], b: list[int]) -> list[int]:
    out = [0] * (len(a) + len(b) - 1)
    for i, x in enumerate(a):
        if x:
            for j, y in enumerate(b):
                out[i + j] += x * y
    return out


def mine_counts(visible: np.ndarray, n_mines: int) -> MineCounts:
    """Exact counts of the layouts consistent with `visible` (``(rows, cols)`` int, `UNOPENED`
    for closed cells) and `n_mines` mines in total; raises `InconsistentBoardError` if none."""
    visible = np.asarray(visible)
    rows, cols = visible.shape
    known, constraints = _propagate(_constraints(visible))
    remaining = n_mines - sum(known.values())
    comps = [_enumerate([constraints[j] for j in group], max(remaining, 0))
             for group in _components(constraints)]
    frontier = set(known) | {cell for cells, _, _ in comps for cell in cells}
    interior = [(r, c) for r in range(rows) for c in range(cols)
                if visible[r, c] == UNOPENED and (r, c) not in frontier]
    n_interior = len(interior)

    def weight(m: int) -> int:  # ways to place the other mines in the interior
        rest = remaining - m
        return comb(n_interior, rest) if 0 <= rest <= n_interior else 0

    prefix = [[1]]
    for _, layouts, _ in comps:
        prefix.append(_convolve(prefix[-1], layouts))
    suffix = [[1]]
    for _, layouts, _ in reversed(comps):
        suffix.append(_convolve(suffix[-1], layouts))
    suffix.reverse()
    total_frontier = prefix[-1]
    total = sum(ways * weight(m) for m, ways in enumerate(total_frontier))
    if total == 0:
        raise InconsistentBoardError(f"no layout of {n_mines} mines fits the visible board")

    counts = np.zeros((rows, cols), dtype=object)
    counts[:] = 0
    for cell, value in known.items():
        counts[cell] = total * value
    for j, (cells, _, mine_layouts) in enumerate(comps):
        others = _convolve(prefix[j], suffix[j + 1])
        for k, row in enumerate(mine_layouts):
            w = sum(ways * weight(k + m) for m, ways in enumerate(others))
            if w:
                for cell, n in zip(cells, row):
                    counts[cell] += n * w
    if n_interior:
        per_cell = sum(ways * (comb(n_interior - 1, remaining - m - 1) if remaining - m >= 1
                               else 0) for m, ways in enumerate(total_frontier))
        for cell in interior:
            counts[cell] = per_cell
    return MineCounts(tuple(tuple(int(x) for x in row) for row in counts), total)


def mine_probabilities(visible: np.ndarray, n_mines: int) -> np.ndarray:
    """Exact mine probability of every cell given the visible board and the mine count.

    `visible`: ``(rows, cols)`` int, `UNOPENED` (-1) for closed cells, 0-8 for opened ones.
    Returns ``(rows, cols)`` float in [0, 1]; opened cells are 0. Raises
    `InconsistentBoardError` when no layout fits.
    """
    return mine_counts(visible, n_mines).probabilities()


def choose_cell(visible: np.ndarray, n_mines: int) -> Cell:
    """The oracle's cell: the board's centre before any cell is open; otherwise the closed cell
    with the lowest exact mine probability, ties broken by row-major order; so the first
    provably safe cell (probability exactly 0) whenever one exists.

    `visible`: ``(rows, cols)`` int as in `mine_probabilities`.
    """
    visible = np.asarray(visible)
    rows, cols = visible.shape
    closed = [(r, c) for r in range(rows) for c in range(cols) if visible[r, c] == UNOPENED]
    if not closed:
        raise ValueError("no closed cell left to open")
    if len(closed) == rows * cols:
        return rows // 2, cols // 2
    counts = mine_counts(visible, n_mines).mine_layouts
    return min(closed, key=lambda cell: (counts[cell[0]][cell[1]], cell))
