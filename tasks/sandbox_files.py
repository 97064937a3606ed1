"""Reading a sandbox's files from the host, with the harness's own descriptors.

A verdict read through the sandbox (``cat`` run inside it) goes through binaries, libraries
and a loader that root inside the sandbox can replace, so the harness reads what a verifier
wrote from outside instead: the episode's merged tree as the mount namespace that holds it
sees it (``/proc/<holder>/root/...``), walked one component at a time with ``O_NOFOLLOW``.
The sandbox's part of the path may hold no symbolic link (it could point the host's read at a
host file) and the file must be a regular file (a FIFO would block the read); either is a
`SandboxError` naming the path. ``..`` components are refused.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path, PurePosixPath

from tasks.sandbox_rootfs import SandboxError

__all__ = ["read_confined_file"]

_DIRECTORY = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


def read_confined_file(base: Path, inside: str, *, limit: int) -> bytes:
    """The bytes of `inside` (an absolute path in the sandbox) under the host directory `base`
    (the sandbox's root as the host reaches it), at most `limit` bytes; symbolic links,
    ``..``, non-regular files and larger files are a `SandboxError`."""
    parts = PurePosixPath(inside).parts
    if not parts or parts[0] != "/" or ".." in parts:
        raise SandboxError(f"cannot read {inside!r}: an absolute path without '..' is needed")
    names = parts[1:]
    if not names:
        raise SandboxError(f"cannot read {inside!r}: it is a directory")
    try:
        directory = os.open(base, _DIRECTORY & ~os.O_NOFOLLOW)
    except OSError as error:
        raise SandboxError(f"cannot read {inside}: the sandbox's tree is gone ({error})") from None
    try:
        for name in names[:-1]:
            parent, directory = directory, _step(directory, name, inside)
            os.close(parent)
        return _read_regular(directory, names[-1], inside, limit)
    finally:
        os.close(directory)


def _step(directory: int, name: str, inside: str) -> int:
    """Open directory `name` under `directory`, refusing a link."""
    try:
        return os.open(name, _DIRECTORY, dir_fd=directory)
    except OSError as error:
        raise SandboxError(f"cannot read {inside}: {_why(error, name)}") from None


def _read_regular(directory: int, name: str, inside: str, limit: int) -> bytes:
    try:
        handle = os.open(name, _FILE, dir_fd=directory)
    except OSError as error:
        raise SandboxError(f"cannot read {inside}: {_why(error, name)}") from None
    try:
        info = os.fstat(handle)
        if not stat.S_ISREG(info.st_mode):
            raise SandboxError(f"cannot read {inside}: not a regular file")
        if info.st_size > limit:
            raise SandboxError(f"cannot read {inside}: {info.st_size} bytes, over {limit}")
        chunks, total = [], 0
        while chunk := os.read(handle, 1 << 20):
            chunks.append(chunk)
            total += len(chunk)
            if total > limit:
                raise SandboxError(f"cannot read {inside}: over {limit} bytes")
        return b"".join(chunks)
    finally:
        os.close(handle)


def _why(error: OSError, name: str) -> str:
    if error.errno in (errno.ELOOP, errno.ENOTDIR):
        return f"{name!r} is a symbolic link or not a directory (refused)"
    if error.errno == errno.ENOENT:
        return "No such file or directory"
    return error.strerror or str(error)
