"""`SandboxedEnv`: the shared lifecycle on a tiny family over a real sandbox (the max-steps
rule, escaping at the one choke point with the raw output logged, snapshots of the layer, the
log and the family's state, reset closing the previous episode), and the four ported families
replaying recorded actions to the observations, rewards and infos their pre-port code gave.

The golden file was recorded from the families before they were ported; re-record it only on
purpose (a family's observations changed and its suite version was bumped):
``python tests/tasks/test_sandboxed_env.py --record``.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest

from tasks import check_env, get_suite
from tasks.base import StepResult
from tasks.sandbox import (BASE_RECIPE, Limits, Sandbox, SandboxError, build_rootfs,
                           sandbox_available)
from tasks.sandboxed_env import COMMANDS_INFO_KEY, SandboxedEnv, SandboxedSnapshot

NO_SANDBOX = sandbox_available()
needs_sandbox = pytest.mark.skipif(NO_SANDBOX is not None, reason=f"no sandbox: {NO_SANDBOX}")

GOLDEN = Path(__file__).parent / "golden" / "sandboxed_replays.json"
SNAPSHOT, RESTORE = "<snapshot>", "<restore>"
CONTROLS = "printf 'a\\033[31mred\\r\\x01\\x7f\\xc2\\x85 done'"
REPLAYS: dict[str, tuple[str, str, list[str]]] = {
    "terminal": ("terminal-lite@2", "count-words", [
        "echo hi", CONTROLS, "fi fi (", "", SNAPSHOT, "cd /tmp && export Q=3", "pwd; echo $Q",
        RESTORE, "pwd; echo $Q", "false", "ls /nonexistent\nsubmit"]),
    "swebench": ("swe-lite@2", "swe-lite__textkit-1", [
        json.dumps({"tool": "bash", "command": CONTROLS}), "nonsense",
        '{"tool": "view", "path": "."}', SNAPSHOT,
        '{"tool": "create", "path": "x.txt", "content": "hi"}',
        '{"tool": "bash", "command": "cat x.txt; git status --short"}', RESTORE,
        '{"tool": "bash", "command": "cat x.txt; git status --short"}', "submit"]),
    "osworld": ("osworld-files@1", "3720f614-37fd-4d04-8a6b-76f54f8c222d", [
        f"```bash\n{CONTROLS}\n```", "nonsense", "WAIT", SNAPSHOT,
        "```python\nprint('py\\x1b', 1+1)\n```", "```bash\ntouch ~/Desktop/z; ls ~/Desktop\n```",
        RESTORE, "```bash\nls ~/Desktop\n```", "FAIL"]),
    "appworld": ("appworld-lite@2", "create-note-00", [
        "print('a\\x1b[1mb\\r', 3)", "this is not python(", SNAPSHOT, "x = 5\nprint(x)", RESTORE,
        "print(globals().get('x'))", "print(apis.supervisor.show_profile())",
        "apis.supervisor.complete_task()"]),
}


def _info(info: dict[str, Any]) -> str:
    return json.dumps({k: v for k, v in info.items() if k != COMMANDS_INFO_KEY}, sort_keys=True)


def _row(action: str, result: StepResult) -> list:
    return [action, result.observation, result.reward, result.terminated, result.truncated,
            _info(result.info)]


def replay(suite_id: str, task_id: str, actions: list[str]) -> dict[str, list]:
    """The oracle's episode and `actions` (with snapshot/restore markers) from seed 0: each
    step as ``[action, observation, reward, terminated, truncated, info without commands]``."""
    env = get_suite(suite_id).make_env(task_id)
    try:
        observation, info = env.reset(seed=0)
        oracle: list = [[observation, _info(info)]]
        for _ in range(40):
            action = env.oracle_action()
            oracle.append(_row(action, result := env.step(action)))
            if result.terminated or result.truncated:
                break
        observation, info = env.reset(seed=0)
        played: list = [[observation, _info(info)]]
        snapshot = None
        for action in actions:
            if action == SNAPSHOT:
                snapshot = env.snapshot()
                continue
            if action == RESTORE:
                env.restore(snapshot)
                continue
            played.append(_row(action, result := env.step(action)))
            if result.terminated or result.truncated:
                break
        return {"oracle": oracle, "actions": played}
    finally:
        env.close()


@needs_sandbox
@pytest.mark.parametrize("family", sorted(REPLAYS))
def test_ported_families_replay_their_recorded_episodes(family):
    recorded = json.loads(GOLDEN.read_text())[family]
    assert replay(*REPLAYS[family]) == recorded


def test_command_output_is_escaped_only_at_the_base():
    tasks = Path(__file__).parents[2] / "tasks"
    use = re.compile(r"\bescape_controls\s*\(|^\s*(from|import)\b.*\bescape_controls\b", re.M)
    users = sorted(str(p.relative_to(tasks)) for p in tasks.rglob("*.py")
                   if use.search(p.read_text()))
    assert users == ["sandboxed_env.py"]


# ---- the base on a tiny family --------------------------------------------------------------

class ShellEnv(SandboxedEnv):
    """A command per step in ``/tmp``; ``end`` terminates; ``<<...`` is invalid. Its own state:
    how many commands failed."""

    def __init__(self, limits: Limits = Limits(wall_s=5.0), max_steps: int = 3):
        super().__init__()
        self.max_steps, self.limits = max_steps, limits
        self.failures, self.released = 0, 0

    def _open_sandbox(self, seed: int) -> Sandbox:
        return Sandbox(build_rootfs(BASE_RECIPE), limits=self.limits, workdir="/tmp")

    def _begin(self) -> tuple[str, dict[str, Any]]:
        self.failures = 0
        return "a shell", self._info(False)

    def _info(self, invalid: bool) -> dict[str, Any]:
        return {"won": False, "score": 0.0, "invalid": invalid, "failures": self.failures}

    def _act(self, action: str) -> StepResult:
        if action == "end":
            return StepResult("ended", 0.0, True, False, self._info(False))
        if action.startswith("<<"):
            return StepResult("invalid", 0.0, False, self.out_of_steps, self._info(True))
        observation = self._run_for_agent(action, script=f"cd /tmp; {action}")
        self.failures += self.command_log[-1].status != "ok"
        return StepResult(observation, 0.0, False, self.out_of_steps, self._info(False))

    def _save_state(self) -> int:
        return self.failures

    def _load_state(self, state: int) -> None:
        self.failures = state

    def _release(self) -> None:
        self.released += 1


@pytest.fixture
def shell():
    env = ShellEnv()
    yield env
    env.close()


@needs_sandbox
def test_the_tiny_family_passes_check_env(shell):
    check_env(shell, n_steps=5)


@needs_sandbox
def test_output_is_escaped_in_the_observation_and_raw_in_the_log(shell):
    shell.reset(seed=0)
    result = shell.step("printf 'a\\033[1mb\\r'")
    assert result.observation == "a\\x1b[1mb\\x0d\n[exit code 0]"
    assert result.info[COMMANDS_INFO_KEY] == [{"command": "printf 'a\\033[1mb\\r'",
                                               "status": "ok", "exit_code": 0,
                                               "output": "a\x1b[1mb\r"}]
    failed = shell.step("echo no; exit 3")
    assert failed.observation == "no\n\n[exit code 3]" and failed.info["failures"] == 1
    assert [(c.status, c.exit_code) for c in shell.command_log] == [("ok", 0), ("failed", 3)]
    assert all(c.wall_s > 0 for c in shell.command_log)


@needs_sandbox
def test_a_timeout_is_logged_and_rendered():
    env = ShellEnv(limits=Limits(wall_s=1.0))
    try:
        env.reset(seed=0)
        result = env.step("echo started; sleep 30")
        assert result.observation.endswith("[timed out]")
        (command,) = result.info[COMMANDS_INFO_KEY]
        assert command["status"] == "timeout" and command["exit_code"] is None
        assert command["output"].startswith("started")
    finally:
        env.close()


@needs_sandbox
def test_steps_without_commands_list_none_and_the_last_step_is_truncated(shell):
    shell.reset(seed=0)
    first = shell.step("<<not a command>>")
    assert first.info[COMMANDS_INFO_KEY] == [] and not first.truncated
    assert not shell.step("true").truncated
    last = shell.step("true")
    assert last.truncated and not last.terminated and len(shell.command_log) == 2
    with pytest.raises(RuntimeError, match="episode ended"):
        shell.step("true")


@needs_sandbox
def test_snapshot_restores_the_layer_the_log_and_the_family_state(shell):
    shell.reset(seed=0)
    shell.step("false")
    snapshot = shell.snapshot()
    assert isinstance(snapshot, SandboxedSnapshot) and snapshot.state == 1
    shell.step("touch made; false")
    assert shell.failures == 2 and len(shell.command_log) == 2
    shell.restore(snapshot)
    assert shell.failures == 1 and [c.command for c in shell.command_log] == ["false"]
    result = shell.step("ls made")
    assert "No such file" in result.observation
    assert [c.command for c in shell.command_log] == ["false", "ls made"]
    assert shell.step("end").terminated


@needs_sandbox
def test_reset_closes_the_previous_episode_and_starts_the_log_over(shell):
    with pytest.raises(RuntimeError, match="reset"):
        shell.step("true")
    shell.reset(seed=0)
    shell.step("true")
    previous = shell._sandbox
    shell.reset(seed=0)
    with pytest.raises(SandboxError, match="closed"):
        previous.run("true")
    assert shell.command_log == () and shell.released == 2
    shell.close()
    shell.close()
    assert shell.released == 4
    with pytest.raises(RuntimeError, match="reset"):
        shell.step("true")


def _record_golden() -> None:
    GOLDEN.parent.mkdir(exist_ok=True)
    replays = {family: replay(*spec) for family, spec in sorted(REPLAYS.items())}
    GOLDEN.write_text(json.dumps(replays, indent=1) + "\n")


if __name__ == "__main__" and sys.argv[1:] == ["--record"]:
    _record_golden()
