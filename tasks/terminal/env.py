"""The Terminal-Bench Env: one shell command per turn in a sandbox, then the task's verifier.

Observation: the instruction, then each command's terminal output (stdout and stderr
interleaved, truncated head+tail, control characters other than newline and tab escaped by
`escape_controls`) and its exit status. Action: a shell command (multi-line allowed);
``submit`` ends the episode, and a command whose last line is ``submit`` runs the lines before
it and then submits. The working directory and exported variables carry over
between commands (a small state file), background processes do not (each command's process
tree ends with it). An empty command or one bash cannot parse is invalid and changes nothing.
Each command run is logged, raw, in the step's ``info["commands"]`` (`tasks.sandboxed_env`).

When the agent submits or runs out of steps the verifier runs, as upstream, on a fresh copy of
the task's tests the agent never saw: ``/tests`` and ``/logs/verifier`` are wiped and the tests
copied in, then as root TB2 runs ``tests/test.sh`` (with the task's ``[verifier] env``) and
reads ``/logs/verifier/reward.json`` or ``reward.txt`` as Harbor does
(`tasks.terminal.harbor.harbor_reward`);
TB1 runs its ``run-tests.sh`` (the task's, else the dataset's ``defaults/run-tests.sh``, with
the ``test_scripts`` the task lists copied beside the tests, ``TEST_DIR=/tests``) from the
working directory and passes iff pytest's ``-rA`` summary lists passed tests and no failed or
erroring one (upstream's pytest parser); a TB1 task without a ``run-tests.sh`` runs pytest on
``tests/test_*.py``. In every format a verifier command that ran out of time, was killed or
exited by a signal (no exit status, or one of 128 and above, as bash reports a child killed by
a signal) gives reward 0 with that reason, whatever its reward file or output says: code the
verifier runs cannot write the reward and then stop the script before it writes its own.
Verifier scripts see
offline stand-ins for ``apt-get``, ``curl`` (the uv installer) and ``uv``/``uvx`` (Debian's
pytest), see ``tasks/terminal/shims``.

A task whose network policy is ``registries`` (`tasks.terminal.taskdir.network_policy`) gets an
egress proxy per episode (`tasks.sandbox_egress`, allowing `egress_allow`); what its commands
asked the proxy for, allowed or refused, is in each step's ``info["egress"]``.
"""

from __future__ import annotations

import base64
import io
import re
import shlex
import subprocess
import tarfile
from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

from tasks.base import StepResult
from tasks.sandbox import CommandResult, Limits, Sandbox, SandboxError
from tasks.sandbox_egress import EgressProxy, configured_allow_list
from tasks.sandboxed_env import SandboxedEnv
from tasks.terminal.environment import SHIMS, TaskEnvironment, trust_host_cas
from tasks.terminal.harbor import harbor_reward
from tasks.terminal.taskdir import TerminalTask

__all__ = ["SUBMIT", "TerminalEnv", "abnormal_end"]

SUBMIT = "submit"
_NETWORK = {"none": "no network", "registries": "network: package registries only"}
_STATE = "/tmp/.harness-shell"
_PROLOGUE = (f'[ -f {_STATE}/cwd ] && cd "$(cat {_STATE}/cwd)"; [ -f {_STATE}/env ] && '
             f'. {_STATE}/env; trap \'mkdir -p {_STATE}; pwd > {_STATE}/cwd; export -p | '
             f'grep -v -E "^declare -x (PWD|OLDPWD|SHLVL|_)=" > {_STATE}/env\' EXIT\n')


def syntax_error(command: str) -> str | None:
    """Bash's complaint about `command` (parsed with ``bash -n``, never run), or None."""
    done = subprocess.run(["bash", "-n"], input=command, capture_output=True, text=True,
                          timeout=10)
    return done.stderr.strip().replace("bash: ", "") or None if done.returncode else None


