"""The agent's side of a SWE-bench episode: tools in the SWE-agent/OpenHands style.

An action is one JSON object naming a tool (a bare ``submit`` is accepted too):

- ``{"tool": "bash", "command": "pytest -x tests/test_a.py"}``: a shell command in
  ``/testbed`` (as the unprivileged agent, no network, a per-command time limit);
- ``{"tool": "view", "path": "pkg/mod.py", "start": 10, "end": 40}``: numbered lines of a
  file (the whole file without a range; a folder lists two levels);
- ``{"tool": "str_replace", "path": "pkg/mod.py", "old": "...", "new": "..."}``: replace the
  one occurrence of ``old`` (zero or several occurrences change nothing and say so);
- ``{"tool": "create", "path": "pkg/new.py", "content": "..."}``: write a file;
- ``{"tool": "submit"}``: end the episode; ``"patch"`` (a unified diff applied first) is
  optional, and any tool call may carry ``"submit": true`` to submit right after it.

The prediction is the ``git diff`` of the work tree against ``base_commit`` (new files
included), graded by the backend in a fresh sandbox; reward 1 iff resolved (the final info
carries the verdict's ``status``, its ``reason`` where the harness overrode the official rule,
and the tamper check's ``tamper_flags`` where it flagged anything).
Command output has its control characters escaped (`escape_controls`); observations are cut to
`observation_chars` (head and tail kept, the cut stated); the episode is truncated at
`max_steps`, and a truncated episode is graded on its work tree as it stands (SWE-agent's
auto-submission). `snapshot()`/`restore()` copy the sandbox's writable layer; the lifecycle
and the command log (``info["commands"]``) are `tasks.sandboxed_env.SandboxedEnv`'s.
"""

from __future__ import annotations

import json
import shlex
from typing import Any

from harness.core import HarnessError
from tasks.base import StepResult
from tasks.sandbox import Sandbox
from tasks.sandboxed_env import SandboxedEnv
from tasks.swebench.data import Instance

__all__ = ["SweEnv", "TOOLS_HELP", "truncate", "FLAGGED_RESOLVE"]

DIFF_TIMEOUT_S = 120.0
"""Limit of the harness's own ``git diff`` of the work tree at the end of an episode."""
FLAGGED_RESOLVE = "flagged_resolve"
"""The final step's info key of a resolved episode whose prediction the tamper check flagged
(`tasks.swebench.tamper`); its value names the kinds of flag. ``info["tamper_flags"]`` lists
the flags of every graded episode that has any."""

TOOLS_HELP = (
    "You are fixing an issue in the repository at /testbed (the current directory). Act with "
    "exactly one JSON object per turn: {\"tool\": \"bash\", \"command\": CMD} runs a shell "
    "command (no network); {\"tool\": \"view\", \"path\": P, \"start\": N, \"end\": M} shows "
    "numbered lines; {\"tool\": \"str_replace\", \"path\": P, \"old\": OLD, \"new\": NEW} "
    "replaces the single occurrence of OLD; {\"tool\": \"create\", \"path\": P, \"content\": "
    "TEXT} writes a file; {\"tool\": \"submit\"} ends the episode. Your changes to the "
    "repository (git diff) are the answer; hidden tests decide whether the issue is resolved.")


def truncate(text: str, limit: int) -> str:
    """`text` cut to about `limit` characters: head and tail kept, the cut stated."""
    if len(text) <= limit:
        return text
    half = limit // 2
    return (text[:half] + f"\n[... {len(text) - 2 * half} characters omitted ...]\n"
            + text[-half:])


class _Invalid(Exception):
    """An action that could not be applied (the state did not change)."""


