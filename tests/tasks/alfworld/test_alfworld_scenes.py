"""Floor plans, scenes, PDDL problems, the replanning task and the game listing (no engine)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from tasks.alfworld import data, planning, problems, scenes
from tasks.alfworld.problems import TaskParams

SMALL_PROBLEM = """
(define (problem tiny)
    (:domain alfred)
    (:metric minimize (total-cost))
    (:objects
        agent1 - agent
        AppleType - otype
        BookType - otype
        FridgeType - rtype
        Apple_bar_1 - object
        Book_bar_1 - object
        Fridge_bar_1 - receptacle
        loc_bar_1 - location
        loc_bar_2 - location
        )
    (:init
        (objectType Apple_bar_1 AppleType)
        (objectType Book_bar_1 BookType)
        (inReceptacle Book_bar_1 Fridge_bar_1)
        (inReceptacle Apple_bar_1 Fridge_bar_1)
        (receptacleAtLocation Fridge_bar_1 loc_bar_1)
        (atLocation agent1 loc_bar_2)
        )
    (:goal (exists (?o - object) (and (objectType ?o AppleType) (holds agent1 ?o))))
)
"""


def test_thor_ids_types_and_mangling_by_hand():
    assert scenes.thor_type("Sink|-01.90|+00.97|-01.50|SinkBasin") == "SinkBasin"
    assert scenes.thor_type("Cabinet|+00.68|+00.50|-02.20") == "Cabinet"
    assert problems.mangle("Cabinet|+00.68|+00.50|-02.20") == (
        "Cabinet_bar__plus_00_dot_68_bar__plus_00_dot_50_bar__minus_02_dot_20")
    assert problems.mangle("?r # receptacle") == "?r - receptacle"
    # openable.json pose (x, z, rotation degrees, horizon) -> ALFRED grid location
    assert scenes._location((0.0, -1.25, 180, 30)) == (0, -5, 2, 30)
    assert problems._location_name((0, -5, 2, 30)) == "loc_bar_0_bar__minus_5_bar_2_bar_30"


def test_floor_plan_1_as_shipped():
    plan = scenes.load_floor_plan(1)
    cabinet = next(r for r in plan.receptacles if r.id == "Cabinet|+00.68|+00.50|-02.20")
    assert cabinet.type == "Cabinet" and cabinet.location == (0, -5, 2, 30)
    sink = next(r for r in plan.receptacles if r.type == "SinkBasin")
    assert sink.id == "Sink|-01.90|+00.97|-01.50|SinkBasin"
    assert {"Apple", "Fridge", "Microwave"} <= plan.object_types
    assert plan.room == "Kitchen" and scenes.room_type(308) == "Bedroom"
    assert len(plan.navigable) == 129


@settings(max_examples=15, deadline=None)
@given(floor_plan=st.sampled_from([1, 10, 205, 219, 308, 424]), seed=st.integers(0, 10**6))
def test_sampled_scenes_respect_alfreds_tables(floor_plan, seed):
    import alfworld.gen.constants as constants

    plan = scenes.load_floor_plan(floor_plan)
    scene = scenes.sample_scene(plan, np.random.default_rng(seed), {"Apple": 2})
    by_id = {r.id: r for r in scene.receptacles}
    assert len(by_id) == len(scene.receptacles)
    assert len({item.id for item in scene.items}) == len(scene.items)
    static = set(constants.RECEPTACLES) - set(constants.MOVABLE_RECEPTACLES)
    assert (plan.object_types & static) <= scene.receptacle_types()
    for item in scene.items:
        host = by_id[item.receptacle]
        if item.type in scenes.LAMPS:
            assert host.type in scenes.LAMP_SURFACES
        else:
            assert item.type in constants.VAL_RECEPTACLE_OBJECTS[host.type]
    for kind in {item.type for item in scene.items}:
        assert 1 <= scene.count(kind) <= (1 if kind in scenes.LAMPS else scenes.MAX_INSTANCES)
    if "Apple" in plan.object_types:
        assert scene.count("Apple") >= 2
    assert scene.agent_location not in {r.location for r in scene.receptacles}


def test_goal_sentences_and_folders_by_hand():
    heat = TaskParams("pick_heat_then_place_in_recep", "Apple", "CounterTop")
    assert problems.goal_text(heat, 0) == "put a hot apple in countertop"
    assert problems.goal_text(heat, 1) == "heat some apple and put it in countertop"
    look = TaskParams("look_at_obj_in_light", "AlarmClock", toggle_target="DeskLamp")
    assert problems.goal_text(look, 0) == "look at alarmclock under the desklamp"
    assert heat.directory(10) == "pick_heat_then_place_in_recep-Apple-None-CounterTop-10"
    assert look.directory(308) == "look_at_obj_in_light-AlarmClock-None-DeskLamp-308"
    goal = problems.goal_pddl(heat)
    assert "(isHot ?o)" in goal and "(objectType ?o AppleType)" in goal
    assert "(receptacleType ?r CounterTopType)" in goal and "#" not in goal


def test_problem_text_holds_the_facts_the_domain_reads():
    plan = scenes.load_floor_plan(1)
    scene = scenes.sample_scene(plan, np.random.default_rng(3), {"Apple": 1})
    params = TaskParams("pick_cool_then_place_in_recep", "Apple", "CounterTop")
    text = problems.scene_problem(scene, params, "plan_x")
    tree = planning.parse_pddl(text)
    facts = planning._section(tree, ":init")[1:]
    apples = [item for item in scene.items if item.type == "Apple"]
    for apple in apples:
        name = problems.mangle(apple.id).lower()
        assert ["objecttype", name, "appletype"] in facts
        assert ["pickupable", name] in facts and ["coolable", name] in facts
        host = problems.mangle(apple.receptacle).lower()
        assert ["inreceptacle", name, host] in facts
        in_fridge = apple.receptacle.startswith("Fridge")
        assert (["iscool", name] in facts) == in_fridge
    assert ["cancontain", "fridgetype", "appletype"] in facts
    assert all(["openable", problems.mangle(r.id).lower()] in facts
               for r in scene.receptacles if r.type in ("Fridge", "Cabinet", "Drawer"))
    assert planning.goal_object_types(tree) == {"appletype"}


def test_relevant_problem_drops_what_the_goal_does_not_name():
    assert planning.goal_object_types(SMALL_PROBLEM) == {"appletype"}
    pruned = planning.parse_pddl(planning.relevant_problem(SMALL_PROBLEM))
    tokens = set(planning._walk_tokens(pruned))
    assert "book_bar_1" not in tokens and "apple_bar_1" in tokens
    assert "fridge_bar_1" in tokens and "booktype" in tokens  # types and receptacles stay
    assert planning._section(pruned, ":metric") == []
    kept = planning.parse_pddl(planning.relevant_problem(SMALL_PROBLEM, keep=["Book_bar_1"]))
    assert ["inreceptacle", "book_bar_1", "fridge_bar_1"] in planning._section(kept, ":init")
    assert planning.object_types(SMALL_PROBLEM) == {"apple_bar_1": "appletype",
                                                     "book_bar_1": "booktype"}


def _game(root, split, folder, trial="trial_T1", solvable=True, game=True):
    path = root / "json_2.1.1" / split / folder / trial
    path.mkdir(parents=True)
    (path / "traj_data.json").write_text(json.dumps({"task_type": folder.split("-")[0]}))
    if game:
        (path / "game.tw-pddl").write_text(json.dumps({"solvable": solvable}))


def test_collect_games_filters_like_alfred_tw_env(tmp_path, monkeypatch):
    _game(tmp_path, "train", "pick_and_place_simple-Apple-None-Fridge-7")
    _game(tmp_path, "valid_unseen", "pick_two_obj_and_place-Book-None-Bed-308")
    _game(tmp_path, "valid_seen", "pick_heat_then_place_in_recep-Egg-None-Fridge-8",
          solvable=False)
    _game(tmp_path, "train", "pick_and_place_with_movable_recep-Apple-Bowl-Fridge-7")
    _game(tmp_path, "train", "pick_clean_then_place_in_recep-AppleSliced-None-Fridge-7")
    _game(tmp_path, "train", "look_at_obj_in_light-Book-None-DeskLamp-301", game=False)
    games = data.collect_games(tmp_path)
    assert [(g.task_id, g.split, g.task_type, g.floor_plan) for g in games] == [
        ("train/pick_and_place_simple-Apple-None-Fridge-7/trial_T1", "train",
         "pick_and_place_simple", 7),
        ("valid_unseen/pick_two_obj_and_place-Book-None-Bed-308/trial_T1", "test",
         "pick_two_obj_and_place", 308)]
    monkeypatch.setenv("ALFWORLD_DATA", str(tmp_path))
    assert data.official_data_root() == tmp_path
    monkeypatch.setenv("ALFWORLD_DATA", str(tmp_path / "nothing"))
    assert data.official_data_root() is None
    monkeypatch.delenv("ALFWORLD_DATA")
    assert not data.official_data_available()


def test_split_floor_plans_follow_alfred():
    from tasks.alfworld.generator import floor_plans_for

    assert set(floor_plans_for("valid_unseen", "pick_and_place_simple")) == {10, 219, 308, 424}
    assert floor_plans_for("valid_unseen", "pick_heat_then_place_in_recep") == (10,)
    assert set(floor_plans_for("valid_unseen", "look_at_obj_in_light")) == {219, 308}
    for task_type in problems.TASK_TYPES.values():
        seen = set(floor_plans_for("train", task_type))
        assert seen and not seen & set(scenes.UNSEEN_FLOOR_PLANS)
        assert all(n % 100 >= 7 for n in seen)
        assert floor_plans_for("valid_seen", task_type) == floor_plans_for("train", task_type)


@pytest.mark.parametrize("bad", [{"splits": ("test",)}, {"task_types": ("slice_it",)}])
def test_generate_games_rejects_unknown_names(tmp_path, bad):
    from tasks.alfworld.generator import generate_games

    with pytest.raises(ValueError, match="unknown"):
        generate_games(tmp_path, 1, np.random.default_rng(0), **bad)
