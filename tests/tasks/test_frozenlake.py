"""FrozenLake: hand-computed Q values, Bellman optimality, Gymnasium parity, oracle, text."""

from __future__ import annotations

import re
import time

import numpy as np
import pytest
from gymnasium.envs.toy_text import frozen_lake
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.core import UnknownNameError
from tasks import check_env, get_suite
from tasks.frozenlake import (
    ACTIONS, GAMMA, MAX_STEPS, FrozenLakeEnv, FrozenLakeSuite, SlipperyFrozenLakeSuite,
    _suite_maps, generate_map, parse_action, render_map, shortest_path, solve,
    transition_model, value_iteration,
)

GYM_4X4 = ("SFFF", "FHFH", "FFFH", "HFFG")
SUITES = ("frozenlake", "frozenlake-slippery")


def all_maps(size: int | None = None) -> list[tuple[str, ...]]:
    sizes = (4, 8) if size is None else (size,)
    return [rows for s in sizes for _, rows in _suite_maps(s).values()]


def greedy_policy(q: np.ndarray) -> np.ndarray:
    """One-hot policy of shape (n_states, 4), first maximiser within 1e-12."""
    best = np.argmax(q >= q.max(axis=1, keepdims=True) - 1e-12, axis=1)
    return np.eye(4)[best]


def success_within(P: np.ndarray, policy: np.ndarray, goal: int, n_steps: int) -> float:
    """Exact probability of standing on `goal` after `n_steps` (terminal states absorb)."""
    dist = np.zeros(P.shape[0])
    dist[0] = 1.0
    step = np.einsum("sa,san->sn", policy, P)
    for _ in range(n_steps):
        dist = dist @ step
    return float(dist[goal])


# -- hand-computed cases ------------------------------------------------------------------------

def test_hand_computed_deterministic_q():
    _, _, terminal, q = solve(GYM_4X4, False)
    left, down, right, up = range(4)
    assert q[14, right] == pytest.approx(1.0, abs=1e-12)          # one step from G
    assert q[10, down] == pytest.approx(GAMMA, abs=1e-12)         # two steps
    assert q[14, up] == pytest.approx(GAMMA**2, abs=1e-12)        # up to 10, then 2 more
    assert q[0, down] == pytest.approx(GAMMA**5, abs=1e-12)       # shortest path: 6 moves
    assert q[0, right] == pytest.approx(GAMMA**5, abs=1e-12)
    assert q[0, left] == pytest.approx(GAMMA**6, abs=1e-12)       # wall: stay, lose one step
    assert q[1, down] == 0.0 and q[3, down] == 0.0                # into a hole
    assert np.all(q[terminal] == 0.0)
    assert terminal.nonzero()[0].tolist() == [5, 7, 11, 12, 15]


def test_hand_computed_slippery_corridor():
    # S G: Right, Up and Down each reach G w.p. 1/3 and stay otherwise; Left never does.
    P, R, terminal = transition_model(("SG",), slippery=True)
    q = value_iteration(P, R, terminal, GAMMA)
    v = 1.0 / (3.0 - 2.0 * GAMMA)                                 # v = 1/3 + 2/3 gamma v
    np.testing.assert_allclose(q[0], [GAMMA * v, v, v, v], atol=1e-10)
    np.testing.assert_allclose(P[0, 2], [2 / 3, 1 / 3], atol=1e-15)
    assert R[0, 2].tolist() == [0.0, 1.0] and terminal.tolist() == [False, True]


# -- Bellman optimality and an independent policy evaluation -----------------------------------

@pytest.mark.parametrize("slippery", [False, True])
@pytest.mark.parametrize("size", [4, 8])
def test_bellman_optimality_every_map(size, slippery):
    solved = [solve(rows, slippery) for rows in all_maps(size)]
    P, R, terminal, q = (np.stack(parts) for parts in zip(*solved))  # (n_maps, n_states, ...)
    value = q.max(axis=2) * ~terminal                                 # (n_maps, n_states)
    target = np.einsum("msan,msan->msa", P, R + GAMMA * value[:, None, None, :])
    np.testing.assert_allclose(q, target, rtol=0, atol=1e-9)
    np.testing.assert_allclose(P.sum(axis=3), 1.0, atol=1e-12)
    assert np.all(q.max(axis=2)[:, 0] > 0)                            # every map solvable


@pytest.mark.parametrize("slippery", [False, True])
def test_q_equals_linear_solve_of_greedy_policy(slippery):
    for rows in all_maps()[::37]:
        P, R, terminal, q = solve(rows, slippery)
        policy = greedy_policy(q)
        alive = ~terminal
        step = np.einsum("sa,san->sn", policy, P)[np.ix_(alive, alive)]
        reward = np.einsum("sa,san,san->s", policy, P, R)[alive]
        v = np.linalg.solve(np.eye(alive.sum()) - GAMMA * step, reward)
        np.testing.assert_allclose(q.max(axis=1)[alive], v, atol=1e-9)


# -- parity with Gymnasium ------------------------------------------------------------------------

