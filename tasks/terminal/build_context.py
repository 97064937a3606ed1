"""Build-context confinement: which host files a task folder may make the harness read.

A task folder comes from the internet, so its author is untrusted. Every host path the
Terminal-Bench family reads or copies for a task (a Dockerfile ``COPY``/``ADD`` source, the
task's ``tests/``, solution and metadata files) goes through `resolve_source`, which keeps it
inside its context: the build context for Dockerfile sources (``environment/`` in TB2, the
task folder in TB1), the task folder for task files. It refuses absolute sources, ``..`` that
leaves the context, glob matches outside it, and symlinks, anywhere in the path or inside a
copied directory tree, whose target resolves outside it (a link that stays inside is fine).
The loader turns a refusal into an *unsupported* task whose reason names the step; the build
resolves every source again (the folder may have changed since it was loaded) and copies the
resolved path, whose links the sandbox's ``copy_in`` archives as links, never following them
on the host.

Docker reads an absolute or ``..`` source inside the context; this project refuses such a
source rather than guess which file the author meant.
"""

from __future__ import annotations

import errno
import glob
import os
import posixpath
import stat
from dataclasses import dataclass
from pathlib import Path

__all__ = ["ContextEscape", "ContextSource", "SourceMissing", "resolve_source"]


class ContextEscape(Exception):
    """A source that would make the harness read a host file outside its context."""


class SourceMissing(ContextEscape):
    """A source that names nothing in its context (a dangling link included)."""


@dataclass(frozen=True)
class ContextSource:
    """One file or directory a source names: `name`, as matched and relative to the context
    (it names the copy), and `path`, its real host path inside the context (what is read)."""

    name: str
    path: Path


def resolve_source(context: Path, source: str) -> tuple[ContextSource, ...]:
    """What `source` (``/``-separated, relative to `context`, globs allowed) names inside
    `context`, sorted by name.

    Raises `ContextEscape` ("source leaves the build context (...)") for an absolute source,
    ``..`` that leave the context, a match whose real path is outside it, a symlink inside a
    matched directory tree that resolves outside it, a symlink loop, or a device, FIFO or
    socket; `SourceMissing` when nothing matches."""
    root = Path(os.path.realpath(context))
    if source.startswith("/"):
        raise ContextEscape(f"source leaves the build context (absolute path {source!r})")
    relative = posixpath.normpath(source or ".")
    if relative == ".." or relative.startswith("../") or "\0" in relative:
        raise ContextEscape(f"source leaves the build context ({source!r})")
    if glob.has_magic(relative):
        names = sorted(glob.glob(relative, root_dir=root, include_hidden=True))
    else:
        names = [relative] if os.path.lexists(root / relative) else []
    if not names:
        raise SourceMissing(f"source {source!r} is missing")
    found = []
    for name in names:
        real = _inside(root, root / name)
        if not real.exists():
            raise SourceMissing(f"source {name!r} is a dangling link")
        if real.is_dir():
            _check_tree(root, real)
        elif not real.is_file():
            raise ContextEscape(f"source {name!r} is not a regular file or directory")
        found.append(ContextSource(name, real))
    return tuple(found)


def _inside(root: Path, path: Path) -> Path:
    """`path` with every link on it resolved; `ContextEscape` when that leaves `root`."""
    shown = str(path.relative_to(root))
    real = Path(os.path.realpath(path))
    if not real.is_relative_to(root):
        target = os.readlink(path) if path.is_symlink() else str(real)
        raise ContextEscape(f"source leaves the build context ({shown!r} -> {target!r})")
    try:
        os.stat(path)
    except OSError as exc:  # a dangling link inside is harmless; a loop is refused
        if exc.errno == errno.ELOOP:
            raise ContextEscape(f"source {shown!r} is a symlink loop") from None
    return real


def _check_tree(root: Path, top: Path) -> None:
    """Every link under `top` (none followed) resolves inside `root`; no special files."""
    for folder, dirs, files in os.walk(top, followlinks=False):
        for entry in dirs + files:
            path = Path(folder, entry)
            mode = path.lstat().st_mode
            if stat.S_ISLNK(mode):
                _inside(root, path)
            elif not (stat.S_ISDIR(mode) or stat.S_ISREG(mode)):
                raise ContextEscape(f"source {str(path.relative_to(root))!r} is not a "
                                    "regular file or directory")
