"""Build a Terminal-Bench task's environment: its rootfs and a read-only task layer, cached.

The rootfs is `TERMINAL_RECIPE` (plus the task's Debian packages when it needs more). The task
layer is the result of replaying the Dockerfile's steps (COPY, WORKDIR, ENV, the non-install
part of each RUN) in a sandbox as root without network; it is exported once to
``<rootfs cache>/layers/<task>-<hash>`` and stacked read-only under every episode's layer.
COPY sources are resolved again, confined to the build context, before they are hashed or
copied (`tasks.terminal.build_context`): a folder changed since it was loaded cannot slip a
host file in, and links inside a copied tree are hashed and copied as links, never followed.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
from collections.abc import Callable
from pathlib import Path

from tasks.sandbox_egress import EgressProxy, configured_allow_list
from tasks.sandbox import (AGENT_UID, BASE_RECIPE, DEFAULT_PATH, Limits, RootfsRecipe, Sandbox, SandboxError,
                           build_rootfs, rootfs_cache_dir)
from tasks.terminal.build_context import ContextSource
from tasks.terminal.taskdir import BuildStep, TerminalTask, Unsupported, context_sources

SHIMS = Path(__file__).with_name("shims")

__all__ = ["TERMINAL_RECIPE", "TaskEnvironment", "build_environment"]

TERMINAL_RECIPE = BASE_RECIPE.extend(
    "terminal",
    ("bc", "bzip2", "diffutils", "gcc", "jq", "libc6-dev", "make", "openssl", "patch",
     "python3-pip", "python3-setuptools", "python3-venv", "python3-wheel", "unzip", "zip"),
    ("mkdir -p /app /logs /tests",),
)
"""The shared rootfs of terminal tasks (about 400 MB): the base rootfs plus a C toolchain,
make, jq, bc, archivers, openssl and Python packaging tools."""


class TaskEnvironment(tuple):
    """``(rootfs, layer)``: the directories an episode's sandbox stacks."""

    @property
    def rootfs(self) -> Path:
        return self[0]

    @property
    def layer(self) -> Path:
        return self[1]


def recipe_for(task: TerminalTask) -> RootfsRecipe:
    """`TERMINAL_RECIPE`, or it plus the task's extra Debian packages."""
    extra = sorted(set(task.packages) - set(TERMINAL_RECIPE.packages))
    if not extra:
        return TERMINAL_RECIPE
    recipe = TERMINAL_RECIPE.extend("terminal-x", tuple(extra))
    return RootfsRecipe(f"terminal-{recipe.digest()[:8]}", recipe.packages, recipe.suite,
                        recipe.mirror, recipe.customize)


def _context(task: TerminalTask) -> Path:
    if task.context is not None:
        return task.context
    return task.path / "environment" if task.format == "tb2" else task.path


def _sources(task: TerminalTask, step: BuildStep) -> tuple[ContextSource, ...]:
    """A copy step's sources, confined to the build context again (`Unsupported` if not)."""
    return context_sources(_context(task), step.args[0], f"COPY {' '.join(step.args)}")


def _layer_key(task: TerminalTask, rootfs: Path) -> str:
    digest = hashlib.sha256(f"{rootfs.name}|{task.steps!r}|{task.workdir}".encode())
    root = Path(os.path.realpath(_context(task)))
    for step in task.steps:
        if step.kind != "copy":
            continue
        for source in _sources(task, step):
            files = sorted(source.path.rglob("*")) if source.path.is_dir() else [source.path]
            for file in files:  # rglob does not descend into linked folders
                if file.is_symlink():
                    digest.update(f"{file.relative_to(root)}->{os.readlink(file)}".encode())
                elif file.is_file():
                    digest.update(str(file.relative_to(root)).encode())
                    digest.update(file.read_bytes())
    return digest.hexdigest()[:16]


