"""The official AppWorld engine (PyPI ``appworld``) behind the Env contract: backend
``appworld``, suite ``appworld@1`` for users who have AppWorld's data (``APPWORLD_ROOT``).

Written against the package's documented API: ``AppWorld(task_id=..., experiment_name=...)``,
``world.task.instruction``, ``world.execute(code)`` (one Python cell in the engine's own
shell, calling ``apis.<app>.<api>``), ``world.task_completed()`` (after
``apis.supervisor.complete_task``), ``world.evaluate()`` (the official evaluator: a
``TestTracker`` whose ``success`` is task-goal completion and ``pass_percentage`` the share of
passed requirements), ``save_state``/``load_state`` and ``load_task_ids(dataset_name)``.
The package pins pydantic 1 (and FastAPI 0.110, SQLAlchemy 1.4), so it lives in its own
environment, not in this project's extras; the import is guarded. Datasets map to splits:
``train`` -> train, ``dev`` -> dev, ``test_normal`` and ``test_challenge`` -> test.
"""

from __future__ import annotations

import importlib.util
import os
from typing import Any

from harness.core import HarnessError
from tasks.base import Comparability, StepResult, SuiteBase, TaskSpec

MAX_STEPS = 50
DATASETS = {"train": "train", "dev": "dev", "test_normal": "test", "test_challenge": "test"}
EXPERIMENT = "agent-rl-harness"

COMPARABILITY = Comparability(
    engine="upstream", tasks="upstream", grader="upstream", protocol="rebuilt", data="upstream",
    comparable="comparable with published AppWorld task-goal completion when run with "
               "AppWorld's own agent loop budget (protocol: one cell per step)",
    evidence="tests/tasks/appworld/test_official.py")


def official_available() -> str | None:
    """None when the package and the data are there, else why not (one line)."""
    spec = importlib.util.find_spec("appworld")
    if spec is None or spec.origin in (None, "namespace"):  # a bare folder named appworld
        return "PyPI appworld is not installed (it needs its own venv: pydantic 1)"
    root = os.environ.get("APPWORLD_ROOT")
    if not root or not os.path.isdir(os.path.join(root, "data", "tasks")):
        return "APPWORLD_ROOT does not point at AppWorld's data (appworld download data)"
    return None


class AppWorldUnavailableError(HarnessError, ImportError):
    """PyPI appworld is not importable (it cannot share the harness's venv)."""


def _appworld() -> Any:
    try:
        import appworld
        if not hasattr(appworld, "AppWorld"):  # a folder named appworld, not the package
            raise ImportError("appworld")
    except ImportError:
        raise AppWorldUnavailableError(
            "the official AppWorld engine needs PyPI appworld, which pins pydantic 1 and so "
            "lives in its own venv: python3 -m venv aw && aw/bin/pip install appworld numpy && "
            "aw/bin/appworld install; run this module with aw/bin/python and PYTHONPATH set "
            "to this checkout") from None
    return appworld


class AppWorldOfficialEnv:
    """One official task: cells run in the engine's shell; the official evaluator scores."""

    max_steps = MAX_STEPS
    free_form_actions = True

    def __init__(self, task_id: str, experiment_name: str = EXPERIMENT):
        self.task_id, self.experiment_name = task_id, experiment_name
        self._world: Any = None
        self._steps, self._done = 0, False

    def reset(self, *, seed: int) -> tuple[str, dict[str, Any]]:
        """A fresh world of the task (AppWorld's worlds are fixed: `seed` changes nothing)."""
        appworld = _appworld()
        self.close()
        self._world = appworld.AppWorld(task_id=self.task_id,
                                        experiment_name=self.experiment_name)
        self._steps, self._done = 0, False
        return (f"Task: {self._world.task.instruction}",
                {"won": False, "score": 0.0, "invalid": False})

    def step(self, action: str) -> StepResult:
        if self._world is None or self._done:
            raise RuntimeError("step() before reset() or after the episode ended")
        from tasks.appworld.env import parse_cell

        self._steps += 1
        truncated = self._steps >= self.max_steps
        code = parse_cell(action)
        if code is None:
            return self._result("Not a Python code cell; nothing ran.", True, truncated)
        return self._result(self._world.execute(code), False, truncated)

    def _result(self, obs: str, invalid: bool, truncated: bool) -> StepResult:
        terminated = bool(self._world.task_completed())
        if not (terminated or truncated):
            return StepResult(obs, 0.0, False, False,
                              {"won": False, "score": 0.0, "invalid": invalid})
        self._done = True
        tracker = self._world.evaluate()
        score = 1.0 if tracker.success else 0.0
        return StepResult(obs, score, terminated, truncated and not terminated,
                          {"won": bool(tracker.success), "score": score, "invalid": invalid,
                           "pass_percentage": float(tracker.pass_percentage)})

    def snapshot(self) -> tuple:
        return self._world.save_state(), self._steps, self._done

    def restore(self, snapshot: tuple) -> None:
        state_id, self._steps, self._done = snapshot
        self._world.load_state(state_id)

    def close(self) -> None:
        if self._world is not None:
            self._world.close()
            self._world = None


class AppWorldOfficialSuite(SuiteBase):
    """``appworld@1``: the official datasets (needs the package and ``APPWORLD_ROOT``)."""

    name = "appworld"
    version = 1
    description = "AppWorld's official tasks, engine and evaluator (PyPI appworld + its data)"
    trivial_actions = {"complete": "```python\napis.supervisor.complete_task()\n```"}
    blocking = True
    comparability = COMPARABILITY

    def __init__(self):
        from tasks.appworld.env import INSTRUCTIONS

        appworld = _appworld()
        self.instructions = INSTRUCTIONS
        specs = []
        for dataset, split in DATASETS.items():
            for task_id in appworld.load_task_ids(dataset):
                specs.append(TaskSpec(task_id, split, dataset, {"dataset": dataset}))
        super().__init__(specs)

    def make_env(self, task_id: str) -> AppWorldOfficialEnv:
        self.task(task_id)
        return AppWorldOfficialEnv(task_id)
