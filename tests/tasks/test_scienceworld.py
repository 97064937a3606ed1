"""The ``scienceworld@1`` adapter over the real simulator (PyPI ``scienceworld``, Java 17)."""

from __future__ import annotations

import shutil

import pytest

import tasks.base
from harness.cli import main
from harness.store import load_episodes
from tasks.base import SPLITS, check_env
from tasks.scienceworld import (JVM_OPTIONS, UNKNOWN_ACTION, ScienceWorldSuite, _acquire,
                                _release, _start_simulator, task_names, variation_splits)


@pytest.fixture(scope="module", autouse=True)
def variation_cache(tmp_path_factory):
    """The variation listing, computed once for this module in a temporary cache."""
    mp = pytest.MonkeyPatch()
    mp.setenv("SCIENCEWORLD_CACHE", str(tmp_path_factory.mktemp("scienceworld")))
    yield
    mp.undo()


@pytest.fixture(scope="module")
def suite(variation_cache):
    return ScienceWorldSuite()


def test_java_is_installed():
    assert shutil.which("java"), "apt-get install -y openjdk-17-jre-headless"


def test_thirty_tasks_and_the_simulators_variation_split(suite):
    assert len(task_names()) == 30 and suite.task_types() == sorted(task_names())
    assert len(suite.tasks()) == 7207  # ScienceWorld's published total of variations
    split_ids = [{t.id for t in suite.tasks(split)} for split in SPLITS]
    assert not (split_ids[0] & split_ids[1] or split_ids[0] & split_ids[2]
                or split_ids[1] & split_ids[2])
    backend = _acquire()
    try:
        backend.load("melt", 0, "")
        backend.loaded, backend.gold = None, []
        expected = {"train": list(backend.get_variations_train()),
                    "dev": list(backend.get_variations_dev()),
                    "test": list(backend.get_variations_test())}
    finally:
        _release(backend)
    assert variation_splits()["melt"] == expected
    for split in SPLITS:
        assert sorted(t.metadata["variation"] for t in suite.tasks(split)
                      if t.task_type == "melt") == sorted(expected[split])
    assert suite.task("boil/var0").metadata["task_id"] == "1-1"


def test_check_env_and_the_protocol(suite):
    env = suite.make_env(suite.tasks("test")[0].id)
    check_env(env, seed=0)
    obs, info = env.reset(seed=0)
    assert obs.startswith("Task Description:\nYour task is to boil")
    assert "This room is called" in obs and info["score"] == 0.0 and not info["won"]
    assert "look around" in info["admissible_actions"]
    moves, gold = info["moves"], env.oracle_action()
    result = env.step("dance with the moon")
    assert result.observation == UNKNOWN_ACTION and result.info["invalid"]
    assert result.info["moves"] == moves and result.reward == 0.0
    # the same valid list; the gold path's next command is offered only while on the path
    before, after = set(info["admissible_actions"]), set(result.info["admissible_actions"])
    assert after <= before and before - after <= {gold}
    assert env.oracle_action() == "look around"
    snap = env.snapshot()
    first = env.step(env.oracle_action())
    assert not first.info["invalid"]
    env.restore(snap)
    again = env.step(env.oracle_action())
    assert (again.observation, again.info) == (first.observation, first.info)


def _jvm_arguments(backend) -> list[str]:
    runtime = backend._gateway.jvm.java.lang.management.ManagementFactory.getRuntimeMXBean()
    return list(runtime.getInputArguments())


def test_the_default_jvm_lists_objects_in_a_different_order_at_every_load():
    """Why `JVM_OPTIONS`: in a JVM started as ``ScienceWorldEnv`` starts it, loading the same
    variation again gives another first observation and another valid-action list (the
    simulator's hash sets follow identity hash codes); with `JVM_OPTIONS`, one of each."""
    import scienceworld

    def loads(backend):
        seen = set()
        for _ in range(4):
            backend.load("find-animal", 225, "")
            observation, _, _, info = backend.step("look around")
            seen.add((observation, tuple(info["valid"])))
        backend.close()
        return seen

    default = scienceworld.ScienceWorldEnv("", envStepLimit=10**9)
    assert not set(JVM_OPTIONS) & set(_jvm_arguments(default))
    assert len(loads(default)) > 1
    ours = _start_simulator()
    assert set(JVM_OPTIONS) <= set(_jvm_arguments(ours))
    assert len(loads(ours)) == 1