@pytest.mark.parametrize("slippery", [False, True])
def test_transition_model_matches_gymnasium(slippery):
    maps = [GYM_4X4, tuple(frozen_lake.MAPS["8x8"]), ("SG",), *all_maps()[::23]]
    for rows in maps:
        P, R, terminal = transition_model(rows, slippery)
        gym = frozen_lake.FrozenLakeEnv(desc=list(rows), is_slippery=slippery).unwrapped
        for s, by_action in gym.P.items():
            for a, outcomes in by_action.items():
                prob = np.zeros(P.shape[2])
                for p, s_next, reward, done in outcomes:
                    prob[s_next] += p
                    assert R[s, a, s_next] == reward, (rows, s, a, s_next)
                    assert terminal[s_next] == done
                np.testing.assert_allclose(P[s, a], prob, rtol=0, atol=1e-12)
        assert R[P == 0].max() == 0.0


def test_generated_maps_are_valid_for_gymnasium():
    for rows in all_maps():
        board = [list(row) for row in rows]
        assert frozen_lake.is_valid(board, len(rows))
        assert shortest_path(rows) is not None


# -- env dynamics match the model -----------------------------------------------------------------

def test_deterministic_env_steps_follow_model():
    rows = _suite_maps(8)["8x8-0003"][1]
    P, R, terminal, _ = solve(rows, False)
    env = FrozenLakeEnv(rows, slippery=False, max_steps=100)
    for s in np.flatnonzero(~terminal):
        for a, action in enumerate(ACTIONS):
            env.reset(seed=0)
            env.state = int(s)
            result = env.step(action)
            assert P[s, a, env.state] == 1.0
            assert result.reward == R[s, a, env.state]
            assert result.terminated == terminal[env.state]


def test_slippery_env_frequencies_follow_model():
    rows = GYM_4X4
    P = solve(rows, True)[0]
    env = FrozenLakeEnv(rows, slippery=True, max_steps=100)
    for a, action in enumerate(ACTIONS):
        counts = np.zeros(16)
        for seed in range(3000):
            env.reset(seed=seed)
            env.state = 6
            env.step(action)
            counts[env.state] += 1
        # 3000 draws: standard error of each frequency <= 0.0091; allow 5 of them
        np.testing.assert_allclose(counts / 3000, P[6, a], atol=0.046)


# -- oracle ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("size", [4, 8])
def test_oracle_solves_every_deterministic_test_map_by_a_shortest_path(size):
    suite = get_suite("frozenlake")
    tasks = [t for t in suite.tasks("test") if t.metadata["size"] == size]
    assert len(tasks) == 50
    for task in tasks:
        env = suite.make_env(task.id)
        env.reset(seed=0)
        for n in range(1, env.max_steps + 1):
            result = env.step(env.oracle_action())
            if result.terminated or result.truncated:
                break
        assert result.info["won"] and result.info["score"] == 1.0 and result.reward == 1.0
        assert n == task.metadata["shortest_path"] <= MAX_STEPS[size, False]


@pytest.mark.parametrize("size", [4, 8])
def test_oracle_on_slippery_maps_beats_random_and_matches_exact_success(size):
    suite = get_suite("frozenlake-slippery")
    tasks = [t for t in suite.tasks("test") if t.metadata["size"] == size]
    wins, exact_oracle, exact_random = [], [], []
    for i, task in enumerate(tasks):
        env = suite.make_env(task.id)
        P, _, _, q = solve(task.metadata["rows"], True)
        goal = P.shape[0] - 1
        exact_oracle.append(success_within(P, greedy_policy(q), goal, env.max_steps))
        exact_random.append(success_within(P, np.full((P.shape[0], 4), 0.25), goal, env.max_steps))
        for seed in range(4):
            env.reset(seed=1000 * i + seed)
            while True:
                result = env.step(env.oracle_action())
                if result.terminated or result.truncated:
                    break
            wins.append(result.info["won"])
    assert np.mean(exact_oracle) > np.mean(exact_random) + 0.3
    # 200 episodes: standard error <= 0.036; fixed seeds make this exact, 4 s.e. is the margin
    assert abs(np.mean(wins) - np.mean(exact_oracle)) < 0.14
    assert np.mean(wins) > np.mean(exact_random) + 0.2


# -- maps and suites ------------------------------------------------------------------------------

def test_suites_list_splits_ids_and_metadata():
    for name, slippery in (("frozenlake", False), ("frozenlake-slippery", True)):
        suite = get_suite(name)
        assert suite.id == f"{name}@1" and suite.task_types() == ["4x4", "8x8"]
        counts = {split: len(suite.tasks(split)) for split in ("train", "dev", "test")}
        assert counts == {"train": 400, "dev": 100, "test": 100}
        for task in suite.tasks():
            size = task.metadata["size"]
            index = int(re.fullmatch(rf"{size}x{size}-(\d{{4}})", task.id).group(1))
            expected = "train" if index < 200 else "dev" if index < 250 else "test"
            assert task.split == expected and task.task_type == f"{size}x{size}"
            assert task.metadata["slippery"] is slippery
            assert task.metadata["max_steps"] == MAX_STEPS[size, slippery]
            assert len(task.metadata["rows"]) == size
        with pytest.raises(UnknownNameError):
            suite.make_env("4x4-0300")


