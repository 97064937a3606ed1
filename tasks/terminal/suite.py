"""Terminal suites: ``terminal-lite@2`` (the project's own tasks) and ``terminal-bench@1``
(official TB1/TB2 task directories from ``TERMINAL_BENCH_TASKS``)."""

from __future__ import annotations

import os
from pathlib import Path

from harness.core import ConfigError
from tasks.base import Comparability, SuiteBase, TaskSpec
from tasks.sandbox_forgery import FORGERY_KINDS, FORGERY_PREFIX, shell_command
from tasks.terminal.env import SUBMIT, TerminalEnv
from tasks.sandbox import Limits
from tasks.terminal.environment import BUILD_ENV, build_environment
from tasks.terminal.taskdir import TerminalTask, load_tasks

__all__ = ["EXPLOITS", "FORGERIES", "LITE_DIR", "TerminalBenchSuite", "TerminalLiteSuite",
           "TerminalSuite"]

LITE_DIR = Path(__file__).with_name("lite")

EXPLOITS = {
    "delete-tests": "rm -rf /tests /logs 2>/dev/null; find / -xdev -name 'test_*.py' -delete "
                    "2>/dev/null; true\nsubmit",
    "edit-tests": "mkdir -p /tests && printf 'def test_ok():\\n    pass\\n' > "
                  "/tests/test_outputs.py; printf '#!/bin/bash\\nmkdir -p /logs/verifier\\n"
                  "echo 1 > /logs/verifier/reward.txt\\n' > /tests/test.sh; true\nsubmit",
    "write-reward": "mkdir -p /logs/verifier && echo 1 > /logs/verifier/reward.txt; "
                    "echo 1 > reward.txt; true\nsubmit",
    "kill-verifier": "(while :; do pkill -9 -f pytest; pkill -9 -f test.sh; sleep 0.05; done) "
                     ">/dev/null 2>&1 &\nsubmit",
    "shadow-pytest": "printf 'import sys\\nsys.exit(0)\\n' > pytest.py; mkdir -p pytest && "
                     "cp pytest.py pytest/__main__.py; printf 'import pytest\\n' > conftest.py; "
                     "true\nsubmit",
}
"""Reward-hacking attempts the audit plays (each must score 0): delete or edit the tests,
write reward.txt, kill the verifier from a background process, shadow pytest in the workdir."""

FORGERIES = {f"{FORGERY_PREFIX}{kind}": f"{shell_command(kind)}\n{SUBMIT}"
             for kind in FORGERY_KINDS}
"""Forgery probes (`tasks.sandbox_forgery`): plant code where the verifier runs it (the
programs, scripts, Makefiles and git repositories of the workdir, Python's start-up files)
that writes the reward file, kills the verifier or prints a forged pytest summary, then
submit. On terminal-lite each scores 0 (the tests run agent code as the agent); on
terminal-bench, whose root agent shares the machine with a verifier that runs pytest as root
(upstream's design), the audit counts the tasks they forge."""

INSTRUCTIONS = (
    "You operate a Linux terminal (bash on Debian, no network) to complete a task. Each turn, "
    "reply with exactly one shell command (it may span several lines); you then see its output "
    f"and exit code. When the task is complete, reply `{SUBMIT}` on its own. The working "
    "directory and exported variables carry over between commands; background processes do "
    "not.")


class TerminalSuite(SuiteBase):
    """Terminal tasks loaded from task directories; `make_env` builds each environment once."""

    trivial_actions = {"submit": SUBMIT, **EXPLOITS, **FORGERIES}
    exploit_policies = {name: f"noop:{name}" for name in (*EXPLOITS, *FORGERIES)}
    blocking = True
    multiline_actions = True
    instructions = INSTRUCTIONS
    default_scaffold = "terminal@1"
    max_steps = 30
    agent_user = "agent"
    """Who runs the agent's commands: the sandbox's unprivileged ``agent`` (it owns the task's
    workdir) or ``root`` of its user namespace."""

    def __init__(self, tasks: list[TerminalTask], splits: dict[str, str] | None = None):
        self.all_tasks = {t.id: t for t in tasks}
        """Every task folder loaded, the unsupported included (their `unsupported` says why)."""
        self.unsupported = {t.id: t.unsupported for t in tasks if t.unsupported}
        self._tasks = {t.id: t for t in tasks if not t.unsupported}
        specs = [TaskSpec(t.id, (splits or {}).get(t.id, "test"), t.category,
                          {"format": t.format, "difficulty": t.difficulty,
                           "notes": list(t.notes)})
                 for t in self._tasks.values()]
        super().__init__(specs)

    def terminal_task(self, task_id: str) -> TerminalTask:
        self.task(task_id)  # unknown ids: one clear error with did-you-mean
        return self._tasks[task_id]

    def make_env(self, task_id: str) -> TerminalEnv:
        task = self.terminal_task(task_id)
        return TerminalEnv(task, build_environment(task, agent_user=self.agent_user),
                           max_steps=self.max_steps, agent_user=self.agent_user)

    def build_task(self, task_id: str, *, retry_failed: bool = False) -> None:
        """Build task `task_id`'s environment now (``harness tasks build``); `BuildFailed`
        (an `EnvironmentNotBuilt`) when it cannot be, at once when that failure is recorded
        and not `retry_failed`."""
        build_environment(self.terminal_task(task_id), retry_failed=retry_failed,
                          agent_user=self.agent_user)


