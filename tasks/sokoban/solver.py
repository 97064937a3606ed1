"""Exact solving: shortest plans by breadth-first search, and the optimal discounted Q*.

`shortest_plan` searches (player, boxes) states, one edge per step, so its plan is shortest in
steps (the benchmark's cost). It prunes states with a box in a *dead corner*: a non-target
floor cell with a wall above or below and a wall left or right; such a box can never move
again, so no solution passes through that state and the plan stays shortest.

`optimal_q` enumerates every state reachable from the room's start (no pruning: Q is needed
in dead states too) and computes the infinite-horizon discounted optimum
``Q*(s, a) = r(s, a) + gamma * [s' not solved] * max_a' Q*(s', a')`` over the five actions,
solved states being terminal. It ignores the step limit: with truncation the true Q would
also depend on the steps left. Value iteration gives a near-optimal policy, then policy
iteration (each evaluation an exact sparse linear solve) makes the fixed point exact to
rounding.
"""

from __future__ import annotations

import functools
from collections import deque
from dataclasses import dataclass

import numpy as np
import scipy.sparse
import scipy.sparse.linalg

from harness.core import HarnessError
from tasks.sokoban.rules import ACTIONS, Room, State, boxes_on_targets, push_or_move, transition

__all__ = ["dead_corners", "shortest_plan", "StateGraph", "state_graph", "optimal_q",
           "MAX_Q_STATES", "GAMMA"]

GAMMA = 0.99
"""Discount of the reference Q* (a common choice for these grid games; gym-sokoban has none)."""
MAX_Q_STATES = 200_000
"""Largest reachable state space `state_graph` enumerates."""


@functools.lru_cache(maxsize=256)
def dead_corners(room: Room) -> frozenset[int]:
    """Non-target floor cells where a box is stuck for good (walls on two adjacent sides)."""
    up, down, left, right = room.deltas
    dead = set()
    for cell in room.floor_cells():
        if cell in room.targets:
            continue
        vertical = cell + up in room.walls or cell + down in room.walls
        horizontal = cell + left in room.walls or cell + right in room.walls
        if vertical and horizontal:
            dead.add(cell)
    return frozenset(dead)


@functools.lru_cache(maxsize=4096)
def shortest_plan(room: Room, state: State) -> tuple[int, ...] | None:
    """A shortest sequence of moves (indices into `ACTIONS`) that puts every box on a target,
    or None when none exists. Ties break by the move order Up, Down, Left, Right."""
    if boxes_on_targets(room, state) == room.num_boxes:
        return ()
    dead = dead_corners(room)
    if any(box in dead for box in state.boxes):
        return None
    parent: dict[State, tuple[State, int]] = {state: (state, -1)}
    queue = deque([state])
    while queue:
        current = queue.popleft()
        for move in range(4):
            after = push_or_move(room, current, move)
            if after in parent or any(box in dead for box in after.boxes):
                continue
            parent[after] = (current, move)
            if boxes_on_targets(room, after) == room.num_boxes:
                return _unwind(parent, after)
            queue.append(after)
    return None


def _unwind(parent: dict[State, tuple[State, int]], state: State) -> tuple[int, ...]:
    moves = []
    while parent[state][1] >= 0:
        state, move = parent[state]
        moves.append(move)
    return tuple(reversed(moves))


@dataclass(frozen=True)
class StateGraph:
    """Every state reachable from a room's start, with the deterministic step of each action.

    `next_index` and `rewards` have shape ``(n_states, n_actions)`` (actions in `ACTIONS`
    order); `solved` has shape ``(n_states,)``. Rows of solved states are self-loops with
    reward 0 and are never used (solved states are terminal).
    """

    states: tuple[State, ...]
    index: dict[State, int]
    next_index: np.ndarray
    rewards: np.ndarray
    solved: np.ndarray


@functools.lru_cache(maxsize=32)
def state_graph(room: Room, max_states: int = MAX_Q_STATES) -> StateGraph:
    """Enumerate the reachable states of `room` (breadth-first from its start).

    Raises `HarnessError` when more than `max_states` states are reachable.
    """
    index = {room.start: 0}
    states, edges, solved = [room.start], [], []
    position = 0
    while position < len(states):
        state = states[position]
        position += 1
        done = boxes_on_targets(room, state) == room.num_boxes
        solved.append(done)
        row = []
        for move in range(len(ACTIONS)):
            after, reward, _ = (state, 0.0, True) if done else transition(room, state, move)
            if after not in index:
                if len(states) >= max_states:
                    raise HarnessError(
                        f"Sokoban room has more than {max_states} reachable states; exact Q-values "
                        "are not available for it")
                index[after] = len(states)
                states.append(after)
            row.append((index[after], reward))
        edges.append(row)
    table = np.array(edges, dtype=float).reshape(len(states), len(ACTIONS), 2)
    return StateGraph(tuple(states), index, table[..., 0].astype(np.int64), table[..., 1],
                      np.array(solved, dtype=bool))


@functools.lru_cache(maxsize=32)
def optimal_q(room: Room, gamma: float = GAMMA) -> np.ndarray:
    """Q* of shape ``(n_states, n_actions)`` over ``state_graph(room).states`` (rows of solved
    states are 0). Exact to rounding: Bellman residual ~1e-13."""
    graph = state_graph(room)
    n = len(graph.states)
    live = ~graph.solved
    cont = gamma * (live[:, None] & ~graph.solved[graph.next_index])  # (n_states, n_actions)

    def backup(values: np.ndarray) -> np.ndarray:
        q = graph.rewards + cont * values[graph.next_index]
        q[graph.solved] = 0.0
        return q

    values = np.zeros(n)
    for _ in range(300):  # warm start: value iteration
        values = backup(values).max(axis=1)
    policy = backup(values).argmax(axis=1)
    rows = np.arange(n)
    for _ in range(1000):  # policy iteration; exact evaluation by a sparse solve
        matrix = scipy.sparse.eye(n, format="csr") - scipy.sparse.csr_matrix(
            (cont[rows, policy], (rows, graph.next_index[rows, policy])), shape=(n, n))
        rewards = np.where(live, graph.rewards[rows, policy], 0.0)
        values = scipy.sparse.linalg.spsolve(matrix.tocsc(), rewards)
        q = backup(values)
        best = q.argmax(axis=1)
        keep = q[rows, policy] >= q[rows, best] - 1e-12
        if keep.all():
            return q
        policy = np.where(keep, policy, best)
    raise HarnessError("policy iteration did not converge")  # pragma: no cover
