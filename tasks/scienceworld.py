"""ScienceWorld through PyPI ``scienceworld`` (its bundled Scala simulator, Java 17): the
``scienceworld@1`` suite.

Tasks. ScienceWorld's 30 tasks, each a task type (``boil``, ``melt``, ..., the simulator's task
names); a task id is ``{task name}/var{variation}``; a task's variations are split as the
simulator splits them (``get_variations_train/dev/test``), listed once and cached in
``$SCIENCEWORLD_CACHE`` (default ``results/cache/scienceworld``). Version 1 plays with no
simplifications (the simulator's default ``simplificationStr=""``).

Protocol, as ``ScienceWorldEnv`` gives it:

- first observation: the task description (``Task Description: ...``) then the output of
  ``look around`` that ``ScienceWorldEnv.reset`` plays; later observations are the simulator's
  answers;
- admissible actions: the simulator's valid action-object combinations
  (``get_valid_action_object_combinations``), plus the numbers it asks for after an ambiguous
  command, plus the gold path's next command when the list omits it (the parser accepts more
  than the list names; the gold path sometimes uses such a command);
- every command goes to the simulator (``server.step``, as ``ScienceWorldEnv.step`` sends it;
  score, completion and reward computed as there); one it does not understand ("No known
  action matches that input.") changes nothing and is flagged ``invalid``;
- reward: the change of the 0-100 score (``ScienceWorldEnv``'s reward); ``info["score"]`` is the
  score; success (``won``) is score 100; the episode terminates when the simulator says the task
  is completed (won, or failed with a negative score) and is truncated after `MAX_STEPS` steps
  (handled here, not by the simulator's ``envStepLimit``).

Determinism. The simulator seeds its random number generator with the variation at every load,
but it keeps its objects in hash sets of objects without a ``hashCode`` of their own, so the
order it lists, ticks and names objects in (room contents, referents such as "book (Sherlock
Holmes)", the answers to an ambiguous command, which neighbour room an animal wanders to, the
gold path) followed the JVM's identity hash codes, which differ at every load. Its JVM
therefore starts with `JVM_OPTIONS` (every identity hash code is 1): a set's order is then its
insertion history, fixed by the variation and the commands, and a variation plays the same in
any simulator of the pool. The simulator's answers to queries are part of that history (it names
referents when it lists the valid actions), so the env asks exactly the same queries at every
step and when replaying.

The eval seed changes nothing (a variation's world is deterministic). ``oracle_action`` is the
simulator's gold path (``generateGoldPath=True``, drawn once when a simulator loads the
variation; the same at every load), played open loop: command ``k`` of the gold path while the
episode's first ``k`` commands were the gold path's (the gold path itself sends ambiguity answers
the simulator may not need, answered "No known action ..."), ``look around`` once the episode
left it. ``reset`` reloads the variation without drawing the gold path again (the simulator's
own reset draws it again: seconds on the long tasks) and plays ``look around`` as
``ScienceWorldEnv.reset`` does; ``snapshot``/``restore`` replay the episode's commands from such a
reset. Each env borrows one simulator (a JVM, a few seconds to start) from a process-wide pool
and returns it when garbage-collected.
"""

from __future__ import annotations

import atexit
import json
import logging
import os
import re
import shutil
import tempfile
import threading
import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.core import HarnessError, MissingDependencyError
from tasks.base import SPLITS, Comparability, StepResult, SuiteBase, TaskSpec

__all__ = ["ScienceWorldTaskEnv", "ScienceWorldSuite", "MAX_STEPS", "SIMPLIFICATIONS",
           "UNKNOWN_ACTION", "JVM_OPTIONS", "JavaMissing", "variation_splits", "task_names"]

log = logging.getLogger(__name__)

