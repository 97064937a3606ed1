"""minesweeper@1: rules, exact solver (cross-checked by brute force), oracle, env contract."""

from __future__ import annotations

import itertools
import re
import time
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tasks import check_env, get_suite
from tasks.minesweeper import (
    UNOPENED,
    InconsistentBoardError,
    MinesweeperEnv,
    MinesweeperSuite,
    choose_cell,
    flood_open,
    mine_probabilities,
    parse_cell,
    place_mines,
    visible_board,
)
from tasks.minesweeper.game import adjacent_counts, neighbours

U = UNOPENED


def board_from(text: str) -> np.ndarray:
    """``"*.."`` rows separated by spaces -> ``(rows, cols)`` bool mines."""
    return np.array([[ch == "*" for ch in row] for row in text.split()], dtype=bool)


def opened_text(opened: np.ndarray) -> str:
    return " ".join("".join("o" if x else "-" for x in row) for row in opened)


def brute_force_probabilities(visible: np.ndarray, n_mines: int) -> np.ndarray:
    """Mine probability of every cell over all layouts of `n_mines` mines on the closed cells
    that reproduce every visible number. `visible`: ``(rows, cols)`` int. Returns
    ``(rows, cols)`` float; raises ValueError when no layout fits."""
    rows, cols = visible.shape
    closed = [(r, c) for r in range(rows) for c in range(cols) if visible[r, c] == U]
    shown = [(r, c) for r in range(rows) for c in range(cols) if visible[r, c] != U]
    adjacency = np.array([[cell in neighbours(*o, rows, cols) for o in shown] for cell in closed],
                         dtype=np.int64).reshape(len(closed), len(shown))
    target = np.array([visible[o] for o in shown], dtype=np.int64)
    combos = np.array(list(itertools.combinations(range(len(closed)), n_mines)), dtype=np.int64)
    layouts = np.zeros((len(combos), len(closed)), dtype=np.int64)
    layouts[np.arange(len(combos))[:, None], combos.reshape(len(combos), n_mines)] = 1
    good = layouts[(layouts @ adjacency == target).all(axis=1)]
    if len(good) == 0:
        raise ValueError("no layout fits")
    probs = np.zeros((rows, cols))
    for i, cell in enumerate(closed):
        probs[cell] = good[:, i].sum() / len(good)
    return probs


def random_visible(rng: np.random.Generator, rows: int, cols: int, n_mines: int) -> np.ndarray:
    """A random consistent visible board: random mines, a random subset of safe cells opened
    (not necessarily reachable by play, which makes the frontiers more varied)."""
    mines = np.zeros(rows * cols, dtype=bool)
    mines[rng.choice(rows * cols, n_mines, replace=False)] = True
    mines = mines.reshape(rows, cols)
    opened = ~mines & (rng.random((rows, cols)) < rng.uniform(0.2, 0.8))
    return visible_board(mines, opened)


def play(env: MinesweeperEnv, seed: int, policy) -> dict:
    _, info = env.reset(seed=seed)
    while True:
        result = env.step(policy(env, info))
        info = result.info
        if result.terminated or result.truncated:
            return info


def oracle(env, info):
    return env.oracle_action()


# -- rules ----------------------------------------------------------------------------------

def test_adjacent_counts_hand_computed():
    mines = board_from("*.. ... ..*")
    np.testing.assert_array_equal(adjacent_counts(mines), [[0, 1, 0], [1, 2, 1], [0, 1, 0]])


@pytest.mark.parametrize("layout, cell, expected", [
    # one mine in a corner: a zero floods the whole board except the mine
    ("...* .... ....", (2, 0), "ooo- oooo oooo"),
    # a wall of mines stops the flood at its numbered border
    ("..*. ..*. ..*. ..*.", (0, 0), "oo-- oo-- oo-- oo--"),
    # a numbered cell opens only itself
    ("..*. ..*. ..*. ..*.", (1, 1), "---- -o-- ---- ----"),
    # zeros all around one central mine open the ring of ones too
    ("..... ..... ..*.. ..... .....", (0, 4), "ooooo ooooo oo-oo ooooo ooooo"),
    # an L-shaped zero region along the bottom and the right edge, with its numbered border
    ("*.*.. .*... *.*.. ..... .....", (4, 4), "---oo ---oo ---oo ooooo ooooo"),
])
def test_flood_open_hand_built(layout, cell, expected):
    mines = board_from(layout)
    opened = flood_open(mines, np.zeros_like(mines), cell)
    assert opened_text(opened) == expected