def build_environment(task: TerminalTask, *, progress: Callable[[str], None] | None = None
                      ) -> TaskEnvironment:
    """The task's rootfs and layer, built on first use (`Unsupported` when they cannot be)."""
    if task.unsupported:
        raise Unsupported(task.unsupported)
    try:
        rootfs = build_rootfs(recipe_for(task), progress=progress)
    except SandboxError as exc:
        raise Unsupported(f"rootfs with {', '.join(task.packages) or 'no extra packages'} "
                          f"cannot be built: {exc}") from None
    layers = rootfs_cache_dir() / "layers"
    target = layers / f"{task.id}-{_layer_key(task, rootfs)}"
    if target.is_dir():
        return TaskEnvironment((rootfs, target))
    layers.mkdir(parents=True, exist_ok=True)
    with open(layers / f".{target.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not target.is_dir():
            staging = layers / f".{target.name}.building"
            shutil.rmtree(staging, ignore_errors=True)
            _replay(task, rootfs, staging)
            staging.rename(target)
    return TaskEnvironment((rootfs, target))


HOST_CA_BUNDLE = Path("/etc/ssl/certs/ca-certificates.crt")
"""The host's trust store, installed in a sandbox that reaches the registries: where the
host's egress re-signs TLS with its own CA, pip, apt and curl inside must trust it too."""


def trust_host_cas(box: Sandbox) -> None:
    """Install the host's CA bundle (public certificates only) as the sandbox's."""
    if HOST_CA_BUNDLE.is_file():
        box.write_file(str(HOST_CA_BUNDLE), HOST_CA_BUNDLE.read_bytes())


BUILD_ENV = {"PIP_BREAK_SYSTEM_PACKAGES": "1", "PIP_ROOT_USER_ACTION": "ignore",
             "PIP_DISABLE_PIP_VERSION_CHECK": "1", "UV_NATIVE_TLS": "1"}
"""What build steps (and a Terminal-Bench task's commands) see: pip installs into the system
Python as it does in a Docker image (Debian's PEP 668 marker would refuse it)."""


def _replay(task: TerminalTask, rootfs: Path, staging: Path) -> None:
    if task.build_network == "registries":
        with EgressProxy(configured_allow_list()) as egress:
            _replay_in(task, rootfs, staging, egress)
    else:
        _replay_in(task, rootfs, staging, None)


def _replay_in(task: TerminalTask, rootfs: Path, staging: Path,
               egress: EgressProxy | None) -> None:
    env: dict[str, str] = dict(BUILD_ENV)
    workdir = "/"
    limits = Limits(wall_s=1200, cpu_s=1200, disk_bytes=6 << 30, inodes=1 << 17,
                    file_size_bytes=2 << 30)
    with Sandbox(rootfs, limits=limits, workdir="/tmp", network=task.build_network,
                 egress=egress) as box:
        box.copy_in(SHIMS, "/opt/harness-shims")
        if egress is not None:
            trust_host_cas(box)
        for step in task.steps:
            if step.kind == "workdir":
                workdir = step.args[0]
                _root(box, f"mkdir -p '{workdir}'", "WORKDIR")
            elif step.kind == "env":
                env[step.args[0]] = step.args[1]
            elif step.kind == "copy":
                for source in _sources(task, step):
                    _copy(box, source, step.args[1])
            elif step.kind == "write":
                box.write_file(step.args[0], step.args[1])
            else:
                result = box.run(step.args[0], user="root", cwd=workdir,
                                 env={**env, "PATH": f"/opt/harness-shims:{DEFAULT_PATH}"})
                if result.exit_code != 0:
                    raise Unsupported(f"RUN {step.args[0]!r} failed offline: "
                                      f"{result.output.strip()[-300:]}")
        _root(box, f"mkdir -p '{task.workdir}' && chown -R {AGENT_UID}:{AGENT_UID} "
                   f"'{task.workdir}'", "agent workdir")
        _root(box, "rm -rf /opt/harness-shims", "cleanup")
        box.export_layer(staging)


def _root(box: Sandbox, command: str, what: str) -> None:
    result = box.run(command, user="root", cwd="/")
    if result.exit_code != 0:
        raise Unsupported(f"{what} step failed: {result.output.strip()[-300:]}")


def _copy(box: Sandbox, source: ContextSource, target: str) -> None:
    """Docker's COPY of one confined source: a directory's contents into `target` (links
    inside copied as links); a file into `target` (a directory when it ends with ``/`` or
    exists as one), named as the source."""
    if source.path.is_dir():
        box.copy_in(source.path, target)
        return
    is_dir = target.endswith("/") or box.run(f"test -d '{target}'", user="root",
                                              cwd="/").exit_code == 0
    name = source.name.rsplit("/", 1)[-1]
    box.copy_in(source.path, f"{target.rstrip('/')}/{name}" if is_dir else target)
