"""The Sokoban Env and the ``sokoban@1`` suite.

Task types (outer wall included in the size): ``6x6-1box``, ``7x7-1box``, ``7x7-2box``,
``8x8-2box``; per type 200 train, 30 dev and 30 test tasks. Task ids are
``{h}x{w}-b{boxes}-{index:04d}`` with indices 0-199 train, 200-229 dev, 230-259 test. A
task's room is generated on first use from ``make_rng("sokoban@1", task_id, attempt)``,
redrawing with ``attempt + 1`` until reverse play scores > 0, the BFS plan fits in
``max_steps`` and the room's content hash falls in its split's bucket (`split_of_room`):
so no room of one split equals a room of another, even for the small 6x6 rooms where draws
repeat (rooms may still repeat within a split). Rooms are cached per process.

``max_steps`` is gym-sokoban's default, 120. The eval seed does not change anything: the room
is fixed by the task id and the rules are deterministic. ``info["score"]`` is the fraction of
boxes on targets (1.0 exactly when won). An unparseable action changes nothing and costs
``invalid_reward = -0.1``, the same as a legal step, so invalid text is never cheaper than a
move.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from harness.core import HarnessError, make_rng, stable_hash
from tasks.base import SPLITS, SuiteBase, TaskSpec
from tasks.embedded import EmbeddedEnv
from tasks.sokoban.generator import GeneratorConfig, generate_room
from tasks.sokoban.rules import (ACTIONS, NOOP, STEP_PENALTY, SYMBOLS, Room, State,
                                 boxes_on_targets, parse_move, transition)
from tasks.sokoban.solver import GAMMA, optimal_q, shortest_plan, state_graph

__all__ = ["SokobanEnv", "SokobanSuite", "TaskType", "TASK_TYPES", "SPLIT_SIZES", "MAX_STEPS",
           "INSTRUCTIONS", "room_for_task", "split_of_room"]

SUITE_ID = "sokoban@1"
MAX_STEPS = 120
"""gym-sokoban's default step limit."""
MAX_ATTEMPTS = 2000
_SPLIT_BUCKETS = {"train": range(0, 20), "dev": range(20, 23), "test": range(23, 26)}
"""Buckets of ``stable_hash(room text) % 26`` per split (about the split sizes' shares)."""

INSTRUCTIONS = (
    "You are solving a Sokoban puzzle: push every box onto a target. You can push a box but "
    "not pull it, and you cannot push a box into a wall or another box. Symbols: "
    + ", ".join(f"{symbol} {name}" for symbol, name in SYMBOLS.items()) + ". "
    "Answer with one action: " + ", ".join(ACTIONS) + "."
)


@dataclass(frozen=True)
class TaskType:
    """One family of rooms: ``size x size`` grid (outer wall included) with `boxes` boxes."""

    size: int
    boxes: int

    @property
    def name(self) -> str:
        return f"{self.size}x{self.size}-{self.boxes}box"

    def task_id(self, index: int) -> str:
        return f"{self.size}x{self.size}-b{self.boxes}-{index:04d}"


TASK_TYPES = (TaskType(6, 1), TaskType(7, 1), TaskType(7, 2), TaskType(8, 2))
SPLIT_SIZES = {"train": 200, "dev": 30, "test": 30}


def split_of_room(room: Room) -> str:
    """The split a room may belong to, fixed by a hash of its start grid text."""
    bucket = stable_hash(room.render(room.start)) % 26
    return next(split for split, buckets in _SPLIT_BUCKETS.items() if bucket in buckets)


@functools.lru_cache(maxsize=2048)
def room_for_task(task_id: str, split: str, size: int, boxes: int,
                  max_steps: int = MAX_STEPS) -> Room:
    """The room of `task_id`: deterministic, solvable with a BFS plan of <= `max_steps`
    steps, and hashed into `split` (`split_of_room`)."""
    config = GeneratorConfig(size, size, boxes)
    for attempt in range(MAX_ATTEMPTS):
        room = generate_room(config, make_rng(SUITE_ID, task_id, attempt))
        if room is None or split_of_room(room) != split:
            continue
        plan = shortest_plan(room, room.start)
        if plan is not None and 0 < len(plan) <= max_steps:
            return room
    raise HarnessError(f"could not generate a solvable Sokoban room for {task_id}")


