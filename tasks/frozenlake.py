"""FrozenLake as text: Gymnasium's dynamics, RAGEN's rendering, exact Q* by value iteration.

Two suites share the same maps and differ only in the dynamics:

- ``frozenlake@1``: deterministic moves (Gymnasium ``is_slippery=False``).
- ``frozenlake-slippery@1``: Gymnasium's slippery ice: the intended direction or either
  perpendicular one, each with probability 1/3.

Maps. 4x4 and 8x8, each tile frozen with probability 0.8 (Gymnasium's ``generate_random_map``
default ``p=0.8``), start top-left, goal bottom-right, redrawn until a breadth-first search
finds a path from S to G. Each map is drawn from ``make_rng("frozenlake/map", task_id)``; a map
equal to one already drawn for an earlier task of the same size is redrawn too, so every task
has its own map and no test map appears in dev or train. Maps are drawn in the order test,
dev, train, so growing the train split never changes a test map.

Tasks. Ids ``{size}-{index:04d}`` (``4x4-0007``, ``8x8-0012``); per size, indices 0000-0199
are train, 0200-0249 dev, 0250-0299 test. ``task_type`` is ``"4x4"`` or ``"8x8"``; metadata
holds ``size``, ``rows`` (the map, Gymnasium letters S/F/H/G), ``slippery``, ``max_steps``
and ``shortest_path`` (BFS moves from S to G).

Actions ``Left``/``Down``/``Right``/``Up`` (Gymnasium 0/1/2/3), matched case-insensitively
after stripping whitespace; any other text is invalid. All four are always admissible (walking
into a wall is legal and leaves the player in place). Reward 1.0 on entering G, else 0;
the episode terminates on H or G. Score: 1.0 if the goal was reached, else 0.0.

Step limits. Deterministic: 30 (4x4) and 100 (8x8), above the longest possible shortest path
(15 and 63 moves), so the oracle always reaches G in time. Slippery: Gymnasium's registered
limits, 100 (4x4) and 200 (8x8).

Q*. Infinite-horizon, discount ``GAMMA = 0.99`` for both suites (the step limit is ignored),
terminal states worth 0, computed by value iteration to a sup-norm change below 1e-12 and
cached per (map, slippery). ``oracle_action`` is greedy in Q*, ties broken by action order.

Rendering (RAGEN): one line per row, ``P`` player, ``_`` frozen (the start tile too), ``O``
hole, ``G`` goal, ``X`` player fallen into a hole, ``√`` player on the goal; then one line
listing the actions.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence
from functools import lru_cache

import numpy as np

from harness.core import make_rng
from tasks.base import SuiteBase, TaskSpec
from tasks.embedded import EmbeddedEnv

__all__ = [
    "ACTIONS", "GAMMA", "FROZEN_PROB", "MAX_STEPS", "SPLIT_SIZES", "shortest_path",
    "generate_map", "draw_distinct_maps", "transition_model", "value_iteration", "solve",
    "parse_action", "render_map", "FrozenLakeEnv", "FrozenLakeSuite", "SlipperyFrozenLakeSuite",
]

ACTIONS = ("Left", "Down", "Right", "Up")
"""Action texts, indexed as Gymnasium's actions 0-3."""
GAMMA = 0.99
"""Discount of the reference Q*, both suites."""
FROZEN_PROB = 0.8
"""Probability that a generated tile is frozen (Gymnasium's ``generate_random_map`` p)."""
MAX_STEPS = {(4, False): 30, (8, False): 100, (4, True): 100, (8, True): 200}
"""Step limit per (size, slippery)."""
SPLIT_SIZES = {"train": 200, "dev": 50, "test": 50}
"""Tasks per split and per map size; ids are numbered in this order."""
SIZES = (4, 8)
VALUE_TOLERANCE = 1e-12

