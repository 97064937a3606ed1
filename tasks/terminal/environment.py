"""Build a Terminal-Bench task's environment: a shared rootfs and read-only layers, cached.

Layers, not copies: every distinct build-step prefix is built once, in a sandbox as root, and
exported to ``<rootfs cache>/layers/<name>-<hash>``, where every task that shares the prefix
stacks it read-only under its episode's layer:

1. the rootfs of the Debian release standing in for the base image (`terminal_recipe`; one
   per release, shared by every task on it);
2. the base image's layer (`tasks.terminal.base_images`: its Debian packages and setup, e.g.
   Python laid out as the python image, uv), shared by every task ``FROM`` that image;
3. the task's Debian packages (``apt-get install`` of its Dockerfile), installed by apt from
   the Debian mirror through the registries egress, shared by tasks asking for the same set;
4. the task's own steps (COPY, WORKDIR, ENV, the non-install part of each RUN; ``pip
   install`` through the egress), replayed without other network.
COPY sources are resolved again, confined to the build context, before they are hashed or
copied (`tasks.terminal.build_context`): a folder changed since it was loaded cannot slip a
host file in, and links inside a copied tree are hashed and copied as links, never followed.
"""

from __future__ import annotations

import datetime
import fcntl
import functools
import hashlib
import json
import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from tasks.base import EnvironmentNotBuilt
from tasks.sandbox import (AGENT_UID, BASE_RECIPE, DEFAULT_PATH, Bind, Limits, RootfsRecipe,
                           Sandbox, SandboxError, build_rootfs, rootfs_cache_dir)
from tasks.sandbox_egress import EgressProxy, configured_allow_list
from tasks.sandbox_gc import stopping
from tasks.sandbox_mirror import MIRROR_INSIDE
from tasks.terminal.base_images import BASE_IMAGES, BaseImage
from tasks.terminal.build_context import ContextSource
from tasks.terminal.taskdir import (MIRROR_ENV, BuildStep, TerminalTask, Unsupported,
                                    context_sources)

SHIMS = Path(__file__).with_name("shims")

__all__ = ["FAILURE_SUFFIX", "TERMINAL_RECIPE", "BuildFailed", "TaskEnvironment",
           "build_environment"]

TERMINAL_RECIPE = BASE_RECIPE.extend(
    "terminal",
    ("bc", "bubblewrap", "bzip2", "diffutils", "gcc", "jq", "libc6-dev", "make", "openssl",
     "patch",
     "python3-pip", "python3-setuptools", "python3-venv", "python3-wheel", "unzip", "zip"),
    ("mkdir -p /app /logs /tests",
     "echo 'APT::Sandbox::User \"root\";' > /etc/apt/apt.conf.d/90harness-sandbox"),
)
"""The shared rootfs of terminal tasks (about 400 MB): the base rootfs plus a C toolchain,
make, jq, bc, archivers, openssl, Python packaging tools and bubblewrap (for tasks that use it;
every sandbox command, a session's too, is set up by the host's bwrap: `tasks.sandbox`). apt
runs its downloads as root
(the sandbox's root is an unprivileged host id already)."""


@dataclass(frozen=True)
class TaskEnvironment:
    """The rootfs and the read-only layers (topmost first) an episode's sandbox stacks."""

    rootfs: Path
    layers: tuple[Path, ...]

    @property
    def layer(self) -> Path:
        """The task's own layer (its Dockerfile's steps)."""
        return self.layers[0]


def terminal_recipe(suite: str) -> RootfsRecipe:
    """`TERMINAL_RECIPE` on Debian release `suite` (``bookworm`` is `TERMINAL_RECIPE`)."""
    if suite == TERMINAL_RECIPE.suite:
        return TERMINAL_RECIPE
    return RootfsRecipe(f"terminal-{suite}", TERMINAL_RECIPE.packages, suite,
                        TERMINAL_RECIPE.mirror, TERMINAL_RECIPE.customize)


def task_base(task: TerminalTask) -> tuple[str, str]:
    """``(image label, Debian suite)`` of the task's ``FROM`` (bookworm when it has none)."""
    step = next((s for s in task.steps if s.kind == "from"), None)
    return (step.args[0], step.args[1]) if step else ("", TERMINAL_RECIPE.suite)


