"""Host-side package builds of the environment builder, confined with bubblewrap.

``uv pip compile`` and ``pip wheel`` must reach the package registry, and both run the build
backends (``setup.py``, PEP 517 hooks) of sdists they resolve or build: third-party code on
the host. `run_host_build` runs them under ``bwrap`` with

- a read-only view of the host filesystem (``--ro-bind / /``), the invoking user's home hidden
  (a tmpfs; the interpreter, the tools and the user's pip/uv configuration files are bound
  back read-only), the host's ``/run`` (its Unix sockets) hidden, the kernel surfaces the
  sandbox masks or makes read-only (`tasks.sandbox.kernel_surfaces`), a private ``/tmp``
  (also ``$HOME``; as root an ext4 image of `TMP_BYTES` and `TMP_INODES`, else a tmpfs of
  `TMP_BYTES`), and only the given output directory and the pip/uv cache directories
  writable;
- new pid, IPC, UTS and network namespaces, a new session, ``--die-with-parent``, every
  capability dropped, the sandbox's seccomp filter (`tasks.sandbox_seccomp`), `LIMITS`
  (processes, address space, file size), a cleared environment (certificate, ``PIP_*`` and
  ``UV_*`` variables kept);
- registry access only through the allow-listing egress proxy of `tasks.sandbox_egress`
  (`configured_allow_list`: PyPI and Debian unless ``HARNESS_EGRESS_ALLOW`` says otherwise):
  its socket is bound in and a forwarder on the namespace's loopback serves the proxy
  variables, so a build script reaches no other host, loopback service or private address;
  what the proxy refused is logged and named in a failed build's error;
- when the harness runs as root, the unprivileged uid `tasks.sandbox.AGENT_UID` (``setpriv``,
  no capabilities, no new privileges), so files only root may read stay unreadable.

The escape battery runs as such a build's command (`tests/tasks/sandbox/test_escape_battery.py`).
Departure from the sandbox proper: no user namespace (the process is host uid `AGENT_UID`
with no capabilities, not uid 0 of a namespace), and the writable output and cache
directories have no quota.

Without ``bwrap`` (Debian ``bubblewrap``; ``setpriv`` from util-linux when root) the build
fails with `EnvBuildError`, unless ``HARNESS_SWEBENCH_UNCONFINED_BUILD=1`` asks for the old,
unconfined call.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

from harness.core import HarnessError

logger = logging.getLogger(__name__)

__all__ = ["UNCONFINED_ENV", "EnvBuildError", "host_build_argv", "run_host_build",
           "require_confinement", "scratch_dir", "cache_dirs"]

UNCONFINED_ENV = "HARNESS_SWEBENCH_UNCONFINED_BUILD"
"""Set to ``1`` to run host-side package builds unconfined where ``bwrap`` is missing."""
_PASSED = re.compile(r"(?i)PIP_\w+|UV_\w+|SSL_CERT_(?:FILE|DIR)"
                     r"|REQUESTS_CA_BUNDLE|CURL_CA_BUNDLE|LANG|LC_ALL|SOURCE_DATE_EPOCH")
TMP_BYTES = 4 << 30
"""Size of the build's private ``/tmp`` (pip's build directories)."""
TMP_INODES = 1 << 17
LIMITS = "ulimit -u 2048 -v 4194304 -f 4194304 || exit 125; "
"""Per-process limits of a host build (bash ``ulimit``, sizes in KiB): processes of the build
uid 2,048, address space 4 GiB, file size 4 GiB."""
MEMORY_BYTES = 4 << 30
"""The whole build's memory, shared memory included (`tasks.sandbox_memory.MemoryBound`);
``/dev/shm`` is a folder of the build's ``/tmp`` file system, inside its size."""
REGISTRY_CONFIG = (".config/pip/pip.conf", ".pip/pip.conf", ".config/uv/uv.toml")
"""The invoking user's registry configuration files (relative to its home), bound read-only
at the same place under the confined ``$HOME`` (``/tmp``) so the registry stays the same."""


class EnvBuildError(HarnessError):
    """An environment that could not be built (the message says which step failed)."""


