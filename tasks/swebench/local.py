"""The local backend: SWE-bench episodes and their grading in the sandbox, without Docker.

An episode's sandbox stacks the environment layer of its (repository, version) over the rootfs
(`SWE_RECIPE`: the base Debian plus ``patch``, the official harness's last apply fallback),
binds the spec's Python read-only at its own path, and holds the repository at
``base_commit`` in ``/testbed`` (owned by the agent). Grading follows the official
``run_instance``: a fresh sandbox, the prediction (less its test infrastructure and its
pytest-configuration hunks, `tasks.swebench.tamper`) written to ``/tmp/patch.diff`` and
applied with the official commands in turn, then the instance's eval script (reset the test
files, apply the test patch, run the tests between the markers), its output as the harness's
pipe carried it (never a file in the sandbox, which the code under test could write) parsed
and judged by `tasks.swebench.grading.grade_log`; a run killed or ended by a signal is not
resolved. Nothing runs with network.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from tasks.swebench.data import Instance
from tasks.swebench.grading import Verdict, apply_script, eval_script, grade_log, \
    sanitize_patch, with_test_status
from tasks.swebench.tamper import check_patch

logger = logging.getLogger(__name__)

__all__ = ["SWE_RECIPE", "EvalResult", "LocalBackend", "EnvLayer"]

PATCH_PATH = "/tmp/patch.diff"
MAX_INLINE_SCRIPT = 120_000
"""Eval scripts up to this size (every official row's) run from bash's argument, where a
process under test cannot rewrite the lines still to run; longer ones from ``/eval.sh``."""
INFRASTRUCTURE = re.compile(r"(^|/)(conftest\.py|\.?pytest\.(ini|toml)|tox\.ini|"
                            r"sitecustomize\.py|usercustomize\.py|[^/]*\.pth)$")
"""Dropped paths that are flagged (test files are dropped silently: agents write tests)."""


def swe_recipe() -> Any:
    from tasks.sandbox import BASE_RECIPE

    return BASE_RECIPE.extend("swebench", packages=("patch",))


SWE_RECIPE = None  # resolved lazily by `swe_recipe` (tasks.sandbox imports nothing heavy)


@dataclass(frozen=True)
class EnvLayer:
    """What an episode's sandbox needs from an environment: read-only `layers` (topmost
    first), `binds`, the test command and how long building it took (0 when cached)."""

    layers: tuple[Path, ...]
    binds: tuple[Any, ...]
    test_cmd: str
    install: str = ""
    build_s: float = 0.0
    cached: bool = True
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class EvalResult:
    """One graded prediction: the official `verdict`, the test `log` (as the harness's pipe
    carried it), the paths of the prediction that were dropped as test infrastructure,
    timings (seconds), and the tamper check's `flags` (`tasks.swebench.tamper`)."""

    verdict: Verdict
    log: str
    dropped: tuple[str, ...] = ()
    setup_s: float = 0.0
    test_s: float = 0.0
    timed_out: bool = False
    extra: dict[str, Any] = field(default_factory=dict)
    flags: tuple[str, ...] = ()


