"""The engine wrapper: memoised internals equal the stock engine, exact snapshots, shortest
plans, exact Q-values."""

from __future__ import annotations

import ctypes
import json

import numpy as np
import pytest

from tasks.alfworld import speedups
from tasks.alfworld.engine import Engine
from tasks.alfworld.env import GAMMA, AlfworldEnv


def _game_files(small_set, task_type):
    root, report = small_set
    return [root / g.path / "game.tw-pddl" for g in report.games if g.task_type == task_type]


def _walk(engine: Engine, rng, n_steps: int) -> list[str]:
    """Commands of a random walk (one invalid command among them), played on `engine`."""
    commands = []
    for t in range(n_steps):
        command = "put the moon in the fridge" if t == 3 else rng.choice(engine.admissible)
        commands.append(command)
        engine.step(command)
        if engine.won:
            break
    return commands


def _stock_trace(game_file, commands):
    speedups.uninstall()
    try:
        import textworld
        from alfworld.agents.environment.alfred_tw_env import AlfredDemangler, AlfredInfos
        from textworld.envs import PddlEnv

        assert not speedups.installed()
        infos = textworld.EnvInfos(won=True, admissible_commands=True, extras=["gamefile"])
        env = AlfredInfos(AlfredDemangler(shuffle=False)(PddlEnv(infos)))
        env.load(str(game_file))
        state = env.reset()
        trace = [(state.feedback, state["admissible_commands"], state["won"])]
        for command in commands:
            state, _, _ = env.step(command)
            trace.append((state.feedback, state["admissible_commands"], state["won"]))
        return trace
    finally:
        speedups.install()


@pytest.mark.parametrize("task_type", ["look_at_obj_in_light", "pick_heat_then_place_in_recep"])
def test_memoised_engine_reproduces_the_stock_engine(small_set, task_type):
    game_file = _game_files(small_set, task_type)[0]
    walker = Engine(game_file)
    commands = _walk(walker, np.random.default_rng(5), 12)
    commands += list(json.loads(game_file.read_text())["walkthrough"])
    fast = Engine(game_file)
    trace = [(fast.feedback, fast.admissible, fast.won)]
    for command in commands:
        fast.step(command)
        trace.append((fast.feedback, fast.admissible, fast.won))
        if fast.won:
            break
    stock = _stock_trace(game_file, commands[:len(trace) - 1])
    assert trace == stock
    assert trace[4][0] == "Nothing happens."


def test_snapshot_restore_and_reset_are_exact(small_set):
    game_file = _game_files(small_set, "pick_clean_then_place_in_recep")[0]
    engine = Engine(game_file)
    first = (engine.feedback, engine.admissible, engine.state_key())
    rng = np.random.default_rng(2)
    _walk(engine, rng, 4)
    snap = engine.snapshot()
    key = engine.state_key()
    continuation = [rng.choice(engine.admissible) for _ in range(1)]

    def play():
        out = []
        for command in continuation + ["look", "inventory"]:
            engine.step(command)
            out.append((engine.feedback, engine.admissible, engine.state_key()))
        return out

    once = play()
    engine.restore(snap)
    assert engine.state_key() == key
    assert play() == once
    engine.reset()
    assert (engine.feedback, engine.admissible, engine.state_key()) == first
    with pytest.raises(ValueError, match="engine that took it"):
        Engine(game_file).restore(snap)


def _full_problem_plan_length(engine: Engine) -> int:
    """Plan length from the current state on the whole (unpruned) task, stock translation."""
    _, sas = speedups._raw_translate(engine.domain, engine.problem, False, True)
    lib = engine._lib
    lib.load_sas_replan(sas.encode())
    try:
        assert lib.replan(False)
        return lib.get_last_plan_length()
    finally:
        lib.load_sas_replan(engine._replan_sas.encode())


@pytest.mark.slow
def test_pruned_replanning_gives_the_full_tasks_optimal_length(small_set):
    """Relevance pruning keeps the optimal plan length: checked against the whole task from
    the start, after a random walk and while holding an object the goal does not name."""
    game_file = _game_files(small_set, "pick_and_place_simple")[0]
    engine = Engine(game_file)
    assert len(engine.plan()) == _full_problem_plan_length(engine)
    _walk(engine, np.random.default_rng(11), 3)
    assert len(engine.plan()) == _full_problem_plan_length(engine)
    for command in engine.admissible:
        if command.startswith("take "):
            engine.step(command)
            break
    assert len(engine.plan()) == _full_problem_plan_length(engine)


def test_plans_are_shortest_and_q_values_exact(small_set):
    game_file = _game_files(small_set, "pick_two_obj_and_place")[0]
    env = AlfworldEnv(game_file)
    env.reset(seed=0)
    length = len(env.engine.plan())
    while True:
        q = env.q_values()
        info = env._info(False)
        assert set(q) == set(info["admissible_actions"])
        best = env.oracle_action()
        assert q[best] == pytest.approx(max(q.values()))
        assert q[best] == pytest.approx(GAMMA ** (length - 1))
        assert all(value <= q[best] + 1e-12 for value in q.values())
        # the C-level successor lengths agree with really stepping there
        other = sorted(q)[0]
        snap = env.snapshot()
        env.step(other)
        plan = env.engine.plan()
        assert q[other] == pytest.approx(0.0 if plan is None else GAMMA ** len(plan))
        env.restore(snap)
        result = env.step(best)
        length -= 1
        assert len(env.engine.plan()) == length
        if result.terminated:
            assert q[best] == 1.0 and result.reward == 1.0 and length == 0
            break


def test_state_ids_survive_unrelated_engines(small_set):
    """Each engine owns its library copy: stepping one does not move another."""
    files = _game_files(small_set, "pick_cool_then_place_in_recep")
    a, b = Engine(files[0]), Engine(files[-1])
    before = (b.feedback, b.state_key(), b._lib.get_state_id())
    _walk(a, np.random.default_rng(0), 5)
    assert (b.feedback, b.state_key(), b._lib.get_state_id()) == before
    assert isinstance(ctypes.c_int(a._lib.get_state_id()).value, int)