def _context(task: TerminalTask) -> Path:
    if task.context is not None:
        return task.context
    return task.path / "environment" if task.format == "tb2" else task.path


def _sources(task: TerminalTask, step: BuildStep) -> tuple[ContextSource, ...]:
    """A copy step's sources, confined to the build context again (`Unsupported` if not)."""
    return context_sources(_context(task), step.args[0], f"COPY {' '.join(step.args)}")


def mirror_of(task: TerminalTask) -> str | None:
    """The mirror folder a task's build may be served from: the one it was loaded with, else
    `MIRROR_ENV`'s (it also serves clones a step's script makes; the loader sees RUN lines)."""
    return task.extras.get("mirror") or os.environ.get(MIRROR_ENV) or None


def _layer_key(task: TerminalTask, lowers: tuple[Path, ...], agent_user: str) -> str:
    digest = hashlib.sha256(f"{[p.name for p in lowers]}|{task.steps!r}|{task.workdir}|"
                            f"{agent_user}".encode())
    for shim in sorted(SHIMS.iterdir()):  # the stand-ins the steps run with
        digest.update(shim.name.encode() + shim.read_bytes())
    mirror = mirror_of(task)
    if mirror:  # what a step's clone or download may be served from
        digest.update(f"mirror:{os.path.realpath(mirror)}".encode())
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


class BuildFailed(Unsupported, EnvironmentNotBuilt):
    """A task's environment did not build: an `Unsupported` to the family's code, an
    `EnvironmentNotBuilt` to the engine's. `recorded`: raised from a failure recorded by an
    earlier build, without building."""

    def __init__(self, message: str, *, recorded: bool = False):
        super().__init__(message)
        self.recorded = recorded


FAILURE_SUFFIX = ".failed.json"
"""A failed layer build's record: ``layers/<task>-<layer key>.failed.json`` beside where the
layer would be (``{"task", "error", "date"}``)."""


def build_environment(task: TerminalTask, *, progress: Callable[[str], None] | None = None,
                      retry_failed: bool = False, agent_user: str = "agent"
                      ) -> TaskEnvironment:
    """The task's rootfs and layers, each built on first use (`BuildFailed` when one cannot
    be; the layers: see the module docstring).

    A layer build that fails is recorded with its error under the layer's own key (a changed
    task or context is a new key, built afresh): later calls, in any process, raise that
    error at once without building again, unless `retry_failed`, which discards the record
    and builds. A build that fails while the command is stopping (a signal closed its
    sandbox) or for a sandbox fault is not recorded. `agent_user` ``agent`` (the sandbox's
    unprivileged user) is given the task's workdir; ``root`` leaves every owner as the
    Dockerfile's steps made it, as in the task's image."""
    if task.unsupported:
        raise Unsupported(task.unsupported)
    label, suite = task_base(task)
    try:
        rootfs = build_rootfs(terminal_recipe(suite), progress=progress)
    except SandboxError as exc:
        raise BuildFailed(f"rootfs of Debian {suite} cannot be built: {exc}") from None
    layer = functools.partial(cached_layer, task_id=task.id, retry_failed=retry_failed)
    lowers: tuple[Path, ...] = ()
    image = next((i for i in BASE_IMAGES if i.label == label), None)
    if image is not None:
        name = f"image-{_slug(label)}-{_digest(rootfs.name, image, APT_UPDATE)}"
        lowers = (layer(name, lambda staging: _build_image(rootfs, image, staging)),)
    extra = sorted(set(task.packages) - set(TERMINAL_RECIPE.packages))
    if extra:
        below = lowers
        name = f"apt-{_digest(rootfs.name, [p.name for p in below], extra)}"
        lowers = (layer(name, lambda staging: _build_packages(rootfs, below, extra, staging)),
                  *below)
    try:
        name = f"{task.id}-{_layer_key(task, (rootfs, *lowers), agent_user)}"
    except Unsupported as exc:
        raise BuildFailed(str(exc)) from None
    below = lowers
    own = layer(name, lambda staging: _replay(task, rootfs, below, staging, agent_user))
    return TaskEnvironment(rootfs, (own, *lowers))


def _digest(*parts: object) -> str:
    return hashlib.sha256(repr(parts).encode()).hexdigest()[:16]


