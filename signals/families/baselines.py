"""Baselines: random scores, the reference itself, and a text-level progress heuristic.

- ``random``: i.i.d. uniform scores from ``make_rng("signals/random", seed, point_id)``;
  every alignment metric's interval should cover chance.
- ``reference``: the reference Q of the point; must score tau = 1 and top-1 = 1.
- ``progress``: an upper reference from the suite's rules, read off the text observation:
  frozenlake, minus the BFS distance to G after the move (a hole is worst); sokoban, minus
  the summed box-to-nearest-target Manhattan distance after the move, a box pushed into a
  non-target corner penalised as a dead end. Other suites: all candidates tie (score 0).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence

import numpy as np

from harness.core import make_rng
from signals.base import EvaluationPoint
from signals.registry import register_signal

__all__ = ["RandomSignal", "ReferenceSignal", "ProgressSignal", "frozenlake_progress",
           "sokoban_progress", "grid_lines"]

_MOVES = {"left": (0, -1), "down": (1, 0), "right": (0, 1), "up": (-1, 0)}


class RandomSignal:
    name = "random"

    def __init__(self, seed: int = 0):
        self.seed = seed

    def score(self, points: Sequence[EvaluationPoint]) -> list[np.ndarray]:
        return [make_rng("signals/random", self.seed, p.point_id).random(len(p.candidates))
                for p in points]


class ReferenceSignal:
    name = "reference"

    def __init__(self, reference):
        self.reference = reference

    def score(self, points: Sequence[EvaluationPoint]) -> list[np.ndarray]:
        return [np.asarray(self.reference[p.point_id], dtype=float) for p in points]


def grid_lines(observation: str, alphabet: str) -> list[str]:
    """The longest run of consecutive lines made only of `alphabet` characters."""
    best: list[str] = []
    run: list[str] = []
    for line in observation.splitlines() + [""]:
        if line and set(line) <= set(alphabet):
            run.append(line)
            continue
        if len(run) > len(best):
            best = run
        run = []
    return best


def _find(rows: list[str], symbols: str) -> list[tuple[int, int]]:
    return [(r, c) for r, row in enumerate(rows) for c, ch in enumerate(row) if ch in symbols]


def frozenlake_progress(observation: str, action: str) -> float:
    """Minus the BFS distance (avoiding holes) from the cell the move leads to, to G; a
    move into a hole scores ``-2 * cells``, an unreachable goal ``-(cells + 1)``."""
    rows = grid_lines(observation, "_OGPX\u221a")
    players = _find(rows, "P")
    move = _MOVES.get(action.strip().lower())
    if not rows or not players or move is None:
        return 0.0
    n_rows, n_cols = len(rows), max(map(len, rows))
    cells = n_rows * n_cols
    r, c = players[0]
    r, c = min(max(r + move[0], 0), n_rows - 1), min(max(c + move[1], 0), len(rows[r]) - 1)
    if rows[r][c] == "O":
        return -2.0 * cells
    distance = {(r, c): 0}
    frontier = deque([(r, c)])
    while frontier:
        cell = frontier.popleft()
        if rows[cell[0]][cell[1]] == "G":
            return -float(distance[cell])
        for dr, dc in _MOVES.values():
            nr, nc = cell[0] + dr, cell[1] + dc
            if (0 <= nr < n_rows and 0 <= nc < len(rows[nr]) and (nr, nc) not in distance
                    and rows[nr][nc] != "O"):
                distance[nr, nc] = distance[cell] + 1
                frontier.append((nr, nc))
    return -float(cells + 1)


def sokoban_progress(observation: str, action: str) -> float:
    """Minus the summed Manhattan distance of each box to its nearest target after the move,
    minus 0.01 x the player's distance to the nearest box off target; a box in a non-target
    corner (a dead end) costs 100."""
    rows = grid_lines(observation, "#_OX\u221aPS")
    if not rows:
        return 0.0
    walls = set(_find(rows, "#"))
    targets = set(_find(rows, "O\u221aS"))
    boxes = set(_find(rows, "X\u221a"))
    players = _find(rows, "PS")
    move = _MOVES.get(action.strip().lower())
    if not players or not targets:
        return 0.0
    player = players[0]
    if move is not None:
        ahead = (player[0] + move[0], player[1] + move[1])
        beyond = (ahead[0] + move[0], ahead[1] + move[1])
        if ahead in boxes and beyond not in walls and beyond not in boxes:
            boxes = (boxes - {ahead}) | {beyond}
            player = ahead
        elif ahead not in walls and ahead not in boxes:
            player = ahead

    def manhattan(a, b):
        return abs(a[0] - b[0]) + abs(a[1] - b[1])

    total = sum(min(manhattan(b, t) for t in targets) for b in boxes)
    loose = [b for b in boxes if b not in targets]
    if loose:
        total += 0.01 * min(manhattan(player, b) for b in loose)
    for r, c in loose:
        vertical = (r - 1, c) in walls or (r + 1, c) in walls
        horizontal = (r, c - 1) in walls or (r, c + 1) in walls
        if vertical and horizontal:
            total += 100.0
    return -float(total)


_HEURISTICS = {"frozenlake": frozenlake_progress, "frozenlake-slippery": frozenlake_progress,
               "sokoban": sokoban_progress}


class ProgressSignal:
    name = "progress"

    def score(self, points: Sequence[EvaluationPoint]) -> list[np.ndarray]:
        out = []
        for point in points:
            heuristic = _HEURISTICS.get(point.suite.partition("@")[0])
            values = ([heuristic(point.observation, c) for c in point.candidates] if heuristic
                      else [0.0] * len(point.candidates))
            out.append(np.asarray(values, dtype=float))
        return out


register_signal("random", "baselines", lambda r: RandomSignal(r.seed),
                "uniform random scores (chance level)")
register_signal("reference", "baselines", lambda r: ReferenceSignal(r.reference),
                "the reference Q itself (perfect by construction)", needs=("reference",))
register_signal("progress", "baselines", lambda r: ProgressSignal(),
                "env-specific distance-to-goal heuristic read off the text (upper reference)")