def oracle_actions(task: TerminalTask) -> list[str]:
    """The reference solution as actions: TB1 solution.yaml commands one per turn; a TB2
    ``solution/`` directory (with its helper files) unpacked to ``/solution``, where Harbor's
    oracle puts it, and ``solve.sh`` run from the working directory; a TB2 task's
    ``[solution] env`` exported first."""
    exports = "".join(f"export {name}={shlex.quote(value)}\n"
                      for name, value in task.extras.get("solution_env", {}).items())
    if task.solution_dir is None or len(list(task.solution_dir.rglob("*"))) == 1:
        return [exports + command for command in task.solution]
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz", format=tarfile.PAX_FORMAT) as archive:
        for file in sorted(task.solution_dir.rglob("*")):
            info = archive.gettarinfo(str(file), arcname=str(file.relative_to(task.solution_dir)))
            info.mtime, info.uid, info.gid, info.uname, info.gname = 0, 0, 0, "", ""
            if info.isreg():  # a link is archived as a link, never read through
                archive.addfile(info, io.BytesIO(file.read_bytes()))
            else:
                archive.addfile(info)
    encoded = base64.b64encode(buffer.getvalue()).decode()
    return [f"{exports}mkdir -p /solution && echo {encoded} | base64 -d | tar -xzf - -C "
            f"/solution && bash /solution/solve.sh"]


