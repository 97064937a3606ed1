"""One ``appworld-lite`` task: Python cells in the sandbox against a seeded world.

Protocol as AppWorld's: each action is a Python code cell (a fenced ```python block or bare
code) that may call ``apis.<app>.<api>(...)``; its printed output is the observation (control
characters other than newline and tab escaped by `escape_controls`); the episode ends when the
code calls ``apis.supervisor.complete_task(...)`` or at the step limit.
Definitions and picklable variables carry over between cells (AppWorld keeps one IPython
shell; here each cell is a fresh process, so open files, sockets and generators do not).
A cell that is not valid Python is invalid and changes nothing. The grader compares the
world's database before and after (`tasks.appworld.grading`). The lifecycle, snapshots and
the command log (``info["commands"]``: each cell's code and raw output) are
`tasks.sandboxed_env.SandboxedEnv`'s. A task that declares its scope (`tasks.base.Scope`)
reports on the graded step the entries the episode acted on (``info["scope"]``) and the
sub-goals it reached (``info["subgoals"]``), as `tasks.base.Scope` describes.
"""

from __future__ import annotations

import ast
import hashlib
import os
import re
import sqlite3
import tempfile
from pathlib import Path
from typing import Any

from harness.core import make_rng
from tasks.appworld.apps import APP_DESCRIPTIONS
from tasks.appworld.grading import Expectation, acted_entries, grade, subgoals_reached
from tasks.appworld.server import CLIENT_DIR, SOCKET_DIR, ApiServer, client_files
from tasks.appworld.world import NOW
from tasks.base import Scope, StepResult
from tasks.sandbox import BASE_RECIPE, Bind, CommandResult, Limits, Sandbox, build_rootfs
from tasks.sandboxed_env import SandboxedEnv

MAX_STEPS = 30
CELL_TIMEOUT_S = 30.0
_FENCE = re.compile(r"^```(?:python|py)?[ \t]*\n(.*?)\n?```$", re.S)

INSTRUCTIONS = (
    "You are an assistant acting for your supervisor through app APIs. Each turn, send one "
    "Python code cell (a ```python block); it runs with `apis` defined, and you see what it "
    "prints. Call APIs as apis.<app>.<api>(**kwargs). Discover APIs with "
    "apis.api_docs.show_app_descriptions(), apis.api_docs.show_api_descriptions(app_name=...) "
    "and apis.api_docs.show_api_doc(app_name=..., api_name=...). Account passwords: "
    "apis.supervisor.show_account_passwords(); log in with your supervisor's email. Finish "
    "with apis.supervisor.complete_task() (pass answer=... when the task asks a question). "
    "Change nothing the task does not ask for.")


def parse_cell(action: str) -> str | None:
    """The code of a cell, or None when the text is not valid Python."""
    text = action.strip()
    match = _FENCE.match(text)
    code = match.group(1) if match else text
    if not code.strip():
        return None
    try:
        ast.parse(code)
    except SyntaxError:
        return None
    return code


