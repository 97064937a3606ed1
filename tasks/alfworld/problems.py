"""ALFRED task parameters, goals and PDDL problems, as ALFWorld's ``initial_state.pddl`` has them.

A problem lists, in ALFRED's layout: the agent, every object-type and receptacle-type constant
(``AppleType - otype``, ``FridgeType - rtype``), the object and receptacle instances (THOR ids
mangled as ALFRED's ``PlannedGameState.fix_pddl_str_chars`` does: ``|`` -> ``_bar_``, ``-`` ->
``_minus_``, ``+`` -> ``_plus_``, ``.`` -> ``_dot_``), the locations; then the facts the
``alfred.pddl`` domain reads (types, ``canContain`` from ALFRED's ``VAL_RECEPTACLE_OBJECTS``,
``pickupable``, ``openable``, ``cleanable``/``heatable``/``coolable``/``sliceable`` from
``VAL_ACTION_OBJECTS``, ``toggleable`` lamps, ``inReceptacle``, ``objectAtLocation``,
``receptacleAtLocation``, ``atLocation``); an object of the target type that starts in a fridge
is ``isCool``, as ALFRED marks it. The goal is the task type's PDDL goal from the package's
``alfworld.gen.goal_library`` with the targets filled in.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from tasks.alfworld.scenes import LAMPS, Scene

__all__ = ["TASK_TYPES", "TaskParams", "goal_pddl", "goal_text", "mangle", "scene_problem",
           "traj_data"]

TASK_TYPES = {1: "pick_and_place_simple", 2: "look_at_obj_in_light",
              3: "pick_clean_then_place_in_recep", 4: "pick_heat_then_place_in_recep",
              5: "pick_cool_then_place_in_recep", 6: "pick_two_obj_and_place"}
"""ALFWorld's six task types, numbered as ``alfworld.agents.environment.alfred_tw_env``."""

_MANGLE = {"-": "_minus_", "#": "-", "|": "_bar_", "+": "_plus_", ".": "_dot_", ",": "_comma_"}


def mangle(text: str) -> str:
    """ALFRED's ``fix_pddl_str_chars``: THOR ids as PDDL names (``#`` marks a type dash)."""
    return "".join(_MANGLE.get(char, char) for char in text)


@dataclass(frozen=True)
class TaskParams:
    """ALFRED's ``pddl_params`` of one task (types are THOR class names, ``""`` when unused)."""

    task_type: str
    object_target: str
    parent_target: str = ""
    toggle_target: str = ""

    def directory(self, floor_plan: int) -> str:
        """ALFRED's task folder name, ``{type}-{object}-{mrecep}-{parent}-{scene}``."""
        parent = self.parent_target or self.toggle_target
        return f"{self.task_type}-{self.object_target}-None-{parent}-{floor_plan}"


def _goal_library():
    import alfworld.gen.goal_library as goal_library

    return goal_library.gdict


def goal_pddl(params: TaskParams) -> str:
    """The ``(:goal ...)`` block (plus the closing parenthesis of ``define``), ALFRED's text."""
    template = _goal_library()[params.task_type]["pddl"]
    return template.format(obj=params.object_target, recep=params.parent_target,
                           toggle=params.toggle_target, mrecep="None").replace("#", "-")


def goal_text(params: TaskParams, template_index: int) -> str:
    """The templated goal sentence (ALFWorld's ``get_templated_task_desc``), template chosen by
    index instead of the global ``random``."""
    templates = _goal_library()[params.task_type]["templates"]
    return templates[template_index % len(templates)].format(
        obj=params.object_target.lower(), recep=params.parent_target.lower(),
        toggle=params.toggle_target.lower(), mrecep="none")


def _location_name(location: tuple[int, int, int, int]) -> str:
    return mangle("loc|%d|%d|%d|%d" % location)


def _constants():
    import alfworld.gen.constants as constants

    return constants


def _type_constants() -> tuple[list[str], list[str]]:
    constants = _constants()
    receptacle_types = set(constants.RECEPTACLES) - set(constants.MOVABLE_RECEPTACLES)
    object_types = set(constants.OBJECTS_SET) - receptacle_types
    return sorted(object_types), sorted(receptacle_types)