MAX_STEPS = 300
"""Step limit of version 1. ScienceWorld's API default (``envStepLimit=100``) is shorter than
the simulator's own gold path on about a third of the tasks (measured on three test variations
per task: up to 248 steps, mendelian-genetics-unknown-plant), so version 1 allows 300."""
SIMPLIFICATIONS = ""
"""Version 1: no simplifications."""
UNKNOWN_ACTION = "No known action matches that input."
JVM_OPTIONS = ("-XX:+UnlockExperimentalVMOptions", "-XX:hashCode=2")
"""HotSpot's identity hash code mode 2: every object's identity hash code is 1. The simulator's
hash sets of objects then iterate in insertion order, the same at every load (with the default
mode, a per-thread random number, they iterate in a different order at every load; see the
module docstring). Lookups in those sets get linear; the sets are small: loading a variation
and listing its valid actions take about as long as with the default mode."""
FALLBACK_ACTION = "look around"
_AMBIGUOUS = "Ambiguous request"
_CHOICE = re.compile(r"^\s*(\d+)\s*:", re.MULTILINE)
_POOL: list = []
_POOL_LOCK = threading.Lock()


class JavaMissing(HarnessError):
    """No Java runtime for the ScienceWorld simulator."""


def _module():
    try:
        import scienceworld
    except ImportError as exc:  # pragma: no cover - CI installs the extra
        raise MissingDependencyError("scienceworld", "scienceworld", "the ScienceWorld suite") \
            from exc
    if shutil.which("java") is None:
        raise JavaMissing("ScienceWorld needs Java 17: apt-get install -y openjdk-17-jre-headless")
    return scienceworld


def _start_simulator():
    """A ``ScienceWorldEnv`` whose JVM runs with `JVM_OPTIONS`.

    ``ScienceWorldEnv.__init__`` launches its JVM with no options, so this builds the object
    without it and does what it does (scienceworld 1.2) with ``javaopts`` added."""
    scienceworld = _module()
    from py4j.java_gateway import (CallbackServerParameters, GatewayParameters, JavaGateway,
                                   launch_gateway)
    from scienceworld.constants import BASEPATH, JAR_PATH

    port, process = launch_gateway(classpath=JAR_PATH, javaopts=list(JVM_OPTIONS),
                                   die_on_exit=True, cwd=BASEPATH, return_proc=True)
    gateway = JavaGateway(
        gateway_parameters=GatewayParameters(auto_field=True, port=port),
        callback_server_parameters=CallbackServerParameters(port=0, daemonize=True),
        java_process=process)
    gateway.java_gateway_server.resetCallbackClient(
        gateway.java_gateway_server.getCallbackClient().getAddress(),
        gateway.get_callback_server().get_listening_port())
    backend = scienceworld.ScienceWorldEnv.__new__(scienceworld.ScienceWorldEnv)
    backend._gateway = gateway
    backend.server = backend._gateway.jvm.scienceworld.runtime.pythonapi.PythonInterface()
    backend.lastStepScore, backend.taskName, backend.envStepLimit = 0, "", 10**9
    backend.clear_run_histories()
    backend.goldPathGenerated = False
    backend._obj_tree_tempdir = tempfile.TemporaryDirectory()
    return backend


def _acquire():
    """A simulator from the pool, or a new one (starts a JVM)."""
    with _POOL_LOCK:
        if _POOL:
            return _POOL.pop()
    backend = _start_simulator()
    backend.loaded, backend.gold = None, []
    return backend


def _release(backend) -> None:
    with _POOL_LOCK:
        _POOL.append(backend)


@atexit.register
def _close_pool() -> None:
    with _POOL_LOCK:
        while _POOL:
            try:
                _POOL.pop().close()
            except Exception:  # pragma: no cover - interpreter shutdown
                pass


def _cache_root() -> Path:
    return Path(os.environ.get("SCIENCEWORLD_CACHE") or "results/cache/scienceworld")


def task_names() -> list[str]:
    """The simulator's 30 task names, in its order (``tasks.json``)."""
    _module()
    from scienceworld.constants import TASKS

    return [task["task_name"] for task in TASKS]