class LocalBackend:
    """Builds environments and sandboxes for instances and grades predictions.

    `source(instance)` gives the host work tree at ``base_commit`` (a git repository whose
    HEAD is that commit); `environment(instance)` gives its `EnvLayer`; `rootfs` is the built
    root filesystem. The real suites and the bundled suite differ only in these three.
    """

    def __init__(self, *, rootfs: Path, source: Callable[[Instance], Path],
                 environment: Callable[[Instance], EnvLayer], test_timeout_s: float = 1800,
                 agent_limits: Any = None,
                 prepare: Callable[[Instance], None] | None = None):
        from tasks.sandbox import Limits

        self.rootfs, self.source, self.environment = rootfs, source, environment
        self.prepare = prepare
        self.test_timeout_s = test_timeout_s
        self.agent_limits = agent_limits or Limits(wall_s=120, cpu_s=240, disk_bytes=4 << 30,
                                                   inodes=1 << 15,
                                                   processes=1024)

    def open_sandbox(self, instance: Instance, *, limits: Any = None,
                     owner: str = "agent") -> Any:
        """A fresh sandbox holding `instance`'s repository at ``/testbed``, owned by `owner`
        (the grading sandbox's is root's: the verifier runs as root, capabilities dropped),
        laid over the environment's checkout so its install products stay
        (`tasks.swebench.environment.lay_over_testbed`); `prepare` (when given) runs first."""
        from tasks.sandbox import Sandbox
        from tasks.swebench.environment import lay_over_testbed

        env = self.environment(instance)
        if self.prepare is not None:
            self.prepare(instance)
        sandbox = Sandbox(self.rootfs, limits=limits or self.agent_limits, workdir="/testbed",
                          binds=env.binds, layers=env.layers)
        try:
            lay_over_testbed(sandbox, self.source(instance), owner=owner)
            sandbox.run("git config --global --add safe.directory /testbed", cwd="/",
                        user=owner)
        except BaseException:
            sandbox.close()
            raise
        return sandbox

    def grading_limits(self) -> Any:
        """The grading sandbox's limits: the test timeout, room for a repository checkout
        with its bytecode (32,768 inodes, about 64 MiB of host kernel memory when full), and
        32 MiB of test output kept (the log is read from the pipe; a longer one fails)."""
        from tasks.sandbox import Limits

        return Limits(wall_s=self.test_timeout_s, cpu_s=int(self.test_timeout_s),
                      disk_bytes=4 << 30, inodes=1 << 15, processes=2048,
                      output_bytes=32 << 20)

    def evaluate(self, instance: Instance, patch: str | None, *,
                 sanitize: bool = True) -> EvalResult:
        """Grade the prediction `patch` (a unified diff; "" or None: no change) the way the
        official harness does, in a fresh sandbox (`sanitize=False` keeps its changes to
        test infrastructure: only for showing what the hygiene step prevents)."""
        started = time.perf_counter()
        with self.open_sandbox(instance, limits=self.grading_limits(), owner="root") as sandbox:
            setup_s = time.perf_counter() - started
            return self.evaluate_in(sandbox, instance, patch, setup_s=setup_s,
                                    sanitize=sanitize)

    def evaluate_in(self, sandbox: Any, instance: Instance, patch: str | None, *,
                    setup_s: float = 0.0, sanitize: bool = True) -> EvalResult:
        """Apply `patch` in `sandbox` (a fresh one from `open_sandbox`) and run the eval.

        With `sanitize` (always, but to show what it prevents) the prediction loses its test
        infrastructure (`sanitize_patch`) and its pytest-configuration hunks
        (`tasks.swebench.tamper.check_patch`), and the findings become the result's `flags`.
        The log is the sandbox commands' output as the harness's pipe carried it; the eval
        script exits with its test command's status (`with_test_status`), and a run killed,
        timed out or ended by a signal is not resolved, with that reason."""
        env = self.environment(instance)
        kept, dropped = (sanitize_patch(patch or "", instance.test_patch) if sanitize
                         else (patch or "", []))
        flags: tuple[str, ...] = ()
        if sanitize:
            report = check_patch(kept, repo=instance.repo, base_text=self._base_text(instance))
            kept = report.patch
            flags = tuple(f"test-infrastructure: {path} (file dropped)" for path in dropped
                          if INFRASTRUCTURE.search(path)) + report.flags
        sandbox.write_file(PATCH_PATH, kept)
        applied = sandbox.run(apply_script(PATCH_PATH), user="root", cwd="/testbed",
                              timeout_s=120)
        script = with_test_status(eval_script(instance, env.test_cmd, env.install))
        began = time.perf_counter()
        if len(script.encode()) <= MAX_INLINE_SCRIPT:  # in bash's memory, not a file
            run = sandbox.run(script, user="root", cwd="/testbed",
                              timeout_s=self.test_timeout_s)
        else:
            sandbox.write_file("/eval.sh", script, mode=0o755)
            run = sandbox.run("/bin/bash /eval.sh", user="root", cwd="/testbed",
                              timeout_s=self.test_timeout_s)
        test_s = time.perf_counter() - began
        log = applied.output + "\n" + run.output
        if run.timed_out:
            from swebench.harness.constants import TESTS_TIMEOUT

            log += f"\n{TESTS_TIMEOUT}\n"
        verdict = grade_log(log, instance)
        reason = abnormal_end(run)
        if reason:
            verdict = replace(verdict, resolved=False, status="RESOLVED_NO", reason=reason)
        return EvalResult(verdict, log, tuple(dropped), setup_s, test_s, run.timed_out,
                          {"exit_code": run.exit_code}, flags)

    def _base_text(self, instance: Instance) -> Callable[[str], str | None]:
        """Reads a file of `instance`'s repository at ``base_commit`` from the host's
        checkout (never from a sandbox)."""
        def read(path: str) -> str | None:
            if path.startswith("/") or ".." in path.split("/"):
                return None
            try:
                return (self.source(instance) / path).read_text(errors="replace")
            except (OSError, ValueError):
                return None
        return read


def abnormal_end(run: Any) -> str:
    """Why the eval run `run` (a `tasks.sandbox.CommandResult`) ended abnormally, or ""."""
    if run.timed_out:
        return "the test run timed out"
    if run.killed_by:
        return f"the test run was stopped by the {run.killed_by}"
    if run.exit_code is None:
        return "the test run was killed"
    if run.exit_code >= 128 or run.exit_code < 0:
        return f"the test run was ended by signal {abs(run.exit_code) % 128}"
    if run.truncated:
        return "the test output exceeded the grading sandbox's output limit"
    return ""


def real_backend(*, mirrors: str | None = None, progress: Callable[[str], None] | None = None,
                 test_timeout_s: float = 1800) -> LocalBackend:
    """The local backend of the real suites: repositories from the mirror directory,
    environments from the official specs (`tasks.swebench.environment`)."""
    import threading

    from tasks.sandbox import build_rootfs
    from tasks.swebench.environment import build_environment, prepare_instance
    from tasks.swebench.repos import checkout

    rootfs = build_rootfs(swe_recipe(), progress=progress)
    built: dict[tuple[str, str], Any] = {}
    prepared: set[str] = set()
    locks: dict[Any, threading.RLock] = {}
    guard = threading.Lock()

    def lock(key: Any) -> threading.RLock:  # one build per (repository, version) at a time
        with guard:
            return locks.setdefault(key, threading.RLock())

    def built_env(instance: Instance) -> Any:
        key = (instance.repo, instance.version)
        with lock(key):
            if key not in built:
                built[key] = build_environment(instance, rootfs=rootfs, mirrors=mirrors,
                                               progress=progress)
        return built[key]

    def environment(instance: Instance) -> EnvLayer:
        env = built_env(instance)
        return EnvLayer((env.layer,), tuple(env.binds()), env.spec.test_cmd, env.spec.install,
                        env.build_s, env.cached, env.notes)

    def prepare(instance: Instance) -> None:
        with lock((instance.repo, instance.version)):
            if instance.base_commit not in prepared:
                prepare_instance(instance, built_env(instance), rootfs=rootfs, mirrors=mirrors,
                                 timeout_s=test_timeout_s)
                prepared.add(instance.base_commit)

    return LocalBackend(rootfs=rootfs, source=lambda i: checkout(i.repo, i.base_commit, mirrors),
                        environment=environment, test_timeout_s=test_timeout_s,
                        prepare=prepare)