def host_build_argv(command: Sequence[str], *, readable: Sequence[Path] = (),
                    writable: Sequence[Path] = (), env: Mapping[str, str] | None = None,
                    home: Path | None = None, uid: int | None = None,
                    egress_socket_dir: Path | None = None, seccomp_fd: int | None = None,
                    tmp: Path | None = None) -> list[str]:
    """The ``bwrap`` argv that runs `command` confined (see the module docstring).

    `readable`: host paths bound back read-only at their own place (needed where they lie
    under the hidden `home`); `writable`: host directories bound writable at their own place;
    `env`: the whole environment of `command` (``HOME`` and ``TMPDIR`` are ``/tmp``);
    `uid`: switch to this uid and gid (needs root), None to keep the caller's;
    `egress_socket_dir`: a started `EgressProxy`'s socket folder, bound at `EGRESS_DIR` with
    the forwarder started before `command` (None: no network at all); `seccomp_fd`: an open
    descriptor of the compiled seccomp program (None: no filter); `tmp`: a mounted
    `tasks.sandbox_layer` file system to bind at ``/tmp`` (None: a tmpfs of `TMP_BYTES`).
    """
    from tasks.sandbox import kernel_surfaces
    from tasks.sandbox_egress import EGRESS_DIR, egress_env, egress_prologue

    argv = ["bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
            *kernel_surfaces(), "--tmpfs", "/run", "--unshare-net"]
    argv += (["--bind", str(tmp), "/tmp", "--bind", str(_shm_folder(tmp)), "/dev/shm"]
             if tmp is not None else
             ["--perms", "1777", "--size", str(TMP_BYTES), "--tmpfs", "/tmp",
              "--perms", "1777", "--size", str(TMP_BYTES), "--tmpfs", "/dev/shm"])
    if seccomp_fd is not None:
        argv += ["--seccomp", str(seccomp_fd)]
    prologue = LIMITS
    if egress_socket_dir is not None:
        argv += ["--ro-bind", str(egress_socket_dir), EGRESS_DIR]
        # loopback too goes through the proxy: nothing listens on this namespace's but the
        # forwarder
        env = {**(env or {}), **egress_env(), "no_proxy": "", "NO_PROXY": ""}
        prologue += egress_prologue()
    command = ["/bin/bash", "-c", prologue + 'exec "$@"', "bash", *command]
    if home is not None and home.resolve() != Path("/"):
        argv += ["--tmpfs", str(home)]
        for relative in REGISTRY_CONFIG:
            if (home / relative).is_file():
                argv += [*_parents(f"/tmp/{relative}"), "--ro-bind", str(home / relative),
                         f"/tmp/{relative}"]
    for flag, paths in (("--ro-bind", readable), ("--bind", writable)):
        for path in paths:
            argv += _bind(flag, Path(path), home)
    argv += ["--unshare-pid", "--unshare-ipc", "--unshare-uts", "--die-with-parent",
             "--new-session", "--clearenv", "--chdir", "/tmp"]
    for key, value in {**(env or {}), "HOME": "/tmp", "TMPDIR": "/tmp"}.items():
        argv += ["--setenv", key, value]
    argv += ["--cap-drop", "ALL"]
    if uid is not None:
        argv += ["--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID", "--", "setpriv",
                 f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--inh-caps=-all",
                 "--bounding-set=-all", "--no-new-privs"]
    return [*argv, "--", *command]


def _bind(flag: str, path: Path, home: Path | None) -> list[str]:
    """`path` bound at its real place; also at its own place when that lies under the hidden
    `home` through a symbolic link (the tmpfs there has no links)."""
    real = path.resolve()
    places = [real] + ([path.absolute()] if path.absolute() != real and home is not None
                       and path.absolute().is_relative_to(home) else [])
    return [arg for place in places
            for arg in (*_parents(place), flag, str(real), str(place))]


def _parents(path: Path | str) -> list[str]:
    """bwrap arguments that create `path`'s missing parent directories world-traversable
    (bwrap makes them 0700, which the unprivileged uid could not pass); existing ones stay."""
    parents = [str(p) for p in reversed(Path(path).parents) if str(p) != "/"]
    return [arg for parent in parents for arg in ("--perms", "0755", "--dir", parent)]


def _build_uid() -> int | None:
    """The uid the confined build runs as: `AGENT_UID` when this process is root."""
    from tasks.sandbox import AGENT_UID

    return AGENT_UID if os.geteuid() == 0 else None


def _own(path: Path) -> None:
    """Make `path` (a directory) the build uid's, so the confined build can write it."""
    uid = _build_uid()
    if uid is not None and path.stat().st_uid != uid:
        os.chown(path, uid, uid)


def cache_dirs(root: Path) -> dict[str, Path]:
    """The pip and uv cache directories of confined builds (under `root`), made writable."""
    dirs = {"PIP_CACHE_DIR": root / "host-cache" / "pip",
            "UV_CACHE_DIR": root / "host-cache" / "uv"}
    for path in dirs.values():
        path.mkdir(parents=True, exist_ok=True)
        _own(path)
    return dirs