def variation_splits() -> dict[str, dict[str, list[int]]]:
    """``{task name: {"train"|"dev"|"test": variations}}`` as the simulator splits them;
    computed once with one simulator and cached per ``scienceworld`` version."""
    version = _module().__version__
    path = _cache_root() / f"variations-{version}.json"
    if path.is_file():
        return json.loads(path.read_text())
    backend = _acquire()
    try:
        splits = {}
        for name in task_names():
            backend.load(name, 0, SIMPLIFICATIONS)
            backend.loaded, backend.gold = None, []
            splits[name] = {"train": list(backend.get_variations_train()),
                            "dev": list(backend.get_variations_dev()),
                            "test": list(backend.get_variations_test())}
    finally:
        _release(backend)
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(".partial")
    partial.write_text(json.dumps(splits))
    partial.replace(path)
    return splits


def _simulate(backend, text: str) -> tuple[str, int, bool]:
    """``ScienceWorldEnv.step`` without the extras this adapter does not use (look, inventory,
    task description, the valid list after a command the simulator did not understand):
    ``(observation, score 0-100, completed)``; a negative score completes the task, as there."""
    observation = backend.server.step(text)
    score = int(round(100 * backend.server.getScore()))
    completed = bool(backend.server.getCompleted()) or score < 0
    return observation, score, completed


@dataclass(frozen=True)
class _Snapshot:
    history: tuple[str, ...]
    steps: int
    done: bool
    observation: str
    info: dict
    valid: tuple[str, ...]


class ScienceWorldTaskEnv:
    """One variation of one ScienceWorld task behind the Env contract."""

    def __init__(self, task_name: str, variation: int, *, max_steps: int = MAX_STEPS,
                 simplifications: str = SIMPLIFICATIONS):
        self.task_name, self.variation = task_name, variation
        self.simplifications = simplifications
        self.max_steps = max_steps
        self._backend = None
        self._history: list[str] = []
        self._steps, self._done = 0, False
        self._observation, self._info_cache, self._valid = "", {}, []

    def _ensure_backend(self):
        if self._backend is None:
            self._backend = _acquire()
            weakref.finalize(self, _release, self._backend)
        backend = self._backend
        key = (self.task_name, self.variation, self.simplifications)
        if backend.loaded != key:
            # the gold agent caches its room search paths (by start room) for the life of the
            # JVM, from whichever world asked first: drawn from this world, as in a fresh JVM
            backend._gateway.jvm.scienceworld.goldagent.PathFinder \
                .precomputedExhaustivePaths().clear()
            backend.load(self.task_name, self.variation, self.simplifications,
                         generateGoldPath=True)
            backend.loaded = key
            backend.gold = list(backend.get_gold_action_sequence())
        return backend

    def _admissible(self, observation: str, valid: list[str]) -> list[str]:
        actions = list(valid)
        if observation.startswith(_AMBIGUOUS):
            actions += [m for m in _CHOICE.findall(observation) if m not in actions]
        gold = self._gold_action()
        if gold is not None and gold not in actions:
            actions.append(gold)
        return actions

    def _gold_action(self) -> str | None:
        gold, k = self._backend.gold, len(self._history)
        if k < len(gold) and self._history == gold[:k]:
            return gold[k]
        return None

    def _make_info(self, score: int, invalid: bool, valid: list[str], moves: int) -> dict:
        return {"won": score >= 100, "score": float(score), "invalid": invalid,
                "admissible_actions": self._admissible(self._observation, valid),
                "steps": self._steps, "moves": int(moves)}

    def _reload(self, backend) -> tuple[str, dict[str, Any]]:
        """The variation as loaded afresh, after ``look around`` (``ScienceWorldEnv.reset``
        without drawing the gold path again)."""
        backend.server.load(self.task_name, self.variation, self.simplifications, False)
        backend.lastStepScore = 0
        observation, _, _, info = backend.step(FALLBACK_ACTION)
        return observation, info

    def _play(self, backend, text: str) -> tuple[str, int, bool, bool, list[str], int]:
        """One command and the queries that follow it (the same in `step` and `restore`: the
        simulator's naming of objects depends on them): ``(observation, score, completed,
        invalid, valid actions, moves)``."""
        observation, score, completed = _simulate(backend, text)
        invalid = observation.strip() == UNKNOWN_ACTION
        if invalid:
            valid = self._valid
        else:
            valid = list(backend.get_valid_action_object_combinations())
        return observation, score, completed, invalid, valid, backend.get_num_moves()

    def reset(self, *, seed: int) -> tuple[str, dict[str, Any]]:
        backend = self._ensure_backend()
        observation, info = self._reload(backend)
        self._history, self._steps, self._done = [], 0, False
        self._observation = f"{info['taskDesc']}\n\n{observation}"
        self._valid = list(info["valid"])
        self._info_cache = self._make_info(int(info["score"]), False, self._valid,
                                           info["moves"])
        return self._observation, dict(self._info_cache)

    def step(self, action: str) -> StepResult:
        if self._done:
            raise HarnessError("step() called after the episode ended; call reset() first")
        backend = self._ensure_backend()
        text = action if isinstance(action, str) else ""
        observation, score, completed, invalid, valid, moves = self._play(backend, text)
        reward = score - backend.lastStepScore
        backend.lastStepScore = score
        self._history.append(text)
        self._valid = valid
        self._steps += 1
        self._observation = observation
        truncated = not completed and self._steps >= self.max_steps
        self._done = completed or truncated
        self._info_cache = self._make_info(score, invalid, valid, moves)
        return StepResult(observation, float(reward), completed, truncated,
                          dict(self._info_cache))

    def snapshot(self) -> _Snapshot:
        return _Snapshot(tuple(self._history), self._steps, self._done, self._observation,
                         dict(self._info_cache), tuple(self._valid))

    def restore(self, snapshot: _Snapshot) -> None:
        backend = self._ensure_backend()
        _, info = self._reload(backend)
        self._valid = list(info["valid"])
        for command in snapshot.history:
            _, score, _, _, self._valid, _ = self._play(backend, command)
            backend.lastStepScore = score
        self._history = list(snapshot.history)
        self._steps, self._done = snapshot.steps, snapshot.done
        self._observation, self._info_cache = snapshot.observation, dict(snapshot.info)
        self._valid = list(snapshot.valid)

    def oracle_action(self) -> str:
        """The gold path's next command (``look around`` once off the gold path)."""
        self._ensure_backend()
        gold = self._gold_action()
        return FALLBACK_ACTION if gold is None else gold

    def gold_path(self) -> list[str]:
        """The gold path of the simulator's current load of this variation."""
        return list(self._ensure_backend().gold)


