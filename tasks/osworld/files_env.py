"""OSWorld's headless `files` backend: an official task in a sandbox, no screen.

The task's setup steps that need no GUI run in a Debian root filesystem (`OSWORLD_RECIPE`)
as the VM user (home ``/home/user``): ``execute`` and ``command`` run; ``launch``, ``open``,
``activate_window`` and keystrokes sent with ``pyautogui`` leave nothing on disk and are
skipped; ``sleep`` passes no time. The agent acts with shell and Python through text actions
(their output, control characters escaped, is the observation) and ends with ``DONE`` (or
``FAIL`` to declare the task infeasible, as upstream); the official evaluator functions then
score the sandbox's state (`tasks.osworld.grading`). Expected values stay on the host: nothing
of the evaluator is written into the sandbox. The lifecycle, snapshots and the command log
(``info["commands"]``) are `tasks.sandboxed_env.SandboxedEnv`'s.
"""

from __future__ import annotations

import logging
import re
import shlex
from pathlib import Path
from typing import Any

from tasks.base import StepResult
from tasks.osworld.capability import is_gui_input
from tasks.osworld.grading import FAIL, evaluate
from tasks.osworld.loader import OSWorldTask
from tasks.osworld.vm import USER_ENV, USER_HOME, run_as_user
from tasks.sandbox import AGENT_UID, BASE_RECIPE, Limits, Sandbox, build_rootfs
from tasks.sandboxed_env import SandboxedEnv

logger = logging.getLogger(__name__)

MAX_STEPS = 15  # upstream's default step budget (run.py --max_steps 15)
DONE, WAIT = "DONE", "WAIT"
CLIENT_PASSWORD = "password"  # upstream's {CLIENT_PASSWORD} placeholder value for the VM user

_SUDO_SHIM = ("#!/bin/sh\n# OSWorld setup steps run 'echo password | sudo -S CMD'; here CMD "
              "runs as the caller.\nwhile [ $# -gt 0 ]; do case \"$1\" in -u|-g) shift 2;; "
              "--) shift; break;; -*) shift;; *) break;; esac; done\nexec \"$@\"\n")

OSWORLD_RECIPE = BASE_RECIPE.extend(
    "osworld-files",
    packages=("python-is-python3", "libglib2.0-bin", "gsettings-desktop-schemas", "gnome-shell-common", "jq",
              "diffutils", "debianutils"),
    customize=(f"printf '%s' {shlex.quote(_SUDO_SHIM)} > /usr/local/bin/sudo && "
               "chmod 755 /usr/local/bin/sudo",),
)

_FENCE = re.compile(r"^```(bash|sh|shell|python|py)?[ \t]*\n(.*?)\n?```$", re.S)
_HOME_DIRS = ("Desktop", "Documents", "Downloads", "Pictures", "Music", "Videos", ".config")

INSTRUCTIONS = (
    "You operate an Ubuntu-like computer as its user (home /home/user) through a shell: there "
    "is no screen and no GUI application; change application settings through their files or "
    "command-line tools. Each turn send exactly one action:\n"
    "- a fenced block ```bash\\n...\\n``` or ```python\\n...\\n``` runs on the machine (you see "
    "its output);\n- DONE when the task is complete;\n- FAIL when the task cannot be done "
    "(infeasible);\n- WAIT to do nothing.")


def parse_action(action: str) -> tuple[str, str] | None:
    """``(kind, code)`` with kind ``bash``/``python``/``DONE``/``FAIL``/``WAIT``; None if
    the text is not an action."""
    text = action.strip()
    if text.upper() in (DONE, FAIL, WAIT):
        return text.upper(), ""
    match = _FENCE.match(text)
    if not match:
        return None
    language = "python" if match.group(1) in ("python", "py") else "bash"
    return language, match.group(2)


def run_step(sandbox: Sandbox, step: dict, cache_dir: Path | None) -> None:
    """One setup/postconfig step, reduced to what it leaves on disk (see the module doc)."""
    kind, params = step.get("type"), step.get("parameters") or {}
    if kind not in ("execute", "command"):
        return  # launch/open/activate_window/sleep: no on-disk effect
    command = params.get("command", "")
    if is_gui_input(command):
        return
    if isinstance(command, str):
        command = command.replace("{CLIENT_PASSWORD}", CLIENT_PASSWORD)
    result = run_as_user(sandbox, command, bool(params.get("shell", False)))
    if result.returncode:
        logger.debug("setup step exited %s: %s", result.returncode, result.error[-300:])
    if cache_dir is not None and params.get("stdout"):
        (cache_dir / params["stdout"]).write_text(result.output)
    if cache_dir is not None and params.get("stderr"):
        (cache_dir / params["stderr"]).write_text(result.error)


