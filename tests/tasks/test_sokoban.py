"""Tests for the ``sokoban@1`` suite: rules and rewards by hand, generation, solver, Q*, contract."""

from __future__ import annotations

import re
import time
from collections import deque

import numpy as np
import pytest
from hypothesis import given, strategies as st

from harness.core import HarnessError, UnknownNameError, make_rng
from tasks import check_env, get_suite
from tasks.sokoban import ACTIONS, GAMMA, MAX_STEPS, Room, SokobanEnv, SokobanSuite, State
from tasks.sokoban import generator, rules, solver
from tasks.sokoban.env import TASK_TYPES, room_for_task, split_of_room

TINY = """
#####
#PXO#
#####
"""
AROUND = """
#####
#O__#
#_X_#
#__P#
#####
"""
OFF_AND_ON = """
#######
#P√_O_#
#__X__#
#_____#
#######
"""
TARGET_TO_TARGET = """
######
#P√O_#
#__X_#
######
"""
BOX_AGAINST_WALL = """
#####
#O__#
#_PX#
#####
"""
BOX_AGAINST_BOX = """
######
#PXX_#
#OO__#
######
"""


def env_for(text: str) -> SokobanEnv:
    env = SokobanEnv(Room.from_text(text))
    env.reset(seed=0)
    return env


def play(env: SokobanEnv, actions: list[str]) -> list:
    return [env.step(action) for action in actions]


def grid(env: SokobanEnv) -> str:
    return env.room.render(env.state)


@pytest.fixture(scope="module")
def suite() -> SokobanSuite:
    return get_suite("sokoban")


@pytest.fixture(scope="module")
def test_envs(suite) -> list[SokobanEnv]:
    return [suite.make_env(spec.id) for spec in suite.tasks("test")]


# -- rules and rewards, by hand -----------------------------------------------------------------

def test_reward_constants_are_gym_sokobans():
    assert (rules.STEP_PENALTY, rules.BOX_ON_TARGET_REWARD, rules.BOX_OFF_TARGET_PENALTY,
            rules.FINISH_REWARD) == (-0.1, 1.0, -1.0, 10.0)
    assert SokobanEnv.invalid_reward == -0.1
    assert MAX_STEPS == 120 and GAMMA == 0.99
    assert ACTIONS == ("Up", "Down", "Left", "Right", "No-op")


def test_room_text_round_trips_and_uses_ragen_symbols():
    room = Room.from_text(OFF_AND_ON)
    assert room.render(room.start) == OFF_AND_ON.strip()
    assert room.targets == (9, 11) and room.start == State(8, (9, 17))
    env = env_for("#####\n#SX_#\n#___#\n#####")
    assert grid(env) == "#####\n#SX_#\n#___#\n#####"
    env.step("Right")
    assert grid(env) == "#####\n#OPX#\n#___#\n#####"
    with pytest.raises(HarnessError):
        Room.from_text("#P_XO#")  # not enclosed by walls
    with pytest.raises(HarnessError):
        Room.from_text("#####\n#PXX#\n#O__#\n#####")  # two boxes, one target


def test_single_push_onto_target_wins_with_hand_computed_reward():
    env = env_for(TINY)
    assert solver.shortest_plan(env.room, env.state) == (3,)
    result = env.step("Right")
    assert result.reward == pytest.approx(-0.1 + 1 + 10)
    assert result.terminated and not result.truncated
    assert result.info["won"] and result.info["score"] == 1.0
    assert grid(env) == "#####\n#_P√#\n#####"


def test_plan_around_the_box_has_hand_computed_length_and_rewards():
    env = env_for(AROUND)
    plan = env.plan()
    assert plan is not None and len(plan) == 5  # 2 pushes, 1 step to the first, 2 around a corner
    results = play(env, list(plan))
    assert [r.reward for r in results] == pytest.approx([-0.1] * 4 + [10.9])
    assert [r.terminated for r in results] == [False] * 4 + [True]
    assert sum(r.reward for r in results) == pytest.approx(10.5)
    assert solver.dead_corners(env.room) == frozenset({8, 16, 18})  # (1,3), (3,1), (3,3)


def test_push_off_and_onto_targets():
    env = env_for(OFF_AND_ON)
    results = play(env, ["Right", "Right", "Right"])
    assert [r.reward for r in results] == pytest.approx([-1.1, 0.9, -1.1])
    assert [r.info["score"] for r in results] == [0.0, 0.5, 0.0]
    assert not any(r.terminated for r in results)


def test_push_from_target_to_target_keeps_count_and_costs_one_step():
    env = env_for(TARGET_TO_TARGET)
    result = env.step("Right")
    assert result.reward == pytest.approx(-0.1)
    assert grid(env).splitlines()[1] == "#_S√_#"  # the player now stands on the first target
    assert result.info["score"] == 0.5