class ScienceWorldSuite(SuiteBase):
    """ScienceWorld's 30 tasks; variations split as the simulator splits them."""

    name = "scienceworld"
    version = 1
    comparability = Comparability(
        engine="upstream", tasks="upstream", grader="upstream", protocol="rebuilt",
        data="upstream", comparable="comparable with published ScienceWorld scores on the "
        "same split and step limit (300 here)")
    description = "ScienceWorld (PyPI scienceworld simulator, Java), 30 tasks, no simplifications"
    trivial_actions = {"look around": "look around", "inventory": "inventory"}
    blocking = True
    instructions = (
        "You are an agent in a simulated world of science experiments. Complete the task "
        "described in the first observation. Each turn, answer with exactly one command, for "
        "example: look around, open door to kitchen, go to kitchen, pick up thermometer, "
        "focus on substance in metal pot, move metal pot to stove, activate stove, "
        "wait, inventory. Commands the simulator does not understand change nothing.")

    def __init__(self) -> None:
        _module()
        from scienceworld.constants import TASKS

        paper_ids = {task["task_name"]: task["task_id"] for task in TASKS}
        specs = []
        for name, splits in variation_splits().items():
            for split in SPLITS:
                for variation in splits[split]:
                    specs.append(TaskSpec(f"{name}/var{variation}", split, name,
                                          {"variation": variation, "task_id": paper_ids[name],
                                           "max_steps": MAX_STEPS,
                                           "simplifications": SIMPLIFICATIONS}))
        super().__init__(specs)

    def make_env(self, task_id: str) -> ScienceWorldTaskEnv:
        spec = self.task(task_id)
        return ScienceWorldTaskEnv(spec.task_type, spec.metadata["variation"], max_steps=MAX_STEPS)
