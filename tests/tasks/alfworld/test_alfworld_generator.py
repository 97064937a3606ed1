"""The game generator: official layout, splits, solvable games, determinism, and loading through
the ``alfworld`` package's own ``AlfredTWEnv``."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

import pytest

from harness.core import make_rng
from tasks.alfworld.data import collect_games
from tasks.alfworld.engine import pinned_logic
from tasks.alfworld.env import AlfworldEnv
from tasks.alfworld.generator import generate_games, generate_one
from tasks.alfworld.problems import TASK_TYPES
from tasks.alfworld.scenes import UNSEEN_FLOOR_PLANS


def test_layout_and_files_are_the_official_ones(small_set):
    root, report = small_set
    assert report.counts() == {(split, task_type): 1 for split in
                               ("train", "valid_seen", "valid_unseen")
                               for task_type in TASK_TYPES.values()}
    domain, grammar = pinned_logic()
    problems = set()
    for game in report.games:
        folder = root / game.path
        parts = Path(game.path).parts
        assert parts[0] == "json_2.1.1" and parts[1] == game.split
        assert parts[2].split("-")[0] == game.task_type and parts[3].startswith("trial_G")
        assert {p.name for p in folder.iterdir()} == {"game.tw-pddl", "traj_data.json",
                                                      "initial_state.pddl"}
        data = json.loads((folder / "game.tw-pddl").read_text())
        assert set(data) == {"pddl_domain", "grammar", "pddl_problem", "solvable",
                             "walkthrough"}
        assert data["pddl_domain"] == domain and data["solvable"] is True
        traj = json.loads((folder / "traj_data.json").read_text())
        goal = traj["turk_annotations"]["anns"][0]["task_desc"]
        assert data["grammar"] == grammar.replace("UNKNOWN GOAL", goal)
        assert traj["task_type"] == game.task_type
        assert (folder / "initial_state.pddl").read_text() == data["pddl_problem"]
        floor_plan = traj["scene"]["scene_num"]
        assert int(parts[2].rsplit("-", 1)[1]) == floor_plan
        assert (floor_plan in UNSEEN_FLOOR_PLANS) == (game.split == "valid_unseen")
        assert len(data["walkthrough"]) == game.plan_length
        problems.add(data["pddl_problem"].split("(:objects", 1)[1])
    assert len(problems) == len(report.games)
    assert len(collect_games(root)) == len(report.games)


def test_every_walkthrough_wins_through_the_env(small_set):
    root, report = small_set
    for game in report.games:
        game_file = root / game.path / "game.tw-pddl"
        env = AlfworldEnv(game_file)
        obs, info = env.reset(seed=0)
        assert obs.startswith("-= Welcome to TextWorld, ALFRED! =-") and not info["won"]
        walkthrough = json.loads(game_file.read_text())["walkthrough"]
        for index, command in enumerate(walkthrough):
            assert command in info["admissible_actions"]
            result = env.step(command)
            info = result.info
            assert result.terminated == (index == len(walkthrough) - 1), game.path
        assert info["won"] and info["score"] == 1.0


def test_generation_is_deterministic_and_independent_of_workers(small_set, small_seed,
                                                                 tmp_path):
    root, report = small_set
    again = generate_games(tmp_path, {"valid_unseen": 1}, make_rng(small_seed),
                           splits=("valid_unseen",), workers=1)
    for game in again.games:
        for name in ("game.tw-pddl", "traj_data.json"):
            assert (tmp_path / game.path / name).read_bytes() == (
                root / game.path / name).read_bytes()
    other = generate_one(tmp_path / "other", 12345, "valid_unseen", "pick_and_place_simple", 0)
    assert other.path not in {g.path for g in report.games}


def _official_config(root: Path) -> dict:
    domain = Path(str(resources.files("alfworld"))) / "data"
    data_path = str(root / "json_2.1.1")
    return {
        "env": {"goal_desc_human_anns_prob": 0, "task_types": [1, 2, 3, 4, 5, 6],
                "domain_randomization": False, "expert_type": "planner"},
        "general": {"training_method": "dagger"},
        "dagger": {"training": {"max_nb_steps_per_episode": 50}},
        "rl": {"training": {"max_nb_steps_per_episode": 50}},
        "dataset": {"data_path": data_path + "/train",
                    "eval_id_data_path": data_path + "/valid_seen",
                    "eval_ood_data_path": data_path + "/valid_unseen",
                    "num_train_games": -1, "num_eval_games": -1},
        "logic": {"domain": str(domain / "alfred.pddl"), "grammar": str(domain / "alfred.twl2")},
    }


def test_generated_games_load_unchanged_through_alfred_tw_env(small_set):
    """The alfworld package's own loader finds every generated game of each split, and its
    TextWorld gym environment plays a game's walkthrough to a win."""
    from alfworld.agents.environment.alfred_tw_env import AlfredTWEnv

    root, report = small_set
    config = _official_config(root)
    splits = {"train": "train", "eval_in_distribution": "valid_seen",
              "eval_out_of_distribution": "valid_unseen"}
    for mode, split in splits.items():
        loader = AlfredTWEnv(config, train_eval=mode)
        found = sorted(str(Path(f).parent.relative_to(root)) for f in loader.game_files)
        assert found == sorted(g.path for g in report.games if g.split == split)
    env = loader.init_env(batch_size=1)
    try:
        obs, infos = env.reset()
        game_file = Path(infos["extra.gamefile"][0])
        walkthrough = json.loads(game_file.read_text())["walkthrough"]
        ours, info = AlfworldEnv(game_file).reset(seed=0)
        assert obs[0] == ours
        assert list(infos["admissible_commands"][0]) == info["admissible_actions"]
        for command in walkthrough:
            obs, scores, dones, infos = env.step([command])
        assert dones[0] and infos["won"][0]
    finally:
        env.close()


@pytest.mark.parametrize("split", ["train", "valid_unseen"])
def test_split_games_use_the_right_floor_plans(small_set, split):
    root, report = small_set
    plans = {json.loads((root / g.path / "traj_data.json").read_text())["scene"]["scene_num"]
             for g in report.games if g.split == split}
    assert (plans <= set(UNSEEN_FLOOR_PLANS)) == (split == "valid_unseen")
