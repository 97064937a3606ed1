"""`SandboxedEnv`: the lifecycle every sandboxed family shares (terminal, SWE-bench, OSWorld
files, AppWorld).

What the base holds, so each family writes only its protocol:

- **reset**: any previous sandbox (and the family's other resources) is closed, then
  `_open_sandbox` opens the episode's; the step counter, the done flag and the command log
  start over, and `_begin` gives the first observation.
- **step**: a step before `reset` raises; a step after the episode ended is answered by
  `_after_end` (by default it raises). Otherwise the step is counted and `_act` plays it; the
  **max-steps rule** is `out_of_steps` (the step just counted was the last one allowed): a step
  that does not terminate the episode and is out of steps is truncated. The episode is over
  once a step is terminated or truncated.
- **commands**: `_run_for_agent` is the one place command output becomes an observation:
  it runs a command for the agent, logs it, escapes control characters (`escape_controls`) and
  hands the escaped text to the family's `_render`. Each command is a `CommandRecord` (raw
  output, before escaping) in `command_log`, kept per episode; every step's
  ``info["commands"]`` lists the commands that step ran (`CommandRecord.as_info`: without the
  wall time, so replays compare equal). Commands the env runs for itself (setup, grading)
  go to the sandbox directly and are not logged.
- **snapshot/restore**: the writable layer, the counters, the command log and the family's
  own small state (`_save_state`/`_load_state`) as one `SandboxedSnapshot`.
- **close**: the sandbox, then the family's other resources (`_release`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from harness.core import escape_controls
from tasks.base import StepResult
from tasks.sandbox import CommandResult, Sandbox

__all__ = ["COMMANDS_INFO_KEY", "CommandRecord", "SandboxedEnv", "SandboxedSnapshot"]

COMMANDS_INFO_KEY = "commands"
"""The step-info key listing the commands a step ran for the agent (`CommandRecord.as_info`)."""


@dataclass(frozen=True)
class CommandRecord:
    """One command run for the agent. `output` is raw (before `escape_controls`), bounded by
    the sandbox's ``Limits.output_bytes``; `exit_code` is None when the command was killed."""

    command: str
    """What the agent asked to run (a shell command, a Python cell), without the family's
    wrapping (a prologue, the interpreter that reads it)."""
    status: str
    """``ok``, ``failed`` (non-zero exit) or ``timeout`` (`CommandResult.status`)."""
    exit_code: int | None
    wall_s: float
    output: str

    def as_info(self) -> dict[str, Any]:
        """The record as it appears in ``info["commands"]``: every field but `wall_s`."""
        return {"command": self.command, "status": self.status, "exit_code": self.exit_code,
                "output": self.output}


@dataclass(frozen=True)
class SandboxedSnapshot:
    """An exact copy of a sandboxed episode: the sandbox's writable layer (`Sandbox.snapshot`),
    the counters, the command log and the family's own state (`SandboxedEnv._save_state`)."""

    layer: Any
    steps: int
    done: bool
    commands: tuple[CommandRecord, ...]
    state: Any = None


class SandboxedEnv:
    """Base of the sandboxed envs (module docstring). A family implements `_open_sandbox`,
    `_begin` and `_act`, and overrides the other underscore hooks where it needs to."""

    max_steps: int

    def __init__(self) -> None:
        self._sandbox: Sandbox | None = None
        self._steps, self._done = 0, False
        self._commands: tuple[CommandRecord, ...] = ()

    # ---- the Env lifecycle ------------------------------------------------------------------
    def reset(self, *, seed: int) -> tuple[str, dict[str, Any]]:
        """Close any previous episode, open a fresh sandbox, return the first observation."""
        self.close()
        self._sandbox = self._open_sandbox(seed)
        self._steps, self._done, self._commands = 0, False, ()
        return self._begin()

    def step(self, action: str) -> StepResult:
        """Count the step, play it (`_act`), note whether the episode ended and list the
        commands it ran under ``info["commands"]``."""
        self._require()
        logged = len(self._commands)
        if self._done:
            result = self._after_end()
        else:
            self._steps += 1
            result = self._act(action)
            self._done = result.terminated or result.truncated
        result.info[COMMANDS_INFO_KEY] = [c.as_info() for c in self._commands[logged:]]
        return result

    @property
    def out_of_steps(self) -> bool:
        """The step being played is the last one allowed: unless it terminates the episode,
        it is truncated."""
        return self._steps >= self.max_steps

    @property
    def command_log(self) -> tuple[CommandRecord, ...]:
        """Every command run for the agent this episode, in order."""
        return self._commands

    def snapshot(self) -> SandboxedSnapshot:
        return SandboxedSnapshot(self._require().snapshot(), self._steps, self._done,
                                 self._commands, self._save_state())

    def restore(self, snapshot: SandboxedSnapshot) -> None:
        self._require().restore(snapshot.layer)
        self._steps, self._done = snapshot.steps, snapshot.done
        self._commands = snapshot.commands
        self._load_state(snapshot.state)

    def close(self) -> None:
        """Close the sandbox, then the family's other resources; safe to call twice."""
        if self._sandbox is not None:
            self._sandbox.close()
            self._sandbox = None
        self._release()

    # ---- commands ---------------------------------------------------------------------------
    def _run_for_agent(self, command: str, *, script: str | None = None,
                       **options: Any) -> str:
        """Run `command` for the agent and return its observation text: the one place command
        output becomes an observation. `script` is what the sandbox runs instead when it
        differs from what the agent asked (a prologue, an interpreter reading ``stdin``);
        `options` go to `Sandbox.run` (``stdin``, ``cwd``, ``user``, ``timeout_s``)."""
        result = self._require().run(command if script is None else script, **options)
        self._commands += (CommandRecord(command, result.status, result.exit_code,
                                         result.wall_s, result.output),)
        return self._render(escape_controls(result.output), result)

    def _render(self, output: str, result: CommandResult) -> str:
        """The observation of a command whose escaped output is `output`: by default the
        output, then ``[exit code N]`` or ``[timed out]`` on a line of its own."""
        status = "timed out" if result.timed_out else f"exit code {result.exit_code}"
        return f"{output}\n[{status}]"

    def _require(self) -> Sandbox:
        if self._sandbox is None:
            raise RuntimeError("call reset() first")
        return self._sandbox

    # ---- the family's hooks -----------------------------------------------------------------
    def _open_sandbox(self, seed: int) -> Sandbox:  # pragma: no cover - abstract
        """Open the episode's sandbox (and the family's other resources) for `seed`."""
        raise NotImplementedError

    def _begin(self) -> tuple[str, dict[str, Any]]:  # pragma: no cover - abstract
        """Start the family's own episode state; return the first observation and info."""
        raise NotImplementedError

    def _act(self, action: str) -> StepResult:  # pragma: no cover - abstract
        """Play one counted step (the episode is not over); see `out_of_steps`."""
        raise NotImplementedError

    def _after_end(self) -> StepResult:
        """The answer to a step after the episode ended: by default an error."""
        raise RuntimeError("step() after the episode ended; call reset() first")

    def _save_state(self) -> Any:
        """The family's own episode state beyond the sandbox and the counters (small)."""
        return None

    def _load_state(self, state: Any) -> None:
        """Put back what `_save_state` returned."""

    def _release(self) -> None:
        """Close the family's resources other than the sandbox (a proxy, a server)."""