@pytest.mark.parametrize("text, action", [
    (BOX_AGAINST_WALL, "Right"),  # box into a wall
    (BOX_AGAINST_BOX, "Right"),   # box into a box
    (BOX_AGAINST_BOX, "Up"),      # player into a wall
    (BOX_AGAINST_BOX, "No-op"),
])
def test_blocked_moves_are_legal_no_ops_costing_one_step(text, action):
    env = env_for(text)
    before = env.state
    result = env.step(action)
    assert env.state == before and not result.info["invalid"]
    assert result.reward == pytest.approx(-0.1)
    assert result.observation.startswith(Room.from_text(text).render(before))


def test_unparseable_action_is_invalid_and_costs_the_step_penalty():
    env = env_for(TINY)
    result = env.step("push the box please")
    assert result.info["invalid"] and result.reward == pytest.approx(-0.1)
    assert env.state == env.room.start and result.observation.startswith("Invalid action")
    assert "Available actions: Up, Down, Left, Right, No-op" in result.observation


def test_truncation_at_max_steps_without_winning():
    env = env_for(AROUND)
    results = play(env, ["No-op"] * MAX_STEPS)
    assert [r.truncated for r in results] == [False] * (MAX_STEPS - 1) + [True]
    assert not results[-1].terminated and results[-1].info["score"] == 0.0


_CASED = st.sampled_from(ACTIONS).flatmap(lambda name: st.tuples(
    st.just(name),
    st.lists(st.booleans(), min_size=len(name), max_size=len(name)),
    st.sampled_from(["", " ", "\n", "\t "]), st.sampled_from(["", " ", " \n"])))


@given(_CASED)
def test_parser_accepts_every_casing_and_padding(case):
    name, upper, left, right = case
    text = left + "".join(c.upper() if u else c.lower() for c, u in zip(name, upper)) + right
    assert rules.parse_move(text) == ACTIONS.index(name)


@given(st.text())
def test_parser_accepts_only_action_names(text):
    move = rules.parse_move(text)
    names = [a.lower() for a in ACTIONS]
    if text.strip().lower() in names:
        assert move == names.index(text.strip().lower())
    else:
        assert move is None


# -- exact Q* ---------------------------------------------------------------------------------

def assert_bellman_optimal(room: Room, gamma: float = GAMMA) -> None:
    graph = solver.state_graph(room)
    q = solver.optimal_q(room, gamma)
    for i, state in enumerate(graph.states):
        if rules.boxes_on_targets(room, state) == room.num_boxes:
            continue
        for move in range(len(ACTIONS)):
            after, reward, solved = rules.transition(room, state, move)
            target = reward + (0.0 if solved else gamma * q[graph.index[after]].max())
            assert abs(q[i, move] - target) < 1e-9, (state, move)


def test_q_values_of_tiny_room_by_hand():
    q = env_for(TINY).q_values()
    assert q["Right"] == pytest.approx(10.9, abs=1e-12)
    for action in ("Up", "Down", "Left", "No-op"):
        assert q[action] == pytest.approx(-0.1 + 0.99 * 10.9, abs=1e-12)
    assert_bellman_optimal(Room.from_text(TINY))


def test_q_values_satisfy_bellman_optimality_on_generated_rooms(suite):
    for task_type in TASK_TYPES:
        for index in (230, 231):
            env = suite.make_env(task_type.task_id(index))
            assert_bellman_optimal(env.room)
            env.reset(seed=0)
            graph = solver.state_graph(env.room)
            row = solver.optimal_q(env.room)[graph.index[env.room.start]]
            assert list(env.q_values().values()) == pytest.approx(list(row), abs=0)


def test_q_values_refuse_rooms_too_large_to_enumerate():
    with pytest.raises(HarnessError, match="reachable states"):
        solver.state_graph(Room.from_text(AROUND), max_states=10)


def test_q_greedy_policy_wins(suite):
    for task_type in TASK_TYPES:
        env = suite.make_env(task_type.task_id(232))
        env.reset(seed=0)
        for _ in range(MAX_STEPS):
            q = env.q_values()
            result = env.step(max(q, key=q.get))
            if result.terminated or result.truncated:
                break
        assert result.info["won"]


# -- solver -----------------------------------------------------------------------------------

def unpruned_distance(room: Room) -> int | None:
    """Steps to the nearest solved state by plain BFS over the full state graph."""
    graph = solver.state_graph(room)
    dist, queue = {0: 0}, deque([0])
    while queue:
        i = queue.popleft()
        if graph.solved[i]:
            return dist[i]
        for j in graph.next_index[i]:
            if int(j) not in dist:
                dist[int(j)] = dist[i] + 1
                queue.append(int(j))
    return None