def test_a_variation_plays_the_same_in_a_fresh_and_a_used_simulator(suite):
    """Boil's gold path (the gold agent caches room search paths per JVM; a JVM that loaded
    boil/var3 first drew another one) and a whole gold-path episode of find-animal (animals
    wander at random) are the same in a fresh simulator and in one that played another task."""
    used, fresh = _acquire(), _start_simulator()
    fresh.loaded, fresh.gold = None, []
    try:
        warm_up = suite.make_env("boil/var3")
        warm_up._backend = used
        warm_up.reset(seed=0)
        for action in warm_up.gold_path()[:6]:
            warm_up.step(action)
        trajectories, gold_paths = [], []
        for backend in (used, fresh):
            boil = suite.make_env("boil/var21")
            boil._backend = backend
            gold_paths.append(boil.gold_path())
            env = suite.make_env("find-animal/var225")
            env._backend = backend
            observation, info = env.reset(seed=0)
            trajectory, done = [(observation, info)], False
            while not done:
                result = env.step(env.oracle_action())
                trajectory.append((result.observation, result.reward, result.info))
                done = result.terminated or result.truncated
            trajectories.append(trajectory)
        assert gold_paths[0] == gold_paths[1]
        assert trajectories[0] == trajectories[1]
        assert trajectories[0][-1][2]["won"]
    finally:
        _release(used)
        fresh.close()


@pytest.mark.slow
@pytest.mark.timeout(3600)
def test_check_env_passes_on_one_variation_of_every_task(suite):
    """Must-show: the Env contract (determinism, invalid actions, truncation, snapshot/restore,
    the oracle's action admissible) holds on the first test variation of each of the 30
    tasks; the registry-wide test checks only a spread of them."""
    failures = {}
    for name in task_names():
        task = next(t for t in suite.tasks("test") if t.task_type == name)
        env = suite.make_env(task.id)
        try:
            check_env(env, seed=0)
        except AssertionError as error:
            failures[task.id] = str(error)
        del env
    assert not failures, failures


def test_harness_list_marks_the_suite_unavailable_without_java(monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr(tasks.base, "_CACHE", {})
    assert main(["list", "suites"]) == 0
    lines = capsys.readouterr().out.splitlines()
    line = next(line for line in lines if line.startswith("scienceworld@1"))
    assert "unavailable" in line and "openjdk-17-jre-headless" in line
    assert any(line.startswith("frozenlake@1") and "unavailable" not in line for line in lines)


@pytest.mark.slow
@pytest.mark.timeout(3600)
def test_gold_paths_reach_100_on_one_variation_of_every_task(suite):
    """Must-show: for each of the 30 tasks, the oracle (the simulator's gold path) played
    through the Env reaches score 100 on the task's first test variation."""
    scores = {}
    for name in task_names():
        task = next(t for t in suite.tasks("test") if t.task_type == name)
        env = suite.make_env(task.id)
        _, info = env.reset(seed=0)
        done, total, start = False, 0.0, info["score"]
        while not done:
            action = env.oracle_action()
            assert action in info["admissible_actions"]
            result = env.step(action)
            info, total = result.info, total + result.reward
            done = result.terminated or result.truncated
        scores[task.id] = (info["score"], info["won"], total, start)
        del env
    failed = {k: v for k, v in scores.items() if v[0] != 100.0 or not v[1]}
    assert not failed, failed
    # rewards are score differences: they add up to the score gained after the reset
    assert all(total == 100.0 - start for _, _, total, start in scores.values())


def test_harness_run_with_the_oracle_and_trivial_policies(monkeypatch, suite, tmp_path):
    monkeypatch.setitem(tasks.base._REGISTRY, "scienceworld", {1: lambda: suite})
    monkeypatch.setattr(tasks.base, "_CACHE", {})
    db = str(tmp_path / "sw.db")
    assert main(["run", "--policy", "oracle", "--suite", "scienceworld", "--split", "test",
                 "--task-type", "find-animal", "--tasks", "2", "--db", db]) == 0
    assert main(["run", "--policy", "noop:inventory,random", "--suite", "scienceworld",
                 "--split", "test", "--task-type", "find-animal", "--tasks", "1",
                 "--max-steps", "4", "--db", db, "--run-id", "trivial"]) == 0
    episodes = load_episodes(db)
    oracle = episodes[episodes.policy == "oracle"]
    assert len(oracle) == 2 and oracle.success.all() and (oracle.score == 100.0).all()
    trivial = episodes[episodes.run_id == "trivial"]
    assert len(trivial) == 2 and not trivial.success.any() and (trivial.status == "ok").all()


@pytest.mark.slow
def test_harness_audit_runs_on_scienceworld(monkeypatch, suite, tmp_path, capsys):
    monkeypatch.setitem(tasks.base._REGISTRY, "scienceworld", {1: lambda: suite})
    monkeypatch.setattr(tasks.base, "_CACHE", {})
    db = str(tmp_path / "audit.db")
    code = main(["audit", "scienceworld", "--tasks", "1", "--k", "2", "--eval-seeds", "1",
                 "--max-regraded", "2", "--regrades", "1", "--concurrency", "2", "--db", db])
    captured = capsys.readouterr()
    assert code == 0, captured.out + captured.err
    rates = load_episodes(db).groupby("policy")["success"].mean()
    assert rates["oracle"] == 1.0
    assert rates["noop:look around"] == 0.0 and rates["audit:invalid"] == 0.0
