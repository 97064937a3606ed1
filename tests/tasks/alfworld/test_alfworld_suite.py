"""The ALFWorld suites: listing, the Env contract, pinned wording, the generated cache, and
episodes through `harness run` with the registry's scripted policies."""

from __future__ import annotations

import json
import shutil

import pytest

import tasks.base
from harness.cli import main
from harness.store import load_episodes
from tasks.alfworld import suite as suite_module
from tasks.alfworld.suite import (PUT_TEMPLATE, AlfworldDataMissing, AlfworldSuite,
                                  GeneratedAlfworldSuite)
from tasks.base import SPLITS, check_env


@pytest.fixture
def official_copy(small_set):
    root, _ = small_set
    return AlfworldSuite(root=root, allow_generated=True)


def test_suite_lists_the_games_by_split_and_type(official_copy, small_set):
    suite = official_copy
    assert suite.id == "alfworld@1" and suite.blocking
    for split in SPLITS:
        tasks_ = suite.tasks(split)
        assert sorted(t.task_type for t in tasks_) == sorted(
            ("pick_and_place_simple", "look_at_obj_in_light", "pick_clean_then_place_in_recep",
             "pick_heat_then_place_in_recep", "pick_cool_then_place_in_recep",
             "pick_two_obj_and_place"))
    official = {"train": "train", "dev": "valid_seen", "test": "valid_unseen"}
    for task in suite.tasks():
        assert task.id.startswith(official[task.split] + "/")
        assert task.metadata["official_split"] == official[task.split]
    assert set(suite.trivial_actions.values()) == {"look", "inventory", "help"}


def test_check_env_passes_for_one_game_per_task_type(official_copy):
    suite = official_copy
    chosen = [next(t for t in suite.tasks(SPLITS[i % 3]) if t.task_type == task_type)
              for i, task_type in enumerate(suite.task_types())]
    assert len(chosen) == 6
    for task in chosen:
        env = suite.make_env(task.id)
        check_env(env, seed=0)
        obs, info = env.reset(seed=0)
        for trivial in suite.trivial_actions.values():
            assert trivial in info["admissible_actions"]


def test_official_suite_needs_the_official_data(monkeypatch, small_set):
    monkeypatch.delenv("ALFWORLD_DATA", raising=False)
    with pytest.raises(AlfworldDataMissing, match="ALFWORLD_DATA"):
        AlfworldSuite()
    monkeypatch.setenv("ALFWORLD_DATA", str(small_set[0]))
    with pytest.raises(AlfworldDataMissing, match="harness tasks generate"):
        AlfworldSuite()
    assert len(AlfworldSuite(allow_generated=True).tasks()) == 18


def test_official_games_play_with_the_pinned_wording(small_set, tmp_path):
    """A game whose own grammar has the older ``put X in/on Y`` is played with the pinned
    ``move X to Y`` grammar, its goal sentence kept."""
    root, report = small_set
    game = next(g for g in report.games if g.task_type == "pick_and_place_simple")
    copy = tmp_path / game.path
    shutil.copytree(root / game.path, copy)
    data = json.loads((copy / "game.tw-pddl").read_text())
    old = data["grammar"].replace(PUT_TEMPLATE, 'template :: "put {o} in/on {r}";')
    assert old != data["grammar"]
    (copy / "game.tw-pddl").write_text(json.dumps({**data, "grammar": old}))
    traj = json.loads((copy / "traj_data.json").read_text())
    del traj["generator"]  # looks like an official game now
    (copy / "traj_data.json").write_text(json.dumps(traj))
    suite = AlfworldSuite(root=tmp_path)
    env = suite.make_env(suite.tasks()[0].id)
    obs, _ = env.reset(seed=0)
    assert obs.endswith(data["grammar"].split("Your task is to: ")[1].split('"')[0])
    for command in data["walkthrough"]:
        result = env.step(command)
    assert result.terminated and data["walkthrough"][-1].startswith("move ")


def test_a_different_installed_wording_is_refused(monkeypatch, small_set):
    import tasks.alfworld.engine as engine

    domain, grammar = engine.pinned_logic()
    monkeypatch.setattr(engine, "pinned_logic",
                        lambda: (domain, grammar.replace(PUT_TEMPLATE, "template :: \"x\";")))
    with pytest.raises(suite_module.AlfworldWordingMismatch, match="move X to Y"):
        AlfworldSuite(root=small_set[0], allow_generated=True)


