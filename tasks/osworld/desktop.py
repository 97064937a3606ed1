"""OSWorld's `desktop` backend: upstream's ``DesktopEnv`` (a VM through one of its providers).

For users who have an OSWorld VM (VMware, VirtualBox, Docker/KVM, AWS, ...): the official
environment runs the task's setup, the agent's actions and the official evaluation unchanged.
Observations pass through: the text observation is the accessibility tree (when the provider
gives one) after the instruction, and `last_observation` keeps upstream's whole observation
dict (``screenshot`` PNG bytes, ``accessibility_tree``, ``terminal``, ``instruction``) for
multimodal policies. Actions pass through: ``pyautogui`` code (``action_space="pyautogui"``)
or a ``computer_13`` action as JSON, plus ``WAIT``/``DONE``/``FAIL``. Needs the full
``desktop-env`` install (its declared dependencies) and a VM; nothing of this runs here, so the
import is guarded and the tests check only the guard and the action parsing.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from harness.core import MissingDependencyError
from tasks.base import StepResult

SPECIAL_ACTIONS = ("WAIT", "DONE", "FAIL")


@dataclass(frozen=True)
class DesktopConfig:
    """Arguments of upstream's ``DesktopEnv(...)``; defaults are upstream's."""

    provider_name: str = "vmware"
    path_to_vm: str | None = None
    region: str | None = None
    snapshot_name: str = "init_state"
    action_space: str = "pyautogui"
    headless: bool = True
    require_a11y_tree: bool = True
    max_steps: int = 15


def load_desktop_env() -> type:
    """Upstream's ``DesktopEnv`` class, or a one-line error naming the install."""
    try:
        from desktop_env.desktop_env import DesktopEnv
    except ImportError as exc:
        raise MissingDependencyError(
            "desktop-env", "osworld", f"the OSWorld VM backend (full install with its "
            f"dependencies and a VM provider; {exc.name or exc} missing)") from None
    return DesktopEnv


def parse_desktop_action(action: str, action_space: str) -> Any:
    """The action upstream's ``DesktopEnv.step`` takes: a special string, pyautogui code, or a
    ``computer_13`` dict parsed from JSON. Raises ValueError when the text is not one."""
    text = action.strip()
    if text.upper() in SPECIAL_ACTIONS:
        return text.upper()
    if action_space == "computer_13":
        value = json.loads(text)
        if not isinstance(value, dict) or "action_type" not in value:
            raise ValueError("a computer_13 action is a JSON object with 'action_type'")
        return value
    if not text:
        raise ValueError("empty action")
    compile(text, "<action>", "exec")  # pyautogui code must at least be Python
    return text


class OSWorldDesktopEnv:
    """One official task on upstream's ``DesktopEnv`` (Env protocol; needs a VM)."""

    def __init__(self, task_config: Mapping[str, Any], config: DesktopConfig = DesktopConfig()):
        self.task_config, self.config = dict(task_config), config
        self.max_steps = config.max_steps
        self._env: Any = None
        self._steps = 0
        self.last_observation: Mapping[str, Any] = {}

    def _text(self, obs: Mapping[str, Any]) -> str:
        tree = obs.get("accessibility_tree") or ""
        return f"Task: {self.task_config['instruction']}\n\n{tree}"

    def reset(self, *, seed: int) -> tuple[str, dict[str, Any]]:
        if self._env is None:
            cls = load_desktop_env()
            self._env = cls(provider_name=self.config.provider_name,
                            path_to_vm=self.config.path_to_vm, region=self.config.region,
                            snapshot_name=self.config.snapshot_name,
                            action_space=self.config.action_space,
                            headless=self.config.headless,
                            require_a11y_tree=self.config.require_a11y_tree)
        obs = self._env.reset(task_config=self.task_config, seed=seed)
        self.last_observation, self._steps = obs, 0
        return self._text(obs), {"won": False, "score": 0.0, "invalid": False}

    def step(self, action: str) -> StepResult:
        self._steps += 1
        truncated = self._steps >= self.max_steps
        try:
            parsed = parse_desktop_action(action, self.config.action_space)
        except (ValueError, SyntaxError):
            return StepResult("Not an action.", 0.0, False, truncated,
                              {"won": False, "score": 0.0, "invalid": True})
        obs, _, done, info = self._env.step(parsed)
        self.last_observation = obs
        if not (done or truncated):
            return StepResult(self._text(obs), 0.0, False, False,
                              {"won": False, "score": 0.0, "invalid": False})
        score = float(self._env.evaluate())
        return StepResult(self._text(obs), score, bool(done), truncated and not done,
                          {"won": score >= 1.0, "score": score, "invalid": False})

    def close(self) -> None:
        if self._env is not None:
            self._env.close()
            self._env = None
