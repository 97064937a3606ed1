"""One ALFWorld game in the real engine: TextWorld's ``PddlEnv`` (Fast Downward underneath)
wrapped in ALFWorld's ``AlfredDemangler(shuffle=False)`` and ``AlfredInfos``, as
``alfworld.agents.environment.AlfredTWEnv.init_env`` builds it for evaluation.

What this module adds around the stock objects, none of which changes what the game shows:

- `tasks.alfworld.speedups` (memoised translation and grammar parsing);
- exact state copies: Fast Downward keeps every visited state in a registry and exposes the
  current state's id (``get_state_id``/``set_state_id``); a `Snapshot` holds that id, a copy of
  TextWorld's Python-side facts and the engine's last game state, so `restore` is exact and
  cheap. `Engine.reset` restores the state the stock ``reset`` produced at load time (the same
  state a new stock ``reset`` would rebuild);
- planning from the current state with the library's own ``replan`` on the relevance-pruned,
  unit-cost task of `tasks.alfworld.planning` (plans are shortest), cached per state.

Every call into the engine holds `ENGINE_LOCK` (the TatSu parsers and the translator are not
thread-safe); each `Engine` owns a copy of the Fast Downward library, returned to a pool when
the engine is garbage-collected (`speedups.release_library`).
"""

from __future__ import annotations

import ctypes
import hashlib
import itertools
import json
import os
import threading
import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.core import MissingDependencyError
from tasks.alfworld import planning, speedups

__all__ = ["ENGINE_LOCK", "Engine", "Snapshot", "import_engine", "pinned_logic", "GAME_FILE"]

ENGINE_LOCK = threading.RLock()
_ENGINE_IDS = itertools.count()
GAME_FILE = "game.tw-pddl"


def import_engine() -> dict[str, Any]:
    """TextWorld's ``PddlEnv`` and ALFWorld's wrappers; installs `speedups`.

    Importing ``alfworld`` sets ``os.environ["ALFWORLD_DATA"]`` to a default; the caller's
    value (or its absence) is put back."""
    prior = os.environ.get("ALFWORLD_DATA")
    try:
        import textworld
        from alfworld.agents.environment.alfred_tw_env import AlfredDemangler, AlfredInfos
        from textworld.envs import PddlEnv
    except ImportError as exc:  # pragma: no cover - CI installs the extra
        raise MissingDependencyError("alfworld and textworld", "alfworld",
                                     "the ALFWorld suites") from exc
    finally:
        if prior is None:
            os.environ.pop("ALFWORLD_DATA", None)
        else:
            os.environ["ALFWORLD_DATA"] = prior
    speedups.install()
    return {"textworld": textworld, "PddlEnv": PddlEnv, "AlfredDemangler": AlfredDemangler,
            "AlfredInfos": AlfredInfos}


def pinned_logic() -> tuple[str, str]:
    """``(alfred.pddl, alfred.twl2)`` as shipped in the installed ``alfworld`` package."""
    from importlib import resources

    root = Path(str(resources.files("alfworld"))) / "data"
    return (root / "alfred.pddl").read_text(), (root / "alfred.twl2").read_text()


@dataclass(frozen=True)
class Snapshot:
    """An exact copy of an `Engine`'s state (valid for the engine that took it)."""

    engine_id: int
    state_id: int
    facts: tuple
    game_state: Any
    previous_state: Any
    operators: Any
    moves: int
    last_action: Any
    held: str | None


def _copy_facts(state) -> tuple:
    return ({k: set(v) for k, v in state._facts.items()}, dict(state._vars_by_name),
            {k: set(v) for k, v in state._vars_by_type.items()}, state._var_counts.copy())