class OSWorldFilesEnv(SandboxedEnv):
    """One official task on the headless backend (Env; snapshot/restore; oracle)."""

    max_steps = MAX_STEPS
    free_form_actions = True

    def __init__(self, task: OSWorldTask, solution: tuple[str, ...] = (),
                 limits: Limits = Limits(wall_s=60.0)):
        super().__init__()
        self.task, self.solution, self.limits = task, solution, limits
        self._actions: list[str] = []

    # ---- episode ----------------------------------------------------------------------------
    def _open_sandbox(self, seed: int) -> Sandbox:
        """The task's machine: the user's home folders, then the task's setup steps."""
        rootfs = build_rootfs(OSWORLD_RECIPE)
        sandbox = Sandbox(rootfs, limits=self.limits, workdir=USER_HOME, env=USER_ENV)
        try:
            dirs = " ".join(shlex.quote(f"{USER_HOME}/{d}") for d in _HOME_DIRS)
            sandbox.run(f"mkdir -p {dirs} && chown -R {AGENT_UID}:{AGENT_UID} {USER_HOME}",
                        user="root", cwd="/")
            for step in self.task.config:
                run_step(sandbox, dict(step), None)
        except BaseException:
            sandbox.close()
            raise
        return sandbox

    def _begin(self) -> tuple[str, dict[str, Any]]:
        self._actions = []
        obs = (f"{INSTRUCTIONS}\n\nTask ({self.task.domain}): {self.task.instruction}")
        return obs, self._info(0.0, invalid=False)

    def _info(self, score: float, *, invalid: bool) -> dict[str, Any]:
        return {"won": score >= 1.0, "score": float(score), "invalid": invalid,
                "infeasible_task": self.task.infeasible}

    def _act(self, action: str) -> StepResult:
        parsed = parse_action(action)
        truncated = self.out_of_steps
        self._actions.append(parsed[0] if parsed and parsed[0] in (DONE, FAIL, WAIT)
                             else "CODE" if parsed else "INVALID")
        if parsed is None:
            obs = "Not an action: send a ```bash``` or ```python``` block, DONE, FAIL or WAIT."
            return self._finish(obs, invalid=True, terminal=False, truncated=truncated)
        kind, code = parsed
        if kind in (DONE, FAIL):
            return self._finish(f"{kind} received.", invalid=False, terminal=True,
                                truncated=False)
        obs = "Waited." if kind == WAIT else self._run_code(kind, code)
        return self._finish(obs, invalid=False, terminal=False, truncated=truncated)

    def _run_code(self, kind: str, code: str) -> str:
        if kind == "python":
            return self._run_for_agent(code, script="python3 -", stdin=code, cwd=USER_HOME)
        return self._run_for_agent(code, cwd=USER_HOME)

    def _finish(self, obs: str, *, invalid: bool, terminal: bool,
                truncated: bool) -> StepResult:
        if not (terminal or truncated):
            return StepResult(obs, 0.0, False, False, self._info(0.0, invalid=invalid))
        score = self.score()
        return StepResult(obs, score, terminal, truncated and not terminal,
                          self._info(score, invalid=invalid))

    def score(self) -> float:
        """The official evaluation of the current state (runs the postconfig steps)."""
        sandbox = self._require()

        def postconfig(cache_dir: Path) -> None:
            for step in self.task.postconfig:
                run_step(sandbox, dict(step), cache_dir)

        try:
            return evaluate(self.task, sandbox, self._actions, postconfig)
        except Exception as exc:  # noqa: BLE001 - an official metric crashing scores 0
            logger.warning("OSWorld evaluator failed on %s: %r", self.task.id, exc)
            return 0.0

    # ---- capabilities -----------------------------------------------------------------------
    def _save_state(self) -> tuple[str, ...]:
        return tuple(self._actions)

    def _load_state(self, state: tuple[str, ...]) -> None:
        self._actions = list(state)

    def oracle_action(self) -> str:
        """The project's reference solution, one action per step (``DONE`` after it)."""
        k = len(self._actions)
        return self.solution[k] if k < len(self.solution) else DONE