def test_maps_are_solvable_deterministic_and_distinct():
    for size in (4, 8):
        maps = _suite_maps(size)
        assert _suite_maps.__wrapped__(size) == maps                     # rebuilt from ids alone
        rows = [r for _, r in maps.values()]
        assert len(set(rows)) == len(rows) == 300
        for r in rows:
            assert r[0][0] == "S" and r[-1][-1] == "G" and set("".join(r)) <= set("SFHG")
            assert "".join(r).count("S") == 1 and "".join(r).count("G") == 1
            assert shortest_path(r) is not None
    assert get_suite("frozenlake").task("8x8-0012").metadata["rows"] == \
        get_suite("frozenlake-slippery").task("8x8-0012").metadata["rows"]
    holes = np.mean(["".join(r).count("H") / 62 for r in all_maps(8)])
    assert 0.12 < holes < 0.25                                          # ~p=0.8 frozen, solvable


def test_generate_map_uses_only_the_given_rng():
    a = generate_map(8, np.random.default_rng(5))
    np.random.seed(0)
    b = generate_map(8, np.random.default_rng(5))
    assert a == b and generate_map(8, np.random.default_rng(6)) != a


def test_building_the_suites_is_fast():
    start = time.perf_counter()
    _suite_maps.__wrapped__(4), _suite_maps.__wrapped__(8)
    FrozenLakeSuite(), SlipperyFrozenLakeSuite()
    assert time.perf_counter() - start < 1.0


# -- text -----------------------------------------------------------------------------------------

def test_render_symbols_and_terminal_markers():
    env = FrozenLakeEnv(GYM_4X4, slippery=False, max_steps=30)
    obs, info = env.reset(seed=0)
    assert obs == "P___\n_O_O\n___O\nO__G\nActions: Left, Down, Right, Up"
    assert info["admissible_actions"] == list(ACTIONS) and not info["won"]
    result = env.step("Right")
    assert result.observation.splitlines()[0] == "_P__" and not result.terminated
    result = env.step(" down ")
    assert result.observation.splitlines()[1] == "_X_O"
    assert result.terminated and result.reward == 0.0 and result.info["score"] == 0.0

    env.reset(seed=0)
    for action in ["Down", "Down", "Right", "Right", "Down", "Right"]:
        result = env.step(action)
    assert result.observation.splitlines()[3] == "O__√"
    assert result.terminated and result.reward == 1.0 and result.info["won"]
    assert render_map(GYM_4X4, 12).splitlines()[3] == "X__G"


def test_invalid_action_leaves_state_unchanged():
    env = FrozenLakeEnv(GYM_4X4, slippery=True, max_steps=100)
    env.reset(seed=3)
    env.step("Right")
    key, grid = env.state_key(), render_map(GYM_4X4, env.state)
    for text in ["1", "left!", "go Left", "", "Leftt", "ＬＥＦＴ"]:
        result = env.step(text)
        assert result.info["invalid"] and env.state_key() == key and result.reward == 0.0
        assert grid in result.observation and not result.terminated


def test_q_values_and_oracle_interface():
    env = FrozenLakeEnv(GYM_4X4, slippery=False, max_steps=30)
    env.reset(seed=0)
    q = env.q_values()
    assert list(q) == list(ACTIONS)
    assert q["Down"] == q["Right"] and env.oracle_action() == "Down"    # tie -> action order
    assert env.state_key() == "0,0"


@pytest.mark.parametrize("name", SUITES)
@pytest.mark.parametrize("task_id", ["4x4-0000", "4x4-0299", "8x8-0123", "8x8-0250"])
def test_check_env(name, task_id):
    check_env(get_suite(name).make_env(task_id), seed=7)


# -- action parser --------------------------------------------------------------------------------

@settings(max_examples=300, deadline=None)
@given(st.text())
def test_parser_never_crashes_and_accepts_only_the_four_words(text):
    move = parse_action(text)
    stripped = text.strip()
    if stripped.isascii() and stripped.lower() in {"left", "down", "right", "up"}:
        assert move == ["left", "down", "right", "up"].index(stripped.lower())
    else:
        assert move is None


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(ACTIONS), st.data(),
       st.text(alphabet=" \t\n\r\x0b\x0c\u00a0\u2003"), st.text(alphabet=" \t\n\r"))
def test_parser_accepts_any_case_and_surrounding_whitespace(word, data, before, after):
    flips = data.draw(st.lists(st.booleans(), min_size=len(word), max_size=len(word)))
    cased = "".join(c.upper() if f else c.lower() for c, f in zip(word, flips))
    assert parse_action(before + cased + after) == ACTIONS.index(word)
    assert parse_action(before + cased + "x" + after) is None
    assert parse_action(cased[:1] + " " + cased[1:]) is None