class TerminalEnv(SandboxedEnv):
    """One Terminal-Bench task in a sandbox (see the module docstring); the lifecycle,
    snapshots and command log are `SandboxedEnv`'s."""

    free_form_actions = True

    def __init__(self, task: TerminalTask, environment: TaskEnvironment, *, max_steps: int = 30,
                 command_timeout_s: float = 120.0, limits: Limits | None = None,
                 egress_allow: Sequence[str] | None = None, agent_user: str = "agent",
                 env: dict[str, str] | None = None, session: bool = False):
        super().__init__()
        self.task, self.environment = task, environment
        self.agent_user = agent_user  # "root" (of the sandbox's user namespace) for TB tasks
        self.session = session  # commands share one shell's namespaces (`Sandbox` session)
        self.extra_env = dict(env or {})
        # hosts a "registries" task may reach (default: HARNESS_EGRESS_ALLOW, else registries)
        self.egress_allow = tuple(configured_allow_list() if egress_allow is None
                                  else egress_allow)
        self.max_steps = max_steps
        self.limits = limits or Limits(wall_s=command_timeout_s, output_bytes=16 << 10)
        self._oracle = oracle_actions(task)
        self._egress: EgressProxy | None = None  # a task with network "registries" has one
        self._oracle_position = 0

    # ---- SandboxedEnv hooks -----------------------------------------------------------------
    def _open_sandbox(self, seed: int) -> Sandbox:
        """A fresh sandbox over the task's environment (`seed` changes nothing: tasks are
        deterministic)."""
        if self.task.network == "registries":
            self._egress = EgressProxy(self.egress_allow).start()
        box = Sandbox(self.environment.rootfs, layers=self.environment.layers,
                      workdir=self.task.workdir, env={**self.extra_env, **dict(self.task.env)},
                      limits=self.limits, network=self.task.network, egress=self._egress,
                      session=self.session)
        if self._egress is not None:
            try:
                trust_host_cas(box)
            except BaseException:
                box.close()
                raise
        return box

    def _begin(self) -> tuple[str, dict[str, Any]]:
        self._oracle_position = 0
        observation = (f"{self.task.instruction}\n\nYou are in a bash shell in "
                       f"{self.task.workdir} on Debian ({_NETWORK[self.task.network]}). Send one "
                       f"shell command per turn; send `{SUBMIT}` when the task is done.")
        return observation, self._info(False, 0.0, False)

    def _after_end(self) -> StepResult:
        return StepResult("the episode is over", 0.0, True, False, self._info(False, 0.0, True))

    def _act(self, action: str) -> StepResult:
        if self._oracle_position < len(self._oracle) and action == self._oracle[
                self._oracle_position]:
            self._oracle_position += 1
        lines = action.strip().splitlines()
        submit = bool(lines) and lines[-1].strip() == SUBMIT
        command = "\n".join(lines[:-1] if submit else lines).strip()
        parts: list[str] = []
        invalid, status = False, "none"
        if command:
            problem = syntax_error(command)
            if problem and not submit:
                return self._after(f"invalid command: {problem}", True, "invalid", False)
            if problem:
                parts.append(f"invalid command: {problem}")
            else:
                parts.append(self._run_for_agent(command, script=_PROLOGUE + command,
                                                 user=self.agent_user))
                status = self._commands[-1].status
        elif not submit:
            return self._after("invalid command: empty", True, "invalid", False)
        return self._after("".join(parts), invalid, status, submit)

    def _after(self, observation: str, invalid: bool, status: str, submit: bool) -> StepResult:
        truncated = not submit and self.out_of_steps
        if not (submit or truncated):
            info = self._info(False, 0.0, invalid)
            info["command_status"] = status
            return StepResult(observation, 0.0, False, False, info)
        reward, verdict = self.verify()
        info = self._info(reward >= 1.0, reward, invalid)
        info.update(command_status=status, verifier=verdict)
        ending = "submitted" if submit else "out of steps"
        return StepResult(f"{observation}[{ending}; verifier: {verdict}, reward {reward:g}]",
                          reward, submit, truncated, info)

    # ---- capabilities -----------------------------------------------------------------------
    def oracle_action(self) -> str:
        """The solution's next command (those already played are skipped), then submit."""
        if self._oracle_position < len(self._oracle):
            return self._oracle[self._oracle_position]
        return SUBMIT

    # ---- the family's state and resources ---------------------------------------------------
    def _save_state(self) -> int:
        return self._oracle_position

    def _load_state(self, state: int) -> None:
        self._oracle_position = state

    def _release(self) -> None:
        if self._egress is not None:
            self._egress.stop()
            self._egress = None

    # ---- verifier ---------------------------------------------------------------------------
    def verify(self) -> tuple[float, str]:
        """Run the task's tests on a fresh copy; return (reward, verdict)."""
        box = self._require()
        box.run("rm -rf /tests /logs/verifier /opt/harness-shims && mkdir -p /tests "
                "/logs/verifier", user="root", cwd="/")
        box.copy_in(self.task.tests_dir, "/tests")
        box.copy_in(SHIMS, "/opt/harness-shims")
        env = {**self.extra_env, **dict(self.task.env),
               **self.task.extras.get("verifier_env", {}), "TEST_DIR": "/tests",
               "PATH": "/opt/harness-shims:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:"
               "/sbin:/bin"}
        timeout = self.task.verifier_timeout_s
        if self.task.format == "tb2":
            result = box.run("bash /tests/test.sh", user="root", cwd=self.task.workdir,
                             env=env, timeout_s=timeout)
            if (stopped := abnormal_end(result)) is not None:
                return 0.0, stopped
            return harbor_reward(*(self._verifier_file(box, f"/logs/verifier/reward.{kind}")
                                   for kind in ("json", "txt")))
        run_tests = self.task.extras.get("run_tests")
        if run_tests is not None:
            for script in self.task.extras.get("test_scripts", ()):
                box.copy_in(script, f"/tests/{script.name}")
            box.copy_in(run_tests, "/tests/run-tests.sh")
            result = box.run("bash /tests/run-tests.sh", user="root", cwd=self.task.workdir,
                             env=env, timeout_s=timeout)
            if (stopped := abnormal_end(result)) is not None:
                return 0.0, stopped
            return pytest_verdict(result.output)
        files = sorted(p.name for p in self.task.tests_dir.glob("test_*.py"))
        result = box.run("python3 -P -m pytest -p no:cacheprovider -rA "
                         + " ".join(f"/tests/{name}" for name in files), user="root",
                         cwd=self.task.workdir, env=env, timeout_s=timeout)
        if (stopped := abnormal_end(result)) is not None:
            return 0.0, stopped
        passed = result.exit_code == 0 and " passed" in result.output
        return (1.0 if passed else 0.0), ("all tests passed" if passed else "tests failed")

    # ---- helpers ----------------------------------------------------------------------------
    @staticmethod
    def _verifier_file(box: Sandbox, path: str) -> str | None:
        """The text of a file the verifier wrote (None when it cannot be read: absent)."""
        try:
            return box.read_file(path).decode(errors="replace")
        except SandboxError:
            return None

    def _render(self, output: str, result: CommandResult) -> str:
        """The escaped output ending in a newline, then the exit code or the kill."""
        if output and not output.endswith("\n"):
            output += "\n"
        if result.timed_out:
            return f"{output}[command killed after {self.limits.wall_s:g} s]\n"
        return f"{output}[exit code {result.exit_code}]\n"

    def _info(self, won: bool, score: float, invalid: bool) -> dict[str, Any]:
        """The step's info; ``egress``: what the sandbox asked the registry proxy for since
        the last step (records without their time, so replays compare equal)."""
        info: dict[str, Any] = {"won": bool(won), "score": float(score), "invalid": bool(invalid)}
        if self._egress is not None and (records := self._egress.drain_log()):
            info["egress"] = [{k: v for k, v in asdict(r).items() if k != "time"}
                              for r in records]
        return info