_MOVES = ((0, -1), (1, 0), (0, 1), (-1, 0))  # (d_row, d_col) of Left, Down, Right, Up
_WORDS = {word.lower(): index for index, word in enumerate(ACTIONS)}
_ACTIONS_LINE = "Actions: " + ", ".join(ACTIONS)


# ---------------------------------------------------------------------------------------------
# Maps

def shortest_path(desc: Sequence[str]) -> int | None:
    """Fewest moves from S (wherever it is; top-left on the classic maps) to G avoiding holes,
    by BFS; None when G is unreachable."""
    n_rows, n_cols = len(desc), len(desc[0])
    start = next(((r, c) for r in range(n_rows) for c in range(n_cols) if desc[r][c] == "S"),
                 (0, 0))
    distance = {start: 0}
    frontier = deque([start])
    while frontier:
        row, col = frontier.popleft()
        if desc[row][col] == "G":
            return distance[row, col]
        for d_row, d_col in _MOVES:
            nxt = (row + d_row, col + d_col)
            if (0 <= nxt[0] < n_rows and 0 <= nxt[1] < n_cols and nxt not in distance
                    and desc[nxt[0]][nxt[1]] != "H"):
                distance[nxt] = distance[row, col] + 1
                frontier.append(nxt)
    return None


def generate_map(size: int, rng: np.random.Generator, p: float = FROZEN_PROB) -> tuple[str, ...]:
    """A random solvable ``size`` x ``size`` map (rows of S/F/H/G), as Gymnasium draws them."""
    while True:
        frozen = rng.random((size, size)) < p
        rows = ["".join("F" if f else "H" for f in line) for line in frozen]
        rows[0] = "S" + rows[0][1:]
        rows[-1] = rows[-1][:-1] + "G"
        if shortest_path(rows) is not None:
            return tuple(rows)


def draw_distinct_maps(split_sizes: dict[str, int], task_id_of: Callable[[int], str],
                       stream: str, draw: Callable[[np.random.Generator], tuple[str, ...]]
                       ) -> dict[str, tuple[str, tuple[str, ...]]]:
    """``{task_id: (split, rows)}``: task indices numbered through the splits in the order of
    `split_sizes`, each map drawn by `draw` from ``make_rng(stream, task_id)`` (redrawn until
    no earlier map equals it), drawn test, dev, train, so that growing the train split never
    changes a held-out map and no map stands in two splits."""
    first, ranges = 0, {}
    for split, count in split_sizes.items():
        ranges[split] = range(first, first + count)
        first += count
    seen: set[tuple[str, ...]] = set()
    maps: dict[str, tuple[str, tuple[str, ...]]] = {}
    for split in ("test", "dev", "train"):
        for index in ranges[split]:
            name = task_id_of(index)
            rng = make_rng(stream, name)
            rows = draw(rng)
            while rows in seen:
                rows = draw(rng)
            seen.add(rows)
            maps[name] = (split, rows)
    return dict(sorted(maps.items()))


@lru_cache(maxsize=None)
def _suite_maps(size: int) -> dict[str, tuple[str, tuple[str, ...]]]:
    """``{task_id: (split, rows)}`` for one size; maps distinct, drawn test, dev, train."""
    return draw_distinct_maps(SPLIT_SIZES, lambda index: f"{size}x{size}-{index:04d}",
                              "frozenlake/map", lambda rng: generate_map(size, rng))


# ---------------------------------------------------------------------------------------------
# Exact model

