"""frozenlake-random@1: map constraints, splits, the Env contract, the oracle."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tasks import check_env
from tasks.frozenlake import ACTIONS, solve
from tasks.frozenlake_random import (MAX_PATH, MAX_STEPS, MIN_PATH, N_HOLES, SPLIT_SIZES,
                                     RandomFrozenLakeEnv, RandomFrozenLakeSuite,
                                     distance_class, generate_random_map, path_length)


@pytest.fixture(scope="module")
def suite():
    return RandomFrozenLakeSuite()


def test_path_length_hand_cases():
    assert path_length(("SFFG", "FFFF", "FFFF", "FFFF")) == 3
    assert path_length(("SHFG", "FHFF", "FFFF", "FFFF")) == 7  # around the wall of holes
    assert path_length(("SHFF", "HFFF", "FFFF", "FFFG")) is None
    assert path_length(("FFFF", "FGFF", "FFFF", "FFFS")) == 4  # start anywhere


@settings(max_examples=50, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_generated_maps_meet_the_constraints(seed):
    rows = generate_random_map(np.random.default_rng(seed))
    counts = Counter("".join(rows))
    assert (counts["S"], counts["G"], counts["H"], counts["F"]) == (1, 1, N_HOLES, 11)
    assert MIN_PATH <= path_length(rows) <= MAX_PATH


def test_splits_are_disjoint_distinct_and_sized(suite):
    maps = [t.metadata["rows"] for t in suite.tasks()]
    assert len(set(maps)) == len(maps) == sum(SPLIT_SIZES.values())
    for split, size in SPLIT_SIZES.items():
        assert len(suite.tasks(split)) == size
    for task in suite.tasks("test")[:50]:
        assert task.task_type == distance_class(task.metadata["shortest_path"])
    assert {t.task_type for t in suite.tasks("test")} == {"near", "mid", "far"}


def test_held_out_maps_do_not_change_when_train_grows(suite):
    first_test = suite.tasks("test")[0]
    assert first_test.id == "4x4-05500"
    # drawn from its own id's RNG, test first: a fixed, known map
    assert first_test.metadata["rows"] == RandomFrozenLakeSuite().task(first_test.id).metadata[
        "rows"]


def test_env_contract_and_start_tile(suite):
    for task in (suite.tasks("train")[0], suite.tasks("test")[3]):
        env = suite.make_env(task.id)
        check_env(env)
        obs, info = env.reset(seed=0)
        start = task.metadata["start"]
        assert obs.splitlines()[start // 4][start % 4] == "P"
        assert env.max_steps == MAX_STEPS and "Actions: Left, Down, Right, Up" in obs


def test_oracle_reaches_the_goal_in_the_shortest_path(suite):
    for task in suite.tasks("dev")[:100]:
        env = suite.make_env(task.id)
        env.reset(seed=0)
        steps, result = 0, None
        while result is None or not (result.terminated or result.truncated):
            result = env.step(env.oracle_action())
            steps += 1
        assert result.info["won"] and steps == task.metadata["shortest_path"]


def test_q_values_are_exact_from_the_random_start():
    env = RandomFrozenLakeEnv(("FFFF", "FGFF", "FFFF", "FFFS"))
    env.reset(seed=0)
    q = env.q_values()
    assert q["Up"] == pytest.approx(0.99**3) and q["Left"] == pytest.approx(0.99**3)
    assert q["Down"] == pytest.approx(0.99**4)  # wall: stay, one step lost
    assert set(q) == set(ACTIONS)
    assert solve(env.desc, False)[3].shape == (16, 4)


def test_the_maps_are_pinned():
    """Every map of frozenlake@1 (4x4, 8x8) and frozenlake-random@1, hashed: a change to how
    maps are drawn changes the tasks, so it needs a new suite version, not a silent edit.
    Digests computed on 2026-12-07, equal before and after the drawing moved into
    `tasks.frozenlake.draw_distinct_maps`."""
    import hashlib
    import json

    from tasks import frozenlake, frozenlake_random

    def digest(maps):
        return hashlib.sha256(json.dumps(maps, sort_keys=True).encode()).hexdigest()

    assert digest(frozenlake._suite_maps(4)).startswith("58a68d7adcea9270")
    assert digest(frozenlake._suite_maps(8)).startswith("640618085ccc642a")
    assert digest(frozenlake_random._suite_maps()).startswith("203b38b1e1de38b4")