def test_pruned_bfs_is_as_short_as_unpruned_search(suite):
    for task_type in TASK_TYPES:
        for index in range(230, 236):
            room = suite.make_env(task_type.task_id(index)).room
            assert len(solver.shortest_plan(room, room.start)) == unpruned_distance(room)
    dead = Room.from_text("#####\n#O_X#\n#P__#\n#####")
    assert solver.shortest_plan(dead, dead.start) is None  # box in a non-target corner


def test_every_test_room_is_solved_by_its_bfs_plan_within_max_steps(test_envs):
    assert len(test_envs) == 120
    for env in test_envs:
        env.reset(seed=0)
        plan = env.plan()
        assert plan is not None and 0 < len(plan) <= env.max_steps
        results = play(env, list(plan))
        assert results[-1].terminated and results[-1].info["won"]
        assert not any(r.terminated for r in results[:-1])
        assert results[-1].reward == pytest.approx(-0.1 + 1 + 10)


def test_oracle_wins_every_test_room_in_the_shortest_number_of_steps(test_envs):
    for env in test_envs:
        env.reset(seed=3)
        shortest = len(solver.shortest_plan(env.room, env.room.start))
        for steps in range(1, env.max_steps + 1):
            result = env.step(env.oracle_action())
            if result.terminated or result.truncated:
                break
        assert result.info["won"] and steps == shortest


# -- generation and suite ---------------------------------------------------------------------

def test_reverse_play_leaves_targets_uncovered_and_scores_positive():
    config = generator.GeneratorConfig(7, 7, 2)
    made = [generator.generate_room(config, make_rng("reverse-play", i)) for i in range(20)]
    rooms = [room for room in made if room is not None]
    assert len(rooms) >= 10
    for room in rooms:
        assert room.start.player not in room.targets
        assert not set(room.start.boxes) & set(room.targets)
        assert solver.shortest_plan(room, room.start)


def test_topology_is_enclosed_and_seeded():
    config = generator.GeneratorConfig(8, 8, 2)
    floor = generator.room_topology(config, make_rng("topology", 1))
    assert floor.shape == (8, 8) and floor.any()
    assert not floor[[0, -1], :].any() and not floor[:, [0, -1]].any()
    again = generator.room_topology(config, make_rng("topology", 1))
    assert np.array_equal(floor, again)


def test_generation_is_deterministic_per_task_id(suite):
    ids = ["6x6-b1-0003", "7x7-b2-0201", "8x8-b2-0255"]
    first = [suite.make_env(task_id).room for task_id in ids]
    room_for_task.cache_clear()
    second = [suite.make_env(task_id).room for task_id in ids]
    assert first == second
    assert len({suite.make_env(f"8x8-b2-{i:04d}").room for i in range(230, 260)}) == 30


def test_suite_tasks_build_fast_and_are_well_formed():
    start = time.perf_counter()
    suite = SokobanSuite()
    assert time.perf_counter() - start < 0.5
    assert suite.id == "sokoban@1" and suite.trivial_actions == {"no-op": "No-op"}
    assert suite.task_types() == sorted(["6x6-1box", "7x7-1box", "7x7-2box", "8x8-2box"])
    for split, size in (("train", 200), ("dev", 30), ("test", 30)):
        specs = suite.tasks(split)
        assert len(specs) == 4 * size
        for spec in specs:
            h, w, b, index = map(int, re.fullmatch(r"(\d)x(\d)-b(\d)-(\d{4})", spec.id).groups())
            assert spec.task_type == f"{h}x{w}-{b}box"
            assert spec.metadata == {"height": h, "width": w, "boxes": b, "index": index,
                                     "max_steps": MAX_STEPS}
    ids = {split: {s.id for s in suite.tasks(split)} for split in ("train", "dev", "test")}
    assert not (ids["train"] & ids["dev"] or ids["train"] & ids["test"] or ids["dev"] & ids["test"])
    with pytest.raises(UnknownNameError):
        suite.make_env("6x6-b1-9999")


def test_rooms_of_different_splits_never_coincide(suite, test_envs):
    assert all(split_of_room(env.room) == "test" for env in test_envs)
    train_6x6 = [suite.make_env(s.id).room for s in suite.tasks("train") if s.task_type == "6x6-1box"]
    assert all(split_of_room(room) == "train" for room in train_6x6)
    assert not set(train_6x6) & {env.room for env in test_envs}


@pytest.mark.parametrize("task_id", ["6x6-b1-0000", "7x7-b1-0230", "7x7-b2-0100", "8x8-b2-0259"])
def test_check_env_passes(suite, task_id):
    env = suite.make_env(task_id)
    check_env(env, seed=5)
    _, info = env.reset(seed=1)
    assert info["admissible_actions"] == list(ACTIONS)
    assert env.state_key() == grid(env)