class Engine:
    """One game (a ``game.tw-pddl`` file, or its JSON content) in the stock engine."""

    def __init__(self, game: str | Path | dict):
        api = import_engine()
        if isinstance(game, dict):
            data, source = game, game
        else:
            data = json.loads(Path(game).read_text())
            source = str(game)
        self.problem: str = data["pddl_problem"]
        self.domain: str = data["pddl_domain"]
        tree = planning.parse_pddl(self.problem)
        self._goal_types = planning.goal_object_types(tree)
        self._object_types = planning.object_types(tree)
        speedups.register_replanning_task(self.problem, planning.relevant_problem(self.problem))
        self._id = next(_ENGINE_IDS)
        infos = api["textworld"].EnvInfos(won=True, admissible_commands=True,
                                          extras=["gamefile"])
        with ENGINE_LOCK:
            env = api["PddlEnv"](infos)
            self._finalizer = weakref.finalize(self, speedups.release_library, env.downward_lib)
            env = api["AlfredInfos"](api["AlfredDemangler"](shuffle=False)(env))
            env.load(source)
            self._env = env
            self._pddl = env.unwrapped
            env.reset()
            self._replan_sas: str = self._state.sas_replan
            self._plans: dict[int, tuple[str, ...] | None] = {}
            self._held: str | None = None
            self._initial = self.snapshot()

    # -- state --------------------------------------------------------------------------------
    @property
    def _state(self):
        return self._pddl._pddl_state

    @property
    def _lib(self):
        return self._pddl.downward_lib

    @property
    def feedback(self) -> str:
        return self._pddl.state.feedback

    @property
    def admissible(self) -> list[str]:
        return list(self._pddl.state["admissible_commands"])

    @property
    def won(self) -> bool:
        return bool(self._pddl.state["won"])

    def snapshot(self) -> Snapshot:
        with ENGINE_LOCK:
            pddl = self._pddl
            return Snapshot(self._id, self._lib.get_state_id(), _copy_facts(self._state),
                            pddl.state, pddl.prev_state, self._state._operators, pddl._moves,
                            pddl._last_action, self._held)

    def restore(self, snapshot: Snapshot) -> None:
        if snapshot.engine_id != self._id:
            raise ValueError("a snapshot can only be restored into the engine that took it")
        with ENGINE_LOCK:
            pddl, state = self._pddl, self._state
            self._lib.set_state_id(ctypes.c_int(snapshot.state_id))
            facts, by_name, by_type, counts = snapshot.facts
            state._facts.clear()
            state._facts.update({k: set(v) for k, v in facts.items()})
            state._vars_by_name = dict(by_name)
            state._vars_by_type.clear()
            state._vars_by_type.update({k: set(v) for k, v in by_type.items()})
            state._var_counts = counts.copy()
            state._operators = snapshot.operators
            pddl.state, pddl.prev_state = snapshot.game_state, snapshot.previous_state
            pddl._moves, pddl._last_action = snapshot.moves, snapshot.last_action
            self._held = snapshot.held

    def reset(self) -> None:
        """Back to the initial state (what the stock ``reset`` rebuilds)."""
        self.restore(self._initial)

    def state_key(self) -> str:
        """A digest of every true fact (canonical across engines of the same game)."""
        with ENGINE_LOCK:
            facts = sorted(str(fact) for fact in self._state.facts)
        return hashlib.blake2b("\n".join(facts).encode(), digest_size=16).hexdigest()

    # -- acting -------------------------------------------------------------------------------
    def _operator(self, command: str):
        """The engine's action for `command` in the current state (first match), or None."""
        valid = self._pddl.state["_valid_commands"]
        try:
            return self._pddl.state["_valid_actions"][valid.index(command)]
        except ValueError:
            return None

    def _held_after(self, operator_name: str) -> str | None:
        kind, *arguments = operator_name.split()
        if kind == "pickupobject":
            return arguments[2]
        if kind == "putobject":
            return None
        return self._held

    def step(self, command: str) -> bool:
        """Play `command` (the stock engine strips it); False when no admissible command
        matches, in which case nothing changed but the feedback ("Nothing happens.")."""
        with ENGINE_LOCK:
            command = command.strip()
            action = self._operator(command)
            before = self._lib.get_state_id()
            plan = self._plans.get(before)
            if action is not None:
                self._held = self._held_after(self._state._operators[action.id].name)
            self._env.step(command)
            if action is not None and plan and plan[0] == command:
                self._plans.setdefault(self._lib.get_state_id(), plan[1:])
            return action is not None

    # -- planning -----------------------------------------------------------------------------
    def _replan(self, held: str | None) -> tuple[str, ...] | None:
        if self._lib.check_goal():
            return ()
        extra = None
        if held is not None and self._object_types.get(held) not in self._goal_types:
            extra = speedups.translate(self.domain, planning.relevant_problem(
                self.problem, keep=[held]), optimize=True)[1]
            self._lib.load_sas_replan(extra.encode("utf-8"))
        try:
            plan = self._state.replan(self._pddl._entity_infos)
        finally:
            if extra is not None:
                self._lib.load_sas_replan(self._replan_sas.encode("utf-8"))
        return tuple(plan) if plan else None

    def plan(self) -> tuple[str, ...] | None:
        """A shortest plan (commands) from the current state; None when the goal is
        unreachable. Cached per state."""
        with ENGINE_LOCK:
            state_id = self._lib.get_state_id()
            if state_id not in self._plans:
                self._plans[state_id] = self._replan(self._held)
            return self._plans[state_id]

    def successor_plan_lengths(self) -> dict[str, int | None]:
        """For each admissible command: the length of a shortest plan from the state it leads
        to (0 when it reaches the goal, None when the goal becomes unreachable)."""
        with ENGINE_LOCK:
            current = self._lib.get_state_id()
            lengths: dict[str, int | None] = {}
            try:
                for command in self.admissible:
                    action = self._operator(command)
                    operator = self._state._operators[action.id]
                    self._lib.set_state_id(ctypes.c_int(current))
                    self._lib.apply_operator(operator.id, None)
                    successor = self._lib.get_state_id()
                    if successor not in self._plans:
                        self._plans[successor] = self._replan(self._held_after(operator.name))
                    plan = self._plans[successor]
                    lengths[command] = None if plan is None else len(plan)
            finally:
                self._lib.set_state_id(ctypes.c_int(current))
            return lengths