class SokobanEnv(EmbeddedEnv):
    """One Sokoban room behind the text Env contract, with an oracle, exact Q* and state keys.

    The state is a `State` (player cell, sorted box cells) over the fixed `Room`.
    """

    invalid_reward = STEP_PENALTY

    def __init__(self, room: Room, *, max_steps: int = MAX_STEPS, gamma: float = GAMMA):
        super().__init__(max_steps)
        self.room = room
        self.gamma = gamma
        self.state = room.start
        self._plans: dict[State, tuple[int, ...] | None] = {}

    # -- game hooks --------------------------------------------------------------------------
    def new_state(self, rng: np.random.Generator) -> State:
        return self.room.start

    def parse_action(self, text: str) -> int | None:
        return parse_move(text)

    def apply(self, move: int, rng: np.random.Generator) -> tuple[float, bool]:
        self.state, reward, solved = transition(self.room, self.state, move)
        return reward, solved

    def render(self) -> str:
        return f"{self.room.render(self.state)}\nAvailable actions: {', '.join(ACTIONS)}"

    def admissible_actions(self) -> list[str]:
        return list(ACTIONS)

    def won(self) -> bool:
        return boxes_on_targets(self.room, self.state) == self.room.num_boxes

    def score(self) -> float:
        """Fraction of boxes on targets."""
        return boxes_on_targets(self.room, self.state) / self.room.num_boxes

    def state_key(self) -> str:
        """The grid text of the current state (canonical: it fixes walls, boxes and player)."""
        return self.room.render(self.state)

    # -- capabilities ------------------------------------------------------------------------
    def plan(self) -> tuple[str, ...] | None:
        """A shortest plan (action texts) from the current state, or None when unsolvable."""
        moves = self._plan_moves(self.state)
        return None if moves is None else tuple(ACTIONS[m] for m in moves)

    def oracle_action(self) -> str:
        """First action of a shortest BFS plan from the current state; "No-op" when the state
        is solved or dead-locked (nothing can win any more)."""
        moves = self._plan_moves(self.state)
        return ACTIONS[moves[0]] if moves else ACTIONS[NOOP]

    def q_values(self) -> dict[str, float]:
        """Exact infinite-horizon discounted Q* (gamma = `self.gamma`) of the current state;
        ignores truncation. Raises `HarnessError` when the room has over 200k states."""
        graph = state_graph(self.room)
        if self.state not in graph.index:
            raise HarnessError("the current Sokoban state is not reachable from the room's start")
        row = optimal_q(self.room, self.gamma)[graph.index[self.state]]
        return {action: float(q) for action, q in zip(ACTIONS, row)}

    def _plan_moves(self, state: State) -> tuple[int, ...] | None:
        if state not in self._plans:
            moves = shortest_plan(self.room, state)
            self._plans[state] = moves
            if moves:  # every suffix of a shortest plan is a shortest plan from its state
                current = state
                for k, move in enumerate(moves[:-1]):
                    current = transition(self.room, current, move)[0]
                    self._plans.setdefault(current, moves[k + 1:])
        return self._plans[state]


class SokobanSuite(SuiteBase):
    """``sokoban@1``: reverse-played rooms of four task types (see the module docstring)."""

    name = "sokoban"
    version = 1
    description = ("Sokoban rooms generated by reverse play as in gym-sokoban, rendered as "
                   "RAGEN's text grid. " + INSTRUCTIONS)
    trivial_actions = {"no-op": ACTIONS[NOOP]}
    instructions = INSTRUCTIONS
    blocking = False

    def __init__(self) -> None:
        specs = []
        for task_type in TASK_TYPES:
            start = 0
            for split in SPLITS:
                for index in range(start, start + SPLIT_SIZES[split]):
                    specs.append(TaskSpec(
                        id=task_type.task_id(index), split=split, task_type=task_type.name,
                        metadata={"height": task_type.size, "width": task_type.size,
                                  "boxes": task_type.boxes, "index": index,
                                  "max_steps": MAX_STEPS}))
                start += SPLIT_SIZES[split]
        super().__init__(specs)

    def make_env(self, task_id: str) -> SokobanEnv:
        spec = self.task(task_id)
        room = room_for_task(task_id, spec.split, spec.metadata["height"], spec.metadata["boxes"])
        return SokobanEnv(room)