def _item_facts(scene: Scene, params: TaskParams) -> list[str]:
    constants = _constants()
    actions = constants.VAL_ACTION_OBJECTS
    by_id = {r.id: r for r in scene.receptacles}
    facts = []
    for item in scene.items:
        name, host = mangle(item.id), by_id[item.receptacle]
        facts += [f"(objectType {name} {item.type}Type)",
                  f"(inReceptacle {name} {mangle(host.id)})",
                  f"(objectAtLocation {name} {_location_name(host.location)})"]
        if item.type in LAMPS:
            facts.append(f"(toggleable {name})")
            continue
        facts.append(f"(pickupable {name})")
        if item.type in constants.MOVABLE_RECEPTACLES_SET:
            facts.append(f"(isReceptacleObject {name})")
        for flag, table in (("cleanable", "Cleanable"), ("heatable", "Heatable"),
                            ("coolable", "Coolable"), ("sliceable", "Sliceable")):
            if item.type in actions[table]:
                facts.append(f"({flag} {name})")
        if host.type == "Fridge" and item.type == params.object_target:
            facts.append(f"(isCool {name})")
    return facts


def _receptacle_facts(scene: Scene) -> list[str]:
    constants = _constants()
    facts = []
    for receptacle in scene.receptacles:
        name = mangle(receptacle.id)
        facts += [f"(receptacleType {name} {receptacle.type}Type)",
                  f"(receptacleAtLocation {name} {_location_name(receptacle.location)})"]
        if receptacle.type in constants.OPENABLE_CLASS_SET:
            facts.append(f"(openable {name})")
    item_types = {item.type for item in scene.items}
    for receptacle_type in sorted(scene.receptacle_types()):
        for item_type in sorted(constants.VAL_RECEPTACLE_OBJECTS.get(receptacle_type, ())):
            if item_type in item_types:
                facts.append(f"(canContain {receptacle_type}Type {item_type}Type)")
    return facts


def scene_problem(scene: Scene, params: TaskParams, name: str) -> str:
    """The PDDL problem text of `scene` with the goal of `params` (ALFRED's layout)."""
    object_types, receptacle_types = _type_constants()
    locations = sorted({_location_name(r.location) for r in scene.receptacles}
                       | {_location_name(scene.agent_location)})
    declarations = (["agent1 - agent"] + [f"{t}Type - otype" for t in object_types]
                    + [f"{t}Type - rtype" for t in receptacle_types]
                    + [f"{mangle(item.id)} - object" for item in scene.items]
                    + [f"{mangle(r.id)} - receptacle" for r in scene.receptacles]
                    + [f"{location} - location" for location in locations])
    facts = (_receptacle_facts(scene) + _item_facts(scene, params)
             + [f"(atLocation agent1 {_location_name(scene.agent_location)})"])
    indent = "\n        "
    return (f"\n(define (problem {name})\n    (:domain alfred)\n    (:objects{indent}"
            + indent.join(declarations) + "\n        )\n\n    (:init" + indent
            + indent.join(facts) + "\n        )\n" + goal_pddl(params))


def traj_data(params: TaskParams, scene: Scene, *, task_id: str, goal: str,
              plan: list[str], seed: int) -> dict:
    """The ``traj_data.json`` of a generated game: the fields ALFWorld's loaders and
    ``alfworld-generate`` read (``task_type``, ``pddl_params``, ``scene``,
    ``turk_annotations``), with the templated goal standing in for the human annotations."""
    pddl_params = {"object_target": params.object_target, "parent_target": params.parent_target,
                   "toggle_target": params.toggle_target, "mrecep_target": "",
                   "object_sliced": False}
    return {
        "task_id": task_id,
        "task_type": params.task_type,
        "pddl_params": pddl_params,
        "scene": {"floor_plan": f"FloorPlan{scene.floor_plan}", "scene_num": scene.floor_plan,
                  "random_seed": seed},
        "turk_annotations": {"anns": [{"task_desc": goal, "high_descs": plan, "votes": []}]},
        "plan": {"high_pddl": [{"high_idx": i, "discrete_action": {"action": step}}
                               for i, step in enumerate(plan)]},
        "generator": {"name": "agent-rl-harness tasks.alfworld.generator",
                      "params": asdict(params)},
    }
