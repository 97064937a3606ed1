"""Root filesystems for `tasks.sandbox`: Debian built once with mmdebstrap, cached by recipe hash.

`build_rootfs(recipe)` returns ``<cache>/<name>-<digest>``; the first call builds it (network
only here, only to the Debian mirror), later calls return the cached directory at once. A build
goes to a temporary directory and is renamed into place when complete, under a lock, so an
interrupted or concurrent build never leaves a half-built rootfs behind.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

from harness.core import HarnessError
from tasks.sandbox_idmap import sandbox_id_map, shift_tree

__all__ = ["AGENT_HOME", "AGENT_UID", "BASE_RECIPE", "RootfsRecipe", "SandboxError",
           "build_rootfs", "rootfs_cache_dir"]

AGENT_UID = 61000
"""Uid and gid of the sandbox's ``agent`` user: in Debian's range for global allocation, so no
host account shares its process count (RLIMIT_NPROC is per uid)."""
AGENT_HOME = "/home/agent"
BUILD_FORMAT = 2
"""Part of every digest: bump when the way recipes are built changes (2: ownership shifted into
the sandbox's host id range, `tasks.sandbox_idmap`)."""

_SLIM = ("path-exclude=/usr/share/man/*", "path-exclude=/usr/share/doc/*",
         "path-include=/usr/share/doc/*/copyright", "path-exclude=/usr/share/info/*",
         "path-exclude=/usr/share/locale/*", "path-include=/usr/share/locale/locale.alias")


class SandboxError(HarnessError):
    """The sandbox cannot run here, or a sandbox operation failed."""


@dataclass(frozen=True)
class RootfsRecipe:
    """A Debian root filesystem: `packages` on top of ``minbase``, then `customize` commands
    (run with ``/bin/sh -e`` inside the new rootfs, as root, at build time)."""

    name: str
    packages: tuple[str, ...]
    suite: str = "bookworm"
    mirror: str = "http://deb.debian.org/debian"
    customize: tuple[str, ...] = ()

    def digest(self) -> str:
        """Content hash of every field, `BUILD_FORMAT` and the host id range: the cache key."""
        payload = json.dumps({"format": BUILD_FORMAT, "host_ids": sandbox_id_map().host_base,
                              **asdict(self)}, sort_keys=True)
        return hashlib.sha256(payload.encode()).hexdigest()[:16]

    def extend(self, name: str, packages: tuple[str, ...] = (),
               customize: tuple[str, ...] = ()) -> "RootfsRecipe":
        """This recipe plus `packages` (sorted, deduplicated) and `customize` steps."""
        merged = tuple(sorted(set(self.packages) | set(packages)))
        return RootfsRecipe(name, merged, self.suite, self.mirror, self.customize + customize)


_AGENT_USER = (f"groupadd -g {AGENT_UID} agent && useradd -u {AGENT_UID} -g {AGENT_UID} "
               f"-m -d {AGENT_HOME} -s /bin/bash agent",
               "mkdir -p /work")

BASE_RECIPE = RootfsRecipe(
    name="base",
    packages=("bash", "ca-certificates", "coreutils", "file", "findutils", "gawk", "git",
              "grep", "less", "procps", "python3", "python3-pytest", "sed", "sqlite3", "tar",
              "xz-utils"),
    customize=_AGENT_USER,
)
"""A small Debian bookworm (about 250 MB): bash, coreutils, python3 with pytest, git, sqlite3,
and the unprivileged ``agent`` user."""


def rootfs_cache_dir() -> Path:
    """``$HARNESS_ROOTFS_CACHE``, else ``~/.cache/agent-rl-harness/rootfs``."""
    configured = os.environ.get("HARNESS_ROOTFS_CACHE")
    if configured:
        return Path(configured).expanduser()
    return Path.home() / ".cache" / "agent-rl-harness" / "rootfs"


def rootfs_path(recipe: RootfsRecipe, cache_dir: Path | None = None) -> Path:
    """Where `recipe`'s rootfs lives in the cache (built or not)."""
    return (cache_dir or rootfs_cache_dir()) / f"{recipe.name}-{recipe.digest()}"


def build_rootfs(recipe: RootfsRecipe, *, cache_dir: Path | None = None,
                 progress: Callable[[str], None] | None = None) -> Path:
    """The rootfs directory of `recipe`, built with mmdebstrap on the first call.

    `progress` receives one line per build stage (mmdebstrap's ``I:`` lines); nothing is
    reported when the cache already holds the rootfs.
    """
    target = rootfs_path(recipe, cache_dir)
    if (target / "etc" / "os-release").exists():
        return target
    if shutil.which("mmdebstrap") is None:
        raise SandboxError("mmdebstrap is not installed (Debian package mmdebstrap; see "
                           ".ci/system-packages)")
    if os.geteuid() != 0:
        raise SandboxError("building a sandbox rootfs needs root (mmdebstrap root mode)")
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target.parent / f".{target.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (target / "etc" / "os-release").exists():  # built meanwhile by another process
            return target
        staging = target.parent / f".{target.name}.building"
        if staging.exists():
            shutil.rmtree(staging)
        _mmdebstrap(recipe, staging, progress or (lambda line: None))
        shift_tree(staging, sandbox_id_map())
        staging.rename(target)
    return target


def _mmdebstrap(recipe: RootfsRecipe, staging: Path, progress: Callable[[str], None]) -> None:
    argv = ["mmdebstrap", "--mode=root", "--variant=minbase", "--format=directory"]
    argv += [f"--dpkgopt={option}" for option in _SLIM]
    if recipe.packages:
        argv.append("--include=" + ",".join(recipe.packages))
    for command in recipe.customize:
        argv.append(f'--customize-hook=chroot "$1" /bin/sh -ec {_shell_quote(command)}')
    argv += [recipe.suite, str(staging), recipe.mirror]
    progress(f"building rootfs {recipe.name}-{recipe.digest()} ({len(recipe.packages)} "
             f"packages from {recipe.mirror}, {recipe.suite})")
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env={**os.environ, "LC_ALL": "C.UTF-8"})
    tail: list[str] = []
    assert proc.stdout is not None
    for line in proc.stdout:
        line = line.rstrip()
        tail = (tail + [line])[-20:]
        if line.startswith("I: "):
            progress(line[3:])
    if proc.wait() != 0:
        shutil.rmtree(staging, ignore_errors=True)
        raise SandboxError(f"mmdebstrap failed for rootfs {recipe.name}: "
                           + " | ".join(x for x in tail if x)[-800:])
    progress(f"rootfs {recipe.name} ready")


def _shell_quote(text: str) -> str:
    return "'" + text.replace("'", "'\"'\"'") + "'"