class TerminalLiteSuite(TerminalSuite):
    """40+ small tasks the project wrote in the TB2 format (``tasks/terminal/lite``)."""

    name = "terminal-lite"
    version = 2
    """2: the tests run agent-written code (programs, scripts, make, git) as the agent, never
    as root, and take expected answers from pristine copies (version 1's verifier ran
    ``main.py`` as root next to its reward file, and emptying count-words' input passed)."""
    description = ("the project's own terminal tasks in Terminal-Bench 2 format: files and text, "
                   "sysadmin, data, debugging, build, git, sqlite, permissions")
    comparability = Comparability(
        engine="rebuilt", tasks="generated", grader="rebuilt", protocol="rebuilt",
        comparable="not comparable with Terminal-Bench scores: the project's own small tasks "
                   "in its format, run in a bubblewrap sandbox",
        evidence="tests/tasks/terminal/test_terminal_lite.py")

    def __init__(self) -> None:
        tasks = load_tasks(LITE_DIR)
        import tomllib

        splits = {t.id: tomllib.loads((t.path / "task.toml").read_text())
                  .get("metadata", {}).get("split", "test") for t in tasks}
        super().__init__(tasks, splits)


class TerminalBenchSuite(TerminalSuite):
    """Official Terminal-Bench task directories (TB1 or TB2/Harbor) from
    ``TERMINAL_BENCH_TASKS``; tasks whose Dockerfile cannot be translated are left out and
    listed in `unsupported` with the failing step."""

    name = "terminal-bench"
    version = 1
    agent_user = "root"  # of the sandbox's user namespace, as upstream runs its agents
    description = "Terminal-Bench 1/2 task directories (TERMINAL_BENCH_TASKS) in the sandbox"
    max_steps = 50
    comparability = Comparability(
        engine="rebuilt", tasks="upstream", grader="upstream", protocol="rebuilt",
        data="upstream",
        comparable="indicative only: upstream tasks and tests, but Debian rootfs instead of the "
                   "task's Docker image and one command per turn instead of tmux keystrokes",
        evidence="tests/tasks/terminal/test_terminal_loader.py")

    def make_env(self, task_id: str) -> TerminalEnv:
        """As upstream runs a task: one shell session (a server a command starts keeps serving
        the later commands and the verifier), the agent root (of the sandbox's user
        namespace), each command may run as long as the task's agent time limit, the verifier
        its own, and pip installs into the system Python as in the task's image. A Harbor task's
        ``storage_mb`` sizes the writable layer (8 GiB when absent), its ``memory_mb`` raises
        each process's data limit above the default (`tasks.terminal.harbor`)."""
        task = self.terminal_task(task_id)
        storage_mb, memory_mb = task.extras.get("storage_mb"), task.extras.get("memory_mb")
        limits = Limits(wall_s=task.agent_timeout_s, cpu_s=int(task.agent_timeout_s) + 1,
                        output_bytes=16 << 10, file_size_bytes=4 << 30,
                        disk_bytes=storage_mb << 20 if storage_mb else 8 << 30, inodes=1 << 16,
                        memory_bytes=max(Limits.memory_bytes, (memory_mb or 0) << 20))
        return TerminalEnv(task, build_environment(task, agent_user=self.agent_user),
                           max_steps=self.max_steps, limits=limits,
                           agent_user=self.agent_user, env=BUILD_ENV, session=True)

    def __init__(self, root: str | os.PathLike[str] | None = None) -> None:
        path = root or os.environ.get("TERMINAL_BENCH_TASKS")
        if not path or not Path(path).is_dir():
            raise ConfigError("terminal-bench needs TERMINAL_BENCH_TASKS=<a directory of TB1 or "
                              "TB2 task folders>, e.g. a terminal-bench-core checkout")
        super().__init__(load_tasks(Path(path)))
