"""Sokoban (gym-sokoban rules and reverse-play generation, RAGEN text rendering): ``sokoban@1``.

Modules: `rules` (rooms, states, push-or-move steps and rewards), `generator` (reverse play),
`solver` (BFS shortest plans, exact discounted Q*), `env` (the Env and the suite).
"""

from tasks.sokoban.env import (INSTRUCTIONS, MAX_STEPS, SPLIT_SIZES, TASK_TYPES, SokobanEnv,
                               SokobanSuite, TaskType, room_for_task)
from tasks.sokoban.rules import ACTIONS, Room, State, parse_move, transition
from tasks.sokoban.solver import GAMMA, optimal_q, shortest_plan, state_graph

__all__ = [
    "ACTIONS", "GAMMA", "INSTRUCTIONS", "MAX_STEPS", "SPLIT_SIZES", "TASK_TYPES", "Room",
    "SokobanEnv", "SokobanSuite", "State", "TaskType", "optimal_q", "parse_move",
    "room_for_task", "shortest_plan", "state_graph", "transition",
]