class AppWorldLiteEnv(SandboxedEnv):
    """Env for one task (snapshot/restore; the oracle plays the reference program)."""

    max_steps = MAX_STEPS
    free_form_actions = True

    def __init__(self, instruction: str, world: bytes, solution: str, expectation: Expectation,
                 limits: Limits = Limits(wall_s=CELL_TIMEOUT_S), *, scope: Scope | None = None):
        super().__init__()
        self.instruction, self.solution, self.expectation = instruction, solution, expectation
        self.scope = scope
        self._world, self.limits = world, limits
        self._server: ApiServer | None = None
        self._start: sqlite3.Connection | None = None

    def _open_sandbox(self, seed: int) -> Sandbox:
        """A fresh world and its API server; `seed` (with the world) draws the episode's
        access tokens."""
        db = sqlite3.connect(":memory:", check_same_thread=False)
        db.deserialize(self._world)
        db.execute("UPDATE task SET instruction=?", (self.instruction,))
        db.commit()
        self._start = sqlite3.connect(":memory:", check_same_thread=False)
        self._start.deserialize(db.serialize())
        world = hashlib.blake2b(self._world, digest_size=16).hexdigest()
        self._server = ApiServer(db, NOW, make_rng("appworld-lite tokens", world, seed))
        rootfs = build_rootfs(BASE_RECIPE)
        sandbox = Sandbox(rootfs, limits=self.limits,
                          binds=[Bind(self._server.socket_dir, SOCKET_DIR)])
        try:
            with tempfile.TemporaryDirectory() as staging:
                os.chmod(staging, 0o755)  # the agent must read the client (tar keeps modes)
                for path, text in client_files().items():
                    (Path(staging) / Path(path).name).write_text(text)
                    os.chmod(Path(staging) / Path(path).name, 0o644)
                sandbox.copy_in(Path(staging), CLIENT_DIR)
        except BaseException:
            sandbox.close()
            raise
        return sandbox

    def _begin(self) -> tuple[str, dict[str, Any]]:
        apps = ", ".join(APP_DESCRIPTIONS)
        return (f"{INSTRUCTIONS}\n\nApps: {apps}.\nTask: {self.instruction}",
                self._info(0.0, invalid=False, tests=[]))

    @staticmethod
    def _info(score: float, *, invalid: bool, tests: list) -> dict[str, Any]:
        return {"won": score >= 1.0, "score": float(score), "invalid": invalid,
                "tests_passed": sum(ok for _, ok in tests), "tests_total": len(tests),
                "failed_tests": [name for name, ok in tests if not ok]}

    def _completed(self) -> bool:
        assert self._server is not None
        with self._server.lock:
            (status,) = self._server.db.execute("SELECT status FROM task").fetchone()
        return status != "active"

    def _act(self, action: str) -> StepResult:
        truncated = self.out_of_steps
        code = parse_cell(action)
        if code is None:
            obs = "Not a Python code cell; nothing ran."
            return self._end(obs, invalid=True, truncated=truncated)
        obs = self._run_for_agent(code, script=f"python3 {CLIENT_DIR}/run_cell.py", stdin=code)
        return self._end(obs, invalid=False, truncated=truncated)

    def _render(self, output: str, result: CommandResult) -> str:
        """What the cell printed (escaped), and whether it timed out."""
        return output + ("\n[the cell timed out]" if result.timed_out else "")

    def _end(self, obs: str, *, invalid: bool, truncated: bool) -> StepResult:
        terminated = self._completed()
        if not (terminated or truncated):
            return StepResult(obs, 0.0, False, False, self._info(0.0, invalid=invalid, tests=[]))
        tests = self.tests()
        score = 1.0 if all(ok for _, ok in tests) else 0.0
        return StepResult(obs, score, terminated, truncated and not terminated,
                          {**self._info(score, invalid=invalid, tests=tests),
                           **self.scope_info()})

    def scope_info(self) -> dict[str, Any]:
        """``scope`` (declared entries, those acted on) and ``subgoals`` (each reached or
        not) on the world's current state; empty when the task declares no scope."""
        if self.scope is None:
            return {}
        assert self._server is not None and self._start is not None
        with self._server.lock:
            acted = acted_entries(self._start, self._server.db, self.scope.entries)
            reached = subgoals_reached(self._start, self._server.db, self.expectation)
        return {"scope": {"entries": dict(self.scope.entries), "acted": acted},
                "subgoals": {goal: reached[goal] for goal in self.scope.subgoals}}

    def tests(self) -> list[tuple[str, bool]]:
        """The grader's requirement tests on the world's current state."""
        assert self._server is not None and self._start is not None
        with self._server.lock:
            return grade(self._start, self._server.db, self.expectation)

    # ---- capabilities -----------------------------------------------------------------------
    def _save_state(self) -> bytes:
        """The world's database (the API server's state)."""
        assert self._server is not None
        with self._server.lock:
            return self._server.db.serialize()

    def _load_state(self, state: bytes) -> None:
        assert self._server is not None
        with self._server.lock:
            self._server.db.deserialize(state)

    def oracle_action(self) -> str:
        """The reference solution: one program that solves the task and completes it."""
        return f"```python\n{self.solution}```"

    def _release(self) -> None:
        if self._server is not None:
            self._server.close()
            self._server = None