def test_flood_open_refuses_a_mine():
    with pytest.raises(ValueError):
        flood_open(board_from("*. .."), np.zeros((2, 2), bool), (0, 0))


def test_place_mines_avoids_the_first_cell_and_its_neighbours():
    rng = np.random.default_rng(1)
    for _ in range(300):
        first = (int(rng.integers(6)), int(rng.integers(6)))
        mines = place_mines(6, 6, 12, first, rng)
        assert mines.sum() == 12
        assert not mines[first] and not any(mines[nb] for nb in neighbours(*first, 6, 6))
    with pytest.raises(ValueError):
        place_mines(3, 3, 1, (1, 1), rng)


def test_place_mines_is_uniform_over_allowed_layouts():
    # 2x4, first click (0, 0): the 4 cells of columns 2-3 hold 2 mines, 6 layouts of 1/6 each
    rng = np.random.default_rng(2)
    n = 6000
    seen: dict[bytes, int] = {}
    for _ in range(n):
        key = place_mines(2, 4, 2, (0, 0), rng).tobytes()
        seen[key] = seen.get(key, 0) + 1
    assert len(seen) == 6
    sigma = np.sqrt(n * (1 / 6) * (5 / 6))
    assert all(abs(count - n / 6) < 5 * sigma for count in seen.values())


# -- solver ---------------------------------------------------------------------------------

def test_probabilities_one_two_one_pattern():
    # bottom row shows 1 2 1: the middle row is forced (mine, safe, mine); the 3rd mine is
    # anywhere in the top row
    visible = np.array([[U, U, U], [U, U, U], [1, 2, 1]])
    expected = np.array([[1 / 3] * 3, [1, 0, 1], [0, 0, 0]])
    np.testing.assert_allclose(mine_probabilities(visible, 3), expected, rtol=0, atol=1e-12)
    np.testing.assert_allclose(brute_force_probabilities(visible, 3), expected, atol=1e-12)


def test_probabilities_weight_frontier_solutions_by_the_global_count():
    # 1x8: cells 1 and 3 show 1. Frontier {0, 2, 4}: either {2} (one mine) or {0, 4} (two);
    # interior {5, 6, 7}. With 2 mines: {2} + one of 3 interior cells = 3 layouts, {0, 4} = 1.
    # A frontier-only count would say 1/2 for cell 2; the exact answer is 3/4.
    visible = np.array([[U, 1, U, 1, U, U, U, U]])
    expected = np.array([[1 / 4, 0, 3 / 4, 0, 1 / 4, 1 / 4, 1 / 4, 1 / 4]])
    np.testing.assert_allclose(mine_probabilities(visible, 2), expected, rtol=0, atol=1e-12)
    np.testing.assert_allclose(brute_force_probabilities(visible, 2), expected, atol=1e-12)
    only_middle = np.array([[0, 0, 1, 0, 0, 0, 0, 0]])
    np.testing.assert_allclose(mine_probabilities(visible, 1), only_middle, atol=1e-12)
    assert choose_cell(visible, 2) == (0, 0)  # ties at 1/4 broken by row-major order
    assert choose_cell(visible, 1) == (0, 0)  # provably safe, first in row-major order


@pytest.mark.parametrize("rows, cols, n_mines", [(4, 4, 3), (4, 5, 5), (5, 5, 3), (3, 6, 4)])
def test_probabilities_match_brute_force_on_random_boards(rows, cols, n_mines):
    rng = np.random.default_rng(rows * 100 + cols * 10 + n_mines)
    for _ in range(40):
        visible = random_visible(rng, rows, cols, n_mines)
        np.testing.assert_allclose(mine_probabilities(visible, n_mines),
                                   brute_force_probabilities(visible, n_mines),
                                   rtol=0, atol=1e-12)


@pytest.mark.parametrize("visible, n_mines", [
    (np.array([[U, 2, U]]), 1),        # needs two mines, only one exists
    (np.array([[U, 3, U]]), 3),        # more mines shown than closed neighbours
    (np.array([[U, 0, U, U]]), 3),     # the only place left holds one mine
    (np.array([[1, U, 0]]), 1),        # two numbers contradict each other
])
def test_inconsistent_boards_raise(visible, n_mines):
    with pytest.raises(InconsistentBoardError):
        mine_probabilities(visible, n_mines)