def abnormal_end(result: CommandResult) -> str | None:
    """Why a verifier command's verdict cannot stand (None when it exited normally): it ran
    out of time, a sandbox bound or a signal killed it (no exit status), or its exit status is
    128 or above (bash's report of a command killed by a signal, e.g. 137 for SIGKILL)."""
    if result.timed_out:
        return "timeout"
    if result.killed_by:
        return f"verifier killed by the {result.killed_by}"
    if result.exit_code is None or result.exit_code < 0:
        return "verifier killed"
    if result.exit_code >= 128:
        return f"verifier exited abnormally (status {result.exit_code}: killed by a signal)"
    return None


_SHORT_SUMMARY = re.compile(r"=+\s*short test summary info\s*=+", re.IGNORECASE)
_PASSING = {"PASSED": True, "XFAIL": True, "SKIPPED": True, "FAILED": False, "XPASS": False,
            "ERROR": False}
"""Upstream's mapping of pytest outcomes onto passed/failed (a skipped test passes)."""


def pytest_verdict(output: str) -> tuple[float, str]:
    """The rule of upstream's pytest parser (terminal-bench ``PytestParser``, as read from its
    source: upstream's code could not be fetched and run here, so no differential fixture
    backs this) on a ``-rA`` log: only the lines after the "short test summary info" header
    count (a captured log line that starts
    with ``ERROR`` earlier in the log is not a result); each result line is ``STATUS
    path::name[ - description]``, the last line of a name wins; 1.0 when every test passes."""
    parts = _SHORT_SUMMARY.split(output, maxsplit=1)
    results: dict[str, bool] = {}
    for line in parts[1].splitlines() if len(parts) == 2 else ():
        if line.startswith("FAILED") and " - " in line:
            line = line.rsplit(" - ", 1)[0]
        words = line.split(maxsplit=1)
        status = words[0].strip().strip(":") if len(words) == 2 else ""
        name = words[1].strip().split("::", 1)[-1] if status in _PASSING else ""
        if name:
            results[name] = _PASSING[status]
    if not results:
        return 0.0, "no pytest summary"
    failed = sum(not ok for ok in results.values())
    if failed:
        return 0.0, f"tests failed ({failed} of {len(results)})"
    return 1.0, "all tests passed"