def test_generated_suite_lists_at_once_and_builds_games_on_first_use(monkeypatch, tmp_path):
    from tasks.alfworld.generator import generate_one

    monkeypatch.setenv("ALFWORLD_CACHE", str(tmp_path))
    suite = GeneratedAlfworldSuite()
    assert suite.id == "alfworld-generated@1" and suite.blocking
    for split, official in (("train", "train"), ("dev", "valid_seen"), ("test", "valid_unseen")):
        listed = suite.tasks(split)
        assert len(listed) == 6 * suite_module.DEFAULT_COUNTS[official]
        assert all(t.id.startswith(official + "/" + t.task_type + "/") for t in listed)
    task = suite.tasks("test")[3]
    env = suite.make_env(task.id)
    assert not list(tmp_path.rglob("game.tw-pddl")), "listing and make_env generate nothing"
    obs, info = env.reset(seed=0)
    files = list(tmp_path.rglob("game.tw-pddl"))
    assert len(files) == 1 and obs.startswith("-= Welcome to TextWorld, ALFRED! =-")
    folder = files[0].parent
    assert folder.parent.name.startswith(task.task_type + "-")
    assert int(folder.parent.name.rsplit("-", 1)[1]) in (10, 219, 308, 424)
    stamp = files[0].stat().st_mtime_ns
    assert GeneratedAlfworldSuite().game_file(task.id) == files[0]
    assert files[0].stat().st_mtime_ns == stamp, "a game on disk is not generated again"
    direct = generate_one(tmp_path / "direct", suite.base, "valid_unseen", task.task_type,
                          task.metadata["index"])
    assert (tmp_path / "direct" / direct.path / "game.tw-pddl").read_bytes() == (
        files[0].read_bytes())
    check_env(env, seed=0)


def test_harness_run_with_oracle_random_and_noop(monkeypatch, small_set, tmp_path):
    root, _ = small_set
    suite = AlfworldSuite(root=root, allow_generated=True)
    monkeypatch.setitem(tasks.base._REGISTRY, "alfworld", {1: lambda: suite})
    monkeypatch.setattr(tasks.base, "_CACHE", {})
    db = str(tmp_path / "runs.db")
    code = main(["run", "--policy", "oracle,random,noop:look,noop:inventory", "--suite",
                 "alfworld", "--split", "test", "--tasks", "6", "--db", db])
    assert code == 0
    episodes = load_episodes(db)
    by_policy = episodes.groupby("policy")
    assert by_policy["success"].mean()["oracle"] == 1.0
    assert by_policy["success"].sum()["noop:look"] == 0
    assert by_policy["success"].sum()["noop:inventory"] == 0
    noop = episodes[episodes.policy == "noop:look"]
    assert (noop.n_steps == 50).all() and noop.truncated.all() and (noop.n_invalid == 0).all()
    oracle = episodes[episodes.policy == "oracle"]
    assert (oracle.total_reward == 1.0).all() and oracle.terminated.all()
    assert len(episodes) == 24 and (episodes.status == "ok").all()


def test_harness_audit_runs_on_alfworld(monkeypatch, small_set, tmp_path, capsys):
    root, _ = small_set
    suite = AlfworldSuite(root=root, allow_generated=True)
    monkeypatch.setitem(tasks.base._REGISTRY, "alfworld", {1: lambda: suite})
    monkeypatch.setattr(tasks.base, "_CACHE", {})
    db = str(tmp_path / "audit.db")
    code = main(["audit", "alfworld", "--tasks", "6", "--k", "2", "--eval-seeds", "1",
                 "--max-regraded", "6", "--regrades", "2", "--concurrency", "2", "--db", db])
    printed = capsys.readouterr().out
    assert code == 0, printed
    episodes = load_episodes(db)
    rates = episodes.groupby("policy")["success"].mean()
    assert rates["oracle"] == 1.0
    for trivial in ("noop:look", "noop:inventory", "noop:help", "audit:empty",
                    "audit:invalid"):
        assert rates[trivial] == 0.0, trivial
