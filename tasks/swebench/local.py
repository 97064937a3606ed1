"""The local backend: SWE-bench episodes and their grading in the sandbox, without Docker.

An episode's sandbox stacks the environment layer of its (repository, version) over the rootfs
(`SWE_RECIPE`: the base Debian plus ``patch``, the official harness's last apply fallback),
binds the spec's Python read-only at its own path, and holds the repository at
``base_commit`` in ``/testbed`` (owned by the agent). Grading follows the official
``run_instance``: a fresh sandbox, the prediction written to ``/tmp/patch.diff`` and applied
with the official commands in turn, then the instance's eval script (``/eval.sh``: reset the
test files, apply the test patch, run the tests between the markers), its output parsed and
judged by `tasks.swebench.grading.grade_log`. Nothing runs with network.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tasks.swebench.data import Instance
from tasks.swebench.grading import Verdict, apply_script, eval_script, grade_log, \
    sanitize_patch

logger = logging.getLogger(__name__)

__all__ = ["SWE_RECIPE", "EvalResult", "LocalBackend", "EnvLayer"]

LOG_PATH = "/tmp/test_output.txt"
PATCH_PATH = "/tmp/patch.diff"


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
    """One graded prediction: the official `verdict`, the test `log`, the paths of the
    prediction that were dropped as test infrastructure, and timings (seconds)."""

    verdict: Verdict
    log: str
    dropped: tuple[str, ...] = ()
    setup_s: float = 0.0
    test_s: float = 0.0
    timed_out: bool = False
    extra: dict[str, Any] = field(default_factory=dict)


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
        with its bytecode (32,768 inodes, about 64 MiB of host kernel memory when full)."""
        from tasks.sandbox import Limits

        return Limits(wall_s=self.test_timeout_s, cpu_s=int(self.test_timeout_s),
                      disk_bytes=4 << 30, inodes=1 << 15, processes=2048,
                      output_bytes=1 << 20)

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
        """Apply `patch` in `sandbox` (a fresh one from `open_sandbox`) and run the eval."""
        env = self.environment(instance)
        kept, dropped = (sanitize_patch(patch or "", instance.test_patch) if sanitize
                         else (patch or "", []))
        sandbox.write_file(PATCH_PATH, kept)
        applied = sandbox.run(apply_script(PATCH_PATH), user="root", cwd="/testbed",
                              timeout_s=120)
        script = eval_script(instance, env.test_cmd, env.install)
        sandbox.write_file("/eval.sh", script, mode=0o755)
        began = time.perf_counter()
        run = sandbox.run(f"/bin/bash /eval.sh > {LOG_PATH} 2>&1", user="root", cwd="/testbed",
                          timeout_s=self.test_timeout_s)
        test_s = time.perf_counter() - began
        log = applied.output + "\n" + sandbox.read_file(LOG_PATH).decode(errors="replace")
        if run.timed_out:
            from swebench.harness.constants import TESTS_TIMEOUT

            log += f"\n{TESTS_TIMEOUT}\n"
        return EvalResult(grade_log(log, instance), log, tuple(dropped), setup_s, test_s,
                          run.timed_out)


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