def test_oracle_opens_the_centre_first():
    env = MinesweeperEnv("t", 5, 7, 4)
    env.reset(seed=0)
    assert env.oracle_action() == "[2 3]"


@pytest.mark.parametrize("rows, cols, n_mines", [(5, 5, 3), (4, 5, 4), (4, 4, 4)])
def test_oracle_is_safe_when_it_can_be_and_otherwise_minimises_risk(rows, cols, n_mines):
    """Against brute force at every step: a provably safe cell exists => the oracle opens one;
    always, the oracle's cell has the lowest mine probability."""
    env = MinesweeperEnv("oracle-check", rows, cols, n_mines)
    forced = 0
    for seed in range(25):
        env.reset(seed=seed)
        env.step(env.oracle_action())
        while not (env.state.lost or env.state.won):
            probs = brute_force_probabilities(env.state.visible(), n_mines)
            closed = env.state.visible() == U
            r, c = parse_cell(env.oracle_action())
            assert probs[r, c] == pytest.approx(probs[closed].min(), abs=1e-12)
            if (probs[closed] == 0).any():
                forced += 1
                assert probs[r, c] == 0
                assert not env.state.mines[r, c]
            env.step(f"[{r} {c}]")
    assert forced > 25  # the check did run on many positions with a safe move


def test_oracle_wins_far_more_often_than_random_on_the_test_split():
    suite = get_suite("minesweeper")

    def random_policy(rng):
        return lambda env, info: info["admissible_actions"][
            int(rng.integers(len(info["admissible_actions"])))]

    for task_type in suite.task_types():
        specs = [s for s in suite.tasks("test") if s.task_type == task_type]
        rng = np.random.default_rng(0)
        oracle_wins = [play(suite.make_env(s.id), 0, oracle)["won"] for s in specs]
        random_wins = [play(suite.make_env(s.id), 0, random_policy(rng))["won"] for s in specs]
        assert np.mean(oracle_wins) >= 0.8, task_type
        assert np.mean(oracle_wins) >= np.mean(random_wins) + 0.4, task_type


def test_oracle_episode_is_fast():
    env = get_suite("minesweeper").make_env("8x8-10-0250")
    start = time.perf_counter()
    for seed in range(10):
        play(env, seed, oracle)
    assert (time.perf_counter() - start) / 10 < 0.5


# -- env ------------------------------------------------------------------------------------

def test_first_move_is_always_safe_and_opens_a_zero():
    suite = get_suite("minesweeper")
    rng = np.random.default_rng(3)
    for task_type in suite.task_types():
        env = suite.make_env(f"{task_type}-0000")
        for seed in range(100):
            env.reset(seed=seed)
            r, c = int(rng.integers(env.rows)), int(rng.integers(env.cols))
            result = env.step(f"[{r} {c}]")
            assert not env.state.lost and result.info["invalid"] is False
            assert env.state.visible()[r, c] == 0
            assert env.state.mines.sum() == env.n_mines


def test_layout_depends_on_seed_and_task_and_is_deterministic():
    suite = get_suite("minesweeper")

    def layout(task_id: str, seed: int) -> bytes:
        env = suite.make_env(task_id)
        env.reset(seed=seed)
        env.step("[3 3]")
        return env.state.mines.tobytes()

    assert layout("8x8-10-0003", 5) == layout("8x8-10-0003", 5)
    assert len({layout("8x8-10-0003", seed) for seed in range(10)}) == 10
    assert len({layout(f"8x8-10-{i:04d}", 5) for i in range(10)}) == 10


def test_step_rewards_score_and_rendering_after_a_loss():
    env = MinesweeperEnv("t", 4, 4, 3)
    env.reset(seed=0)
    first = env.step("[0 0]")
    safe_open = int(env.state.opened.sum())
    assert first.reward == 0.0 and first.info["score"] == pytest.approx(safe_open / 13)
    assert len(first.info["admissible_actions"]) == 16 - safe_open
    assert env.step("0,0").info["invalid"]  # already open
    assert env.step("[4 0]").info["invalid"]  # out of range
    mine = tuple(int(x) for x in np.argwhere(env.state.mines)[0])
    lost = env.step(f"({mine[0]}, {mine[1]})")
    assert lost.terminated and not lost.truncated and lost.reward == 0.0
    assert lost.info["won"] is False and lost.info["admissible_actions"] == []
    assert lost.info["score"] == pytest.approx(safe_open / 13)
    grid = lost.observation.splitlines()[2:7]
    assert grid[0] == "  0 1 2 3"
    row = grid[1 + mine[0]].split()
    assert row[0] == str(mine[0]) and row[1 + mine[1]] == "X"
    assert sum(line.count("*") for line in grid) == 2
    assert "Game over" in lost.observation