@contextmanager
def scratch_dir(root: Path) -> Iterator[Path]:
    """A fresh directory under ``root/host-build`` the confined build may write, removed after."""
    (root / "host-build").mkdir(parents=True, exist_ok=True)
    path = Path(tempfile.mkdtemp(prefix="out-", dir=root / "host-build"))
    try:
        _own(path)
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def require_confinement() -> bool:
    """True when host builds can be confined here; False when they may run unconfined
    (``HARNESS_SWEBENCH_UNCONFINED_BUILD=1``, a warning is logged); else `EnvBuildError`."""
    missing = [tool for tool in ("bwrap", *(["setpriv"] if _build_uid() is not None else []))
               if shutil.which(tool) is None]
    if not missing:
        return True
    if os.environ.get(UNCONFINED_ENV) == "1":
        logger.warning("%s is missing: building packages on the host unconfined (%s=1)",
                       " and ".join(missing), UNCONFINED_ENV)
        return False
    raise EnvBuildError(
        f"building packages on the host needs {' and '.join(missing)} (Debian "
        f"{'bubblewrap' if 'bwrap' in missing else 'util-linux'}) to confine third-party "
        f"build scripts; install it, or set {UNCONFINED_ENV}=1 to build unconfined")


def run_host_build(command: Sequence[str], *, python: Path, cache_root: Path,
                   readable: Sequence[Path] = (), writable: Sequence[Path] = (),
                   stdin: str | None = None, timeout_s: float = 1800
                   ) -> subprocess.CompletedProcess[str]:
    """Run `command` (a ``uv pip compile`` or ``pip wheel`` of the interpreter prefix
    `python`) confined, with the directories `writable` (made the build uid's) plus the
    cache directories under `cache_root` writable; returns the finished process (text
    output captured)."""
    from tasks.sandbox import DEFAULT_PATH

    caches = cache_dirs(cache_root)
    env = {k: v for k, v in os.environ.items()
           if _PASSED.fullmatch(k) and k.upper() != "PIP_PROXY"}
    env |= {"PATH": f"{python / 'bin'}:{DEFAULT_PATH}", **{k: str(v) for k, v in caches.items()}}
    if not require_confinement():
        return _finish(list(command), command, stdin, timeout_s, pass_fds=())
    from tasks.sandbox import seccomp_program
    from tasks.sandbox_egress import EgressProxy, configured_allow_list
    from tasks.sandbox_memory import MemoryBound

    for path in writable:
        _own(path)
    seccomp_fd = os.open(seccomp_program(), os.O_RDONLY | os.O_CLOEXEC)
    try:
        with EgressProxy(configured_allow_list()) as egress, _private_tmp() as tmp:
            argv = host_build_argv(command, readable=[python, *readable],
                                   writable=[*writable, *caches.values()], env=env,
                                   home=Path.home(), uid=_build_uid(),
                                   egress_socket_dir=egress.socket_dir, seccomp_fd=seccomp_fd,
                                   tmp=tmp)
            memory = MemoryBound(MEMORY_BYTES)
            try:
                done = _finish([*memory.launcher(), *argv], command, stdin, timeout_s,
                               pass_fds=(seccomp_fd,))
            finally:
                memory.close()
            refused = sorted({f"{r.host}:{r.port}" for r in egress.log
                              if r.verdict != "allowed"})
    finally:
        os.close(seccomp_fd)
    if refused:
        logger.warning("the egress proxy refused or could not reach %s during `%s`",
                       ", ".join(refused), " ".join(command[:4]))
        if done.returncode != 0:
            done.stderr += (f"\n[harness] the egress proxy refused or could not reach: "
                            f"{', '.join(refused)} (allowed: {', '.join(configured_allow_list())};"
                            f" HARNESS_EGRESS_ALLOW adds hosts)")
    return done


@contextmanager
def _private_tmp() -> Iterator[Path | None]:
    """As root, a file system of `TMP_BYTES` and `TMP_INODES` for the build's ``/tmp`` (an ext4
    image: an inode flood pins no host memory; `tasks.sandbox_layer`), unmounted and removed
    after; else None (bwrap's tmpfs, bounded in bytes only)."""
    if os.geteuid() != 0:
        yield None
        return
    from tasks.sandbox_gc import make_sandbox_root
    from tasks.sandbox_layer import mount_layer

    root = make_sandbox_root(0)
    tmp = root / "tmp"
    tmp.mkdir()
    try:
        mount_layer(root, tmp, disk_bytes=TMP_BYTES, inodes=TMP_INODES)
        os.chmod(tmp, 0o1777)
        yield tmp
    finally:
        subprocess.run(["umount", "-l", str(tmp)], capture_output=True)
        shutil.rmtree(root, ignore_errors=True)


def _shm_folder(tmp: Path) -> Path:
    """The build's ``/dev/shm``: a folder of its ``/tmp`` file system (in its size)."""
    folder = tmp / ".dev-shm"
    folder.mkdir(mode=0o1777, exist_ok=True)
    os.chmod(folder, 0o1777)
    return folder


def _finish(argv: list[str], command: Sequence[str], stdin: str | None, timeout_s: float,
            *, pass_fds: tuple[int, ...]) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(argv, input=stdin, capture_output=True, text=True,
                              timeout=timeout_s, pass_fds=pass_fds)
    except subprocess.TimeoutExpired as exc:
        raise EnvBuildError(f"`{' '.join(command[:4])} ...` ran past {timeout_s:.0f} s") from exc