def transition_model(desc: Sequence[str], slippery: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Gymnasium FrozenLake's MDP for map `desc` (rows of S/F/H/G), states ``row * n_cols + col``.

    Returns ``(P, R, terminal)``: `P` of shape ``(n_states, 4, n_states)``, ``P[s, a, s']`` the
    probability of moving to ``s'``; `R` of the same shape, the reward of that transition (1.0
    on entering G from a non-terminal state); `terminal` of shape ``(n_states,)``, True on H and
    G. Terminal states are absorbing with reward 0, as in Gymnasium.
    """
    grid = np.array([list(row) for row in desc])
    n_rows, n_cols = grid.shape
    n_states = n_rows * n_cols
    terminal = np.isin(grid.ravel(), ["H", "G"])
    goal = grid.ravel() == "G"
    row, col = np.divmod(np.arange(n_states), n_cols)
    # destination[d, s]: the state a move in direction d leads to from s (walls stop the move)
    destination = np.stack([np.clip(row + dr, 0, n_rows - 1) * n_cols + np.clip(col + dc, 0, n_cols - 1)
                            for dr, dc in _MOVES])
    offsets, prob = ((-1, 0, 1), 1.0 / 3.0) if slippery else ((0,), 1.0)
    P = np.zeros((n_states, 4, n_states))
    states = np.arange(n_states)
    for action in range(4):
        for offset in offsets:
            np.add.at(P, (states, action, destination[(action + offset) % 4]), prob)
    ends = np.flatnonzero(terminal)
    P[ends] = 0.0
    P[ends, :, ends] = 1.0  # terminal states absorb: P[h, a, h] = 1
    R = np.zeros_like(P)
    R[~terminal] = goal.astype(float)  # broadcast over (a, s'): entering G pays 1
    R *= P > 0
    return P, R, terminal


def value_iteration(P: np.ndarray, R: np.ndarray, terminal: np.ndarray, gamma: float = GAMMA,
                    tol: float = VALUE_TOLERANCE, max_iter: int = 100_000) -> np.ndarray:
    """Q* of shape ``(n_states, n_actions)`` by value iteration.

    `P`, `R`: shape ``(n_states, n_actions, n_states)`` (see `transition_model`); `terminal`:
    shape ``(n_states,)``, terminal states worth 0. Iterates
    ``Q[s, a] = sum_s' P[s, a, s'] (R[s, a, s'] + gamma max_a' Q[s', a'] (1 - terminal[s']))``
    until the largest change is below `tol`.
    """
    expected_reward = (P * R).sum(axis=-1)
    alive = ~np.asarray(terminal, dtype=bool)
    q = np.zeros(P.shape[:2])
    for _ in range(max_iter):
        value = np.where(alive, q.max(axis=1), 0.0)
        new_q = expected_reward + gamma * (P @ value)
        if np.max(np.abs(new_q - q)) < tol:
            return new_q
        q = new_q
    raise RuntimeError(f"value iteration did not converge in {max_iter} iterations")


@lru_cache(maxsize=4096)
def solve(desc: tuple[str, ...], slippery: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(P, R, terminal, Q)`` for a map, cached; arrays are read-only (shapes as above)."""
    P, R, terminal = transition_model(desc, slippery)
    q = value_iteration(P, R, terminal, GAMMA)
    for array in (P, R, terminal, q):
        array.setflags(write=False)
    return P, R, terminal, q


# ---------------------------------------------------------------------------------------------
# Text

def parse_action(text: str) -> int | None:
    """The action index named by `text` (Left/Down/Right/Up, any case, surrounding whitespace
    ignored), or None for anything else."""
    word = text.strip()
    return _WORDS.get(word.lower()) if word.isascii() else None


def render_map(desc: Sequence[str], position: int) -> str:
    """RAGEN's text grid of `desc` with the player at state `position`, one row per line."""
    n_cols = len(desc[0])
    symbols = {"S": "_", "F": "_", "H": "O", "G": "G"}
    player = {"H": "X", "G": "√"}
    lines = []
    for row_index, row in enumerate(desc):
        cells = [symbols[c] for c in row]
        if position // n_cols == row_index:
            col = position % n_cols
            cells[col] = player.get(row[col], "P")
        lines.append("".join(cells))
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------
# Env and suites

class FrozenLakeEnv(EmbeddedEnv):
    """One FrozenLake map; `self.state` is the player's state index ``row * n_cols + col``."""

    def __init__(self, desc: Sequence[str], *, slippery: bool, max_steps: int):
        super().__init__(max_steps)
        self.desc = tuple(desc)
        self.slippery = slippery
        self._n_cols = len(self.desc[0])
        self._flat = "".join(self.desc)

    def new_state(self, rng: np.random.Generator) -> int:
        return 0

    def parse_action(self, text: str) -> int | None:
        return parse_action(text)

    def apply(self, move: int, rng: np.random.Generator) -> tuple[float, bool]:
        direction = (move + int(rng.integers(-1, 2))) % 4 if self.slippery else move
        d_row, d_col = _MOVES[direction]
        n_rows = len(self.desc)
        row = min(max(self.state // self._n_cols + d_row, 0), n_rows - 1)
        col = min(max(self.state % self._n_cols + d_col, 0), self._n_cols - 1)
        self.state = row * self._n_cols + col
        tile = self._flat[self.state]
        return float(tile == "G"), tile in "HG"

    def render(self) -> str:
        return f"{render_map(self.desc, self.state)}\n{_ACTIONS_LINE}"

    def admissible_actions(self) -> list[str]:
        return list(ACTIONS)

    def won(self) -> bool:
        return self.state is not None and self._flat[self.state] == "G"

    def state_key(self) -> str:
        """``"row,col"`` of the player (the whole state within one map)."""
        return f"{self.state // self._n_cols},{self.state % self._n_cols}"

    def q_values(self) -> dict[str, float]:
        """Exact Q* (discount `GAMMA`) of each action in the current state."""
        q = solve(self.desc, self.slippery)[3][self.state]
        return {action: float(value) for action, value in zip(ACTIONS, q)}

    def oracle_action(self) -> str:
        """Greedy in Q*; among actions within 1e-12 of the best, the first in `ACTIONS`."""
        q = solve(self.desc, self.slippery)[3][self.state]
        return ACTIONS[int(np.flatnonzero(q >= q.max() - VALUE_TOLERANCE)[0])]


class FrozenLakeSuite(SuiteBase):
    """Deterministic FrozenLake on generated 4x4 and 8x8 maps (see the module docstring)."""

    name = "frozenlake"
    version = 1
    description = "FrozenLake (Gymnasium dynamics, RAGEN text), deterministic, 4x4 and 8x8 maps"
    instructions = (
        "You are walking on a frozen lake. Move the player P from the top-left corner to the "
        "goal G without falling into a hole O. Map symbols: P player, _ frozen ice, O hole, "
        "G goal, X player in a hole, \u221a player on the goal. Walking into the edge of the "
        "map leaves you in place. Answer with one move: Left, Down, Right or Up."
    )
    trivial_actions = {f"always-{a.lower()}": a for a in ACTIONS}
    slippery = False

    def __init__(self) -> None:
        specs = []
        for size in SIZES:
            max_steps = MAX_STEPS[size, self.slippery]
            for task_id, (split, rows) in _suite_maps(size).items():
                metadata = {"size": size, "rows": rows, "slippery": self.slippery,
                            "max_steps": max_steps, "shortest_path": shortest_path(rows)}
                specs.append(TaskSpec(task_id, split, f"{size}x{size}", metadata))
        super().__init__(specs)

    def make_env(self, task_id: str) -> FrozenLakeEnv:
        metadata = self.task(task_id).metadata
        return FrozenLakeEnv(metadata["rows"], slippery=self.slippery,
                             max_steps=metadata["max_steps"])


class SlipperyFrozenLakeSuite(FrozenLakeSuite):
    """Slippery FrozenLake (Gymnasium ``is_slippery=True``) on the same maps."""

    name = "frozenlake-slippery"
    version = 1
    description = "FrozenLake (Gymnasium dynamics, RAGEN text), slippery, 4x4 and 8x8 maps"
    instructions = FrozenLakeSuite.instructions.replace(
        "Walking into", "The ice is slippery: a move goes the intended way or to either side "
        "of it, each with probability 1/3. Walking into")
    slippery = True
