"""The official AppWorld engine (PyPI ``appworld``) behind the Env contract: backend
``appworld``, suite ``appworld@1`` for users who have AppWorld's data (``APPWORLD_ROOT``).

Written against the package's documented API: ``AppWorld(task_id=..., experiment_name=...)``,
``world.task.instruction``, ``world.execute(code)`` (one Python cell in the engine's own
shell, calling ``apis.<app>.<api>``), ``world.task_completed()`` (after
``apis.supervisor.complete_task``), ``world.evaluate()`` (the official evaluator: a
``TestTracker`` whose ``success`` is task-goal completion and ``pass_percentage`` the share of
passed requirements), ``save_state``/``load_state`` and ``load_task_ids(dataset_name)``.
The package pins pydantic 1 (and FastAPI 0.110, SQLAlchemy 1.4), so it lives in its own
environment, not in this project's extras: ``APPWORLD_PYTHON`` names that interpreter (or
this one, when it has the package). The engine never runs in the harness's process: a child
process (`tasks.appworld.official_worker`, JSON lines over a pipe) runs it in a new network
namespace (`tasks.appworld.netns`), so the engine, its evaluator and the model's code cells
it executes have no network. Datasets map to splits: ``train`` -> train, ``dev`` -> dev,
``test_normal`` and ``test_challenge`` -> test.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import selectors
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from harness.core import HarnessError
from tasks.base import Comparability, StepResult, SuiteBase, TaskSpec

MAX_STEPS = 50
DATASETS = {"train": "train", "dev": "dev", "test_normal": "test", "test_challenge": "test"}
EXPERIMENT = "agent-rl-harness"
WORKER = Path(__file__).with_name("official_worker.py")
#: Seconds one engine call (a cell, an evaluation, a reset) may take before the worker is
#: stopped.
CALL_TIMEOUT_S = 600.0

COMPARABILITY = Comparability(
    engine="upstream", tasks="upstream", grader="upstream", protocol="rebuilt", data="upstream",
    comparable="comparable with published AppWorld task-goal completion when run with "
               "AppWorld's own agent loop budget (protocol: one cell per step)",
    evidence="tests/tasks/appworld/test_official.py")


def _has_package_here() -> bool:
    spec = importlib.util.find_spec("appworld")
    return spec is not None and spec.origin not in (None, "namespace")  # not a bare folder


def official_available() -> str | None:
    """None when the package and the data are there, else why not (one line)."""
    if not os.environ.get("APPWORLD_PYTHON") and not _has_package_here():
        return ("PyPI appworld is not installed (it needs its own venv: pydantic 1; "
                "set APPWORLD_PYTHON to its interpreter)")
    root = os.environ.get("APPWORLD_ROOT")
    if not root or not os.path.isdir(os.path.join(root, "data", "tasks")):
        return "APPWORLD_ROOT does not point at AppWorld's data (appworld download data)"
    return None


class AppWorldUnavailableError(HarnessError, ImportError):
    """PyPI appworld is not importable (it cannot share the harness's venv)."""


class AppWorldEngineError(HarnessError, RuntimeError):
    """The AppWorld engine process failed, timed out or reported an error."""


def appworld_python() -> str:
    """The interpreter that has PyPI appworld: ``$APPWORLD_PYTHON``, else this one."""
    python = os.environ.get("APPWORLD_PYTHON")
    if python:
        return python
    if _has_package_here():
        return sys.executable
    raise AppWorldUnavailableError(
        "the official AppWorld engine needs PyPI appworld, which pins pydantic 1 and so "
        "lives in its own venv: python3 -m venv aw && aw/bin/pip install appworld numpy && "
        "aw/bin/appworld install; then set APPWORLD_PYTHON=aw/bin/python")


class EngineProcess:
    """The engine's child process, started with no network; `call` sends one request."""

    def __init__(self, timeout_s: float = CALL_TIMEOUT_S):
        from tasks.appworld.netns import no_network_prefix

        self.timeout_s = timeout_s
        self._stderr = tempfile.TemporaryFile()
        self._process = subprocess.Popen(
            [*no_network_prefix(), appworld_python(), str(WORKER)], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=self._stderr, text=True)

    def call(self, op: str, **args: Any) -> Any:
        """The engine's reply to ``op`` (raises `AppWorldEngineError` on an error)."""
        process = self._process
        try:
            process.stdin.write(json.dumps({"op": op, **args}) + "\n")
            process.stdin.flush()
        except (BrokenPipeError, ValueError):
            raise AppWorldEngineError(
                f"the AppWorld engine process is gone: {self._tail()}") from None
        with selectors.DefaultSelector() as selector:
            selector.register(process.stdout, selectors.EVENT_READ)
            if not selector.select(self.timeout_s):
                self._stop()
                raise AppWorldEngineError(f"the AppWorld engine took over {self.timeout_s:g} s "
                                          f"on {op!r}; stopped it")
        line = process.stdout.readline()
        if not line:
            raise AppWorldEngineError(f"the AppWorld engine process exited: {self._tail()}")
        reply = json.loads(line)
        if "error" in reply:
            raise AppWorldEngineError(f"AppWorld engine, {op}: {reply['error']}")
        return reply["ok"]

    def _tail(self) -> str:
        if self._stderr.closed:
            return f"exit status {self._process.poll()}"
        self._stderr.seek(0)
        lines = self._stderr.read().decode(errors="replace").strip().splitlines()
        return lines[-1] if lines else f"exit status {self._process.poll()}"

    @property
    def alive(self) -> bool:
        return self._process.poll() is None

    def _stop(self) -> None:
        self._process.kill()
        self._process.wait()

    def close(self) -> None:
        """Ask the engine to close its world and exit; kill it if it does not."""
        if self.alive:
            with contextlib.suppress(AppWorldEngineError, OSError):
                self.call("close")
            try:
                self._process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._stop()
        for stream in (self._process.stdin, self._process.stdout, self._stderr):
            stream.close()

    def __enter__(self) -> EngineProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class AppWorldOfficialEnv:
    """One official task: cells run in the engine's shell; the official evaluator scores."""

    max_steps = MAX_STEPS
    free_form_actions = True

    def __init__(self, task_id: str, experiment_name: str = EXPERIMENT):
        self.task_id, self.experiment_name = task_id, experiment_name
        self._engine: EngineProcess | None = None
        self._steps, self._done = 0, False

    def reset(self, *, seed: int) -> tuple[str, dict[str, Any]]:
        """A fresh world of the task (AppWorld's worlds are fixed: `seed` changes nothing)."""
        appworld_python()  # the install line before anything starts
        if self._engine is None or not self._engine.alive:
            self.close()
            self._engine = EngineProcess()
        instruction = self._engine.call("reset", task_id=self.task_id,
                                        experiment_name=self.experiment_name)
        self._steps, self._done = 0, False
        return f"Task: {instruction}", {"won": False, "score": 0.0, "invalid": False}

    def step(self, action: str) -> StepResult:
        if self._engine is None or self._done:
            raise RuntimeError("step() before reset() or after the episode ended")
        from tasks.appworld.env import parse_cell

        self._steps += 1
        truncated = self._steps >= self.max_steps
        code = parse_cell(action)
        if code is None:
            return self._result("Not a Python code cell; nothing ran.", True, truncated)
        return self._result(self._engine.call("execute", code=code), False, truncated)

    def _result(self, obs: str, invalid: bool, truncated: bool) -> StepResult:
        terminated = bool(self._engine.call("completed"))
        if not (terminated or truncated):
            return StepResult(obs, 0.0, False, False,
                              {"won": False, "score": 0.0, "invalid": invalid})
        self._done = True
        tracker = self._engine.call("evaluate")
        score = 1.0 if tracker["success"] else 0.0
        return StepResult(obs, score, terminated, truncated and not terminated,
                          {"won": bool(tracker["success"]), "score": score, "invalid": invalid,
                           "pass_percentage": float(tracker["pass_percentage"])})

    def snapshot(self) -> tuple:
        return self._engine.call("save_state"), self._steps, self._done

    def restore(self, snapshot: tuple) -> None:
        state_id, self._steps, self._done = snapshot
        self._engine.call("load_state", state_id=state_id)

    def close(self) -> None:
        if self._engine is not None:
            self._engine.close()
            self._engine = None


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

        appworld_python()
        self.instructions = INSTRUCTIONS
        specs = []
        with EngineProcess() as engine:
            for dataset, split in DATASETS.items():
                for task_id in engine.call("task_ids", dataset=dataset):
                    specs.append(TaskSpec(task_id, split, dataset, {"dataset": dataset}))
        super().__init__(specs)

    def make_env(self, task_id: str) -> AppWorldOfficialEnv:
        self.task(task_id)
        return AppWorldOfficialEnv(task_id)