def test_winning_pays_one_and_max_steps_is_safe_cells_plus_slack():
    env = get_suite("minesweeper").make_env("6x6-5-0010")
    assert env.max_steps == 36 - 5 + 10
    for seed in range(20):
        env.reset(seed=seed)
        rewards = []
        while not (env.state.lost or env.state.won):
            rewards.append(env.step(env.oracle_action()).reward)
        if env.state.won:
            assert rewards[-1] == 1.0 and sum(rewards) == 1.0
            assert "You win" in env.render()
            return
    pytest.fail("the oracle never won")


def test_render_uses_dots_digits_and_question_marks():
    env = MinesweeperEnv("t", 3, 4, 1)
    env.reset(seed=0)
    assert '"[row col]"' in env.render().splitlines()[-1]
    mines = board_from("...* .... ....")
    env.state = replace(env.state, mines=mines, opened=flood_open(mines, np.zeros_like(mines),
                                                                  (2, 0)))
    lines = env.render().splitlines()
    assert lines[2:6] == ["  0 1 2 3", "0 . . 1 ?", "1 . . 1 1", "2 . . . ."]
    assert lines[-1] == "Every safe cell is open. You win!"
    assert env.won() and env.admissible_actions() == []


@pytest.mark.parametrize("task_id, seed", [("5x5-3-0000", 0), ("6x6-5-0201", 3),
                                           ("8x8-10-0299", 11)])
def test_check_env_passes(task_id, seed):
    check_env(get_suite("minesweeper").make_env(task_id), seed=seed)


def test_state_key_is_unchanged_by_invalid_actions_and_tracks_opening():
    env = get_suite("minesweeper").make_env("6x6-5-0000")
    env.reset(seed=1)
    key = env.state_key()
    env.step("nonsense")
    assert env.state_key() == key
    env.step("[2 2]")
    assert env.state_key() != key


def test_suite_splits_and_ids():
    suite = MinesweeperSuite()
    assert suite.id == "minesweeper@1" and suite.task_types() == ["5x5-3", "6x6-5", "8x8-10"]
    for split, size in [("train", 200), ("dev", 50), ("test", 50)]:
        assert len(suite.tasks(split)) == 3 * size
    ids = [s.id for s in suite.tasks()]
    assert all(re.fullmatch(r"\d+x\d+-\d+-\d{4}", i) for i in ids) and len(set(ids)) == 900
    spec = suite.task("6x6-5-0012")
    assert spec.split == "train" and dict(spec.metadata) == {"rows": 6, "cols": 6, "mines": 5,
                                                             "index": 12}
    assert suite.task("8x8-10-0250").split == "test"


# -- action parser --------------------------------------------------------------------------

@given(st.text())
@settings(max_examples=300, deadline=None)
def test_parser_never_crashes(text):
    cell = parse_cell(text)
    assert cell is None or (isinstance(cell, tuple) and all(isinstance(x, int) for x in cell))


@given(row=st.integers(0, 9999), col=st.integers(0, 9999),
       sep=st.sampled_from([" ", ",", ", ", " , ", "  ", "\t", " ,"]),
       brackets=st.sampled_from([("[", "]"), ("(", ")"), ("", ""), ("[ ", " ]")]),
       pad=st.sampled_from(["", " ", "\n", "  \t"]))
@settings(max_examples=300, deadline=None)
def test_parser_reads_valid_formats(row, col, sep, brackets, pad):
    text = f"{pad}{brackets[0]}{row}{sep}{col}{brackets[1]}{pad}"
    assert parse_cell(text) == (row, col)


@pytest.mark.parametrize("text", ["", "[2]", "23", "[2 3 4]", "open 2 3", "[-1 2]", "[a b]",
                                  "[2;3]", "[1.5 2]"])
def test_parser_rejects_other_text(text):
    assert parse_cell(text) is None


@given(st.text(max_size=20))
@settings(max_examples=100, deadline=None)
def test_env_step_never_crashes_on_random_text(text):
    env = get_suite("minesweeper").make_env("5x5-3-0001")
    env.reset(seed=0)
    key = env.state_key()
    result = env.step(text)
    if result.info["invalid"]:
        assert env.state_key() == key
    else:
        assert parse_cell(text) is not None