class SweEnv(SandboxedEnv):
    """One SWE-bench instance as an `Env` (module docstring). `backend` is a
    `tasks.swebench.local.LocalBackend`."""

    free_form_actions = True

    def __init__(self, instance: Instance, backend: Any, *, max_steps: int = 50,
                 observation_chars: int = 10_000, command_timeout_s: float = 60.0):
        super().__init__()
        self.instance, self.backend = instance, backend
        self.max_steps, self.observation_chars = max_steps, observation_chars
        self.command_timeout_s = command_timeout_s

    # ---- SandboxedEnv hooks --------------------------------------------------------------
    def _open_sandbox(self, seed: int) -> Sandbox:
        return self.backend.open_sandbox(self.instance)

    def _begin(self) -> tuple[str, dict[str, Any]]:
        observation = (f"{TOOLS_HELP}\n\n<issue>\n{self.instance.problem_statement.strip()}\n"
                       "</issue>")
        return observation, self._info()

    def _after_end(self) -> StepResult:
        return StepResult("the episode is over; reset to play again", 0.0, True, False,
                          self._info(invalid=True))

    def _act(self, action: str) -> StepResult:
        truncated = self.out_of_steps
        invalid = False
        try:
            call = self._parse(action)
            observation = self._apply(call)
            submit = call["tool"] == "submit" or call.get("submit") is True
        except _Invalid as exc:
            if not truncated:
                return StepResult(f"invalid action: {exc}", 0.0, False, False,
                                  self._info(invalid=True))
            observation, submit, invalid = f"invalid action: {exc}", False, True
        if submit or truncated:
            return self._finish(observation, terminated=submit, truncated=not submit,
                                invalid=invalid)
        return StepResult(truncate(observation, self.observation_chars), 0.0, False, False,
                          self._info())

    # ---- capabilities --------------------------------------------------------------------
    def oracle_action(self) -> str:
        """Submit the gold patch."""
        return json.dumps({"tool": "submit", "patch": self.instance.patch})

    # ---- tools ---------------------------------------------------------------------------
    def _info(self, *, invalid: bool = False, **extra: Any) -> dict[str, Any]:
        return {"won": False, "score": 0.0, "invalid": invalid, "step": self._steps, **extra}

    @staticmethod
    def _parse(action: str) -> dict[str, Any]:
        text = action.strip()
        if text == "submit":
            return {"tool": "submit"}
        try:
            call = json.loads(text, strict=False)  # raw newlines inside strings are common
        except json.JSONDecodeError:
            raise _Invalid("expected one JSON object such as {\"tool\": \"bash\", "
                           "\"command\": \"ls\"}") from None
        if not isinstance(call, dict) or call.get("tool") not in (
                "bash", "view", "str_replace", "create", "submit"):
            raise _Invalid("the object needs \"tool\": bash, view, str_replace, create or "
                           "submit")
        return call

    def _field(self, call: dict[str, Any], name: str) -> str:
        value = call.get(name)
        if not isinstance(value, str):
            raise _Invalid(f"{call['tool']} needs a string \"{name}\"")
        return value

    def _run(self, command: str) -> str:
        return self._run_for_agent(command, cwd="/testbed", timeout_s=self.command_timeout_s)

    def _path(self, call: dict[str, Any]) -> str:
        path = self._field(call, "path")
        return path if path.startswith("/") else f"/testbed/{path}"

    def _apply(self, call: dict[str, Any]) -> str:
        tool = call["tool"]
        if tool == "bash":
            return self._run(self._field(call, "command"))
        if tool == "view":
            return self._view(call)
        if tool == "str_replace":
            return self._replace(call)
        if tool == "create":
            self._require().write_file(self._path(call), self._field(call, "content"),
                                     owner="agent")
            return f"wrote {call['path']}"
        outputs = []
        if isinstance(call.get("command"), str):
            outputs.append(self._run(call["command"]))
        if isinstance(call.get("patch"), str) and call["patch"].strip():
            self._require().write_file("/tmp/submitted.diff", call["patch"], owner="agent")
            outputs.append(self._run("git apply --verbose /tmp/submitted.diff"))
        return "\n".join(outputs) or "submitted"

    def _view(self, call: dict[str, Any]) -> str:
        path = shlex.quote(self._path(call))
        start, end = call.get("start", 1), call.get("end")
        if not isinstance(start, int) or (end is not None and not isinstance(end, int)):
            raise _Invalid("view: start and end must be integers")
        last = f"{end}" if end is not None else "$"
        return self._run(f"if [ -d {path} ]; then find {path} -maxdepth 2 -not -path '*/.git*' "
                         f"| sort; else cat -n {path} | sed -n '{max(start, 1)},{last}p'; fi")

    def _replace(self, call: dict[str, Any]) -> str:
        path, old, new = self._path(call), self._field(call, "old"), self._field(call, "new")
        try:
            text = self._require().read_file(path).decode()
        except Exception as exc:  # noqa: BLE001 - SandboxError or a decoding error
            raise _Invalid(f"str_replace: cannot read {call['path']}: {exc}") from None
        count = text.count(old) if old else 0
        if count != 1:
            raise _Invalid(f"str_replace: `old` occurs {count} times in {call['path']}; it "
                           "must occur exactly once")
        self._require().write_file(path, text.replace(old, new), owner="agent")
        return f"replaced 1 occurrence in {call['path']}"

    # ---- the end --------------------------------------------------------------------------
    def diff(self) -> str:
        """The work tree's changes against ``base_commit`` (new files included). This is the
        harness's own command: running past its limit (a loaded machine) raises, so the
        episode is an error with its reason, never an empty prediction graded as a failure."""
        sandbox = self._require()
        result = sandbox.run(
            f"git add -A >/dev/null 2>&1; git -c core.fileMode=false diff --cached "
            f"{self.instance.base_commit} > /tmp/final.diff", cwd="/testbed",
            timeout_s=DIFF_TIMEOUT_S)
        if result.timed_out:
            raise HarnessError(f"{self.instance.instance_id}: the prediction's `git diff` ran "
                               f"past {DIFF_TIMEOUT_S:.0f} s")
        if result.exit_code != 0:
            return ""
        return sandbox.read_file("/tmp/final.diff").decode(errors="replace")

    def _finish(self, observation: str, *, terminated: bool, truncated: bool,
                invalid: bool = False) -> StepResult:
        patch = self.diff()
        result = self.backend.evaluate(self.instance, patch)
        verdict = result.verdict
        info = self._info(invalid=invalid, won=verdict.resolved, score=float(verdict.resolved),
                          status=verdict.status, patch=patch, dropped=list(result.dropped),
                          failed_tests=verdict.failed_tests()[:20])
        if verdict.reason:
            info["reason"] = verdict.reason
        if result.flags:
            info["tamper_flags"] = list(result.flags)
        if verdict.resolved and result.flags:  # counted apart by `harness leaderboard`
            info[FLAGGED_RESOLVE] = ", ".join(sorted({f.split(":")[0] for f in result.flags}))
        text = truncate(observation, self.observation_chars)
        return StepResult(f"{text}\nsubmitted; {verdict.status}", float(verdict.resolved),
                          terminated, truncated, info)