def _slug(label: str) -> str:
    return "".join(c if c.isalnum() or c in ".-" else "-" for c in label).strip("-")


def cached_layer(name: str, build: Callable[[Path], None], *, task_id: str,
                 retry_failed: bool = False) -> Path:
    """``<rootfs cache>/layers/<name>``, made by ``build(staging)`` on first use under a lock
    (a concurrent builder waits, then finds it) and renamed into place only when complete; a
    failure is recorded beside it (see `build_environment`)."""
    layers = rootfs_cache_dir() / "layers"
    target = layers / name
    if target.is_dir():
        return target
    failure = layers / f"{name}{FAILURE_SUFFIX}"
    if not retry_failed:
        _raise_recorded(failure, task_id)
    layers.mkdir(parents=True, exist_ok=True)
    with open(layers / f".{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not target.is_dir():
            if retry_failed:
                failure.unlink(missing_ok=True)
            else:  # another process may have failed meanwhile
                _raise_recorded(failure, task_id)
            _build_layer(build, target, failure, task_id)
    return target


def _build_layer(build: Callable[[Path], None], target: Path, failure: Path,
                 task_id: str) -> None:
    """Build into a staging folder, then move it to `target`; a failure is recorded in
    `failure` (see `build_environment`) and raised as `BuildFailed`."""
    staging = target.parent / f".{target.name}.building"
    shutil.rmtree(staging, ignore_errors=True)
    try:
        build(staging)
    except (Unsupported, SandboxError) as exc:
        shutil.rmtree(staging, ignore_errors=True)
        message = str(exc) if isinstance(exc, Unsupported) else f"sandbox: {exc}"
        if isinstance(exc, Unsupported) and not stopping():
            partial = failure.with_name(f".{failure.name}.partial")
            partial.write_text(json.dumps({"task": task_id, "error": message,
                                           "date": datetime.date.today().isoformat()}))
            partial.replace(failure)
        raise BuildFailed(message) from None
    staging.rename(target)


def _raise_recorded(failure: Path, task_id: str) -> None:
    """Raise the failure recorded in `failure` as `BuildFailed`, if there is one (an
    unreadable record counts as none: the task is built again)."""
    try:
        record = json.loads(failure.read_text())
        error, date = str(record["error"]), str(record.get("date", "?"))
    except (OSError, ValueError, KeyError, TypeError):
        return
    raise BuildFailed(f"{error} (build failure recorded {date}; `harness tasks build SUITE "
                      f"--only {task_id} --retry-failed` builds it again)", recorded=True)


HOST_CA_BUNDLE = Path("/etc/ssl/certs/ca-certificates.crt")
"""The host's trust store, installed in a sandbox that reaches the registries: where the
host's egress re-signs TLS with its own CA, pip, apt and curl inside must trust it too."""


def trust_host_cas(box: Sandbox) -> None:
    """Install the host's CA bundle (public certificates only) as the sandbox's."""
    if HOST_CA_BUNDLE.is_file():
        box.write_file(str(HOST_CA_BUNDLE), HOST_CA_BUNDLE.read_bytes())


BUILD_ENV = {"PIP_BREAK_SYSTEM_PACKAGES": "1", "PIP_ROOT_USER_ACTION": "ignore",
             "PIP_DISABLE_PIP_VERSION_CHECK": "1", "UV_NATIVE_TLS": "1",
             "PIP_CERT": str(HOST_CA_BUNDLE)}
"""What build steps (and a Terminal-Bench task's commands) see: pip installs into the system
Python as it does in a Docker image (Debian's PEP 668 marker would refuse it), and trusts the
system's CA bundle (a pip from PyPI on a Python without truststore reads only its own)."""


BUILD_LIMITS = Limits(wall_s=3600, cpu_s=3600, disk_bytes=16 << 30, inodes=1 << 17,
                      file_size_bytes=8 << 30)
"""Limits of one build step's sandbox: large enough for the official set's builds (a Linux
kernel tree, model files), still bounded."""

APT_UPDATE = "apt-get update -q"
APT_INSTALL = ("DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "
               "{packages} && apt-get clean")
"""Package lists are fetched once, in the image's layer, and kept (as a Dockerfile's ``apt-get
update`` leaves them in its image: an agent's ``apt install`` works without one); installs
above it use them and keep only the installed files."""


_MAN_DIRS = "mkdir -p " + " ".join(f"/usr/share/man/man{n}" for n in range(1, 9))
"""The manual folders an image has and the slim rootfs leaves out (a step may move a page in)."""


def _registries_box(rootfs: Path, lowers: tuple[Path, ...], egress: EgressProxy) -> Sandbox:
    """A build sandbox over `lowers` that reaches the registries through `egress`."""
    return Sandbox(rootfs, limits=BUILD_LIMITS, workdir="/tmp", layers=lowers,
                   network="registries", egress=egress)


def _build_image(rootfs: Path, image: BaseImage, staging: Path) -> None:
    """A base image's layer: the package lists, its Debian packages, then its setup."""
    with EgressProxy(configured_allow_list()) as egress, \
            _registries_box(rootfs, (), egress) as box:
        trust_host_cas(box)
        _root(box, f"{_MAN_DIRS} && {APT_UPDATE}", "apt-get update", env=BUILD_ENV)
        if image.packages:
            _root(box, APT_INSTALL.format(packages=" ".join(image.packages)),
                  f"{image.label} packages", env=BUILD_ENV)
        if image.setup:
            _root(box, image.setup, f"{image.label} setup", env=BUILD_ENV)
        box.export_layer(staging)


def _build_packages(rootfs: Path, lowers: tuple[Path, ...], packages: list[str],
                    staging: Path) -> None:
    """A layer of Debian packages (a Dockerfile's ``apt-get install``), from the mirror."""
    with EgressProxy(configured_allow_list()) as egress, \
            _registries_box(rootfs, lowers, egress) as box:
        trust_host_cas(box)
        _root(box, _MAN_DIRS, "man page folders")  # package scripts link pages there
        if not lowers:  # no image layer with the package lists below
            _root(box, APT_UPDATE, "apt-get update", env=BUILD_ENV)
        _root(box, APT_INSTALL.format(packages=" ".join(packages)),
              "apt-get install " + " ".join(packages), env=BUILD_ENV)
        box.export_layer(staging)


def _replay(task: TerminalTask, rootfs: Path, lowers: tuple[Path, ...], staging: Path,
            agent_user: str) -> None:
    if task.build_network == "registries":
        with EgressProxy(configured_allow_list()) as egress:
            _replay_in(task, rootfs, lowers, staging, egress, agent_user)
    else:
        _replay_in(task, rootfs, lowers, staging, None, agent_user)


def _replay_in(task: TerminalTask, rootfs: Path, lowers: tuple[Path, ...], staging: Path,
               egress: EgressProxy | None, agent_user: str) -> None:
    env: dict[str, str] = dict(BUILD_ENV)
    workdir = "/"
    mirror = mirror_of(task)
    if mirror:
        env["HARNESS_MIRROR"] = MIRROR_INSIDE
    binds = (Bind(Path(mirror), MIRROR_INSIDE),) if mirror else ()
    with Sandbox(rootfs, limits=BUILD_LIMITS, workdir="/tmp", layers=lowers, binds=binds,
                 network=task.build_network, egress=egress) as box:
        box.copy_in(SHIMS, "/opt/harness-shims")
        if egress is not None:
            trust_host_cas(box)
        _root(box, _MAN_DIRS, "man page folders")
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
            elif step.kind == "from":  # its layers are below already
                continue
            else:
                result = box.run(step.args[0], user="root", cwd=workdir,
                                 env={**env, "PATH": f"/opt/harness-shims:{DEFAULT_PATH}"})
                if result.exit_code != 0:
                    raise Unsupported(f"RUN {step.args[0]!r} failed in the build sandbox: "
                                      f"{result.output.strip()[-300:]}")
        give = f" && chown -R {AGENT_UID}:{AGENT_UID} '{task.workdir}'" \
            if agent_user == "agent" else ""
        _root(box, f"mkdir -p '{task.workdir}'{give}", "agent workdir")
        _root(box, "rm -rf /opt/harness-shims", "cleanup")
        box.export_layer(staging)


def _root(box: Sandbox, command: str, what: str, env: dict[str, str] | None = None) -> None:
    result = box.run(command, user="root", cwd="/", env=env)
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
