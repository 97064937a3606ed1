"""Expensive test inputs built once per test session, whatever the number of xdist workers.

`built_once` builds a thing (an SFT start, a trained checkpoint) under a key that names its
recipe, in a private folder renamed into place when complete, under a lock shared by every
worker of the session: the first worker to ask builds it, the others wait and reuse it. A
build that fails leaves nothing in place (the next asker builds again).
"""

from __future__ import annotations

import fcntl
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest

__all__ = ["built_once", "session_folder"]


def session_folder(request: pytest.FixtureRequest) -> Path:
    """A folder every worker of this pytest session shares (pytest's base temporary folder,
    its parent under xdist, where each worker has its own below it)."""
    factory = request.getfixturevalue("tmp_path_factory")
    base = factory.getbasetemp()
    worker = getattr(request.config, "workerinput", None)
    folder = (base.parent if worker is not None else base) / "shared-builds"
    folder.mkdir(exist_ok=True)
    return folder


def built_once(folder: Path, key: str, build: Callable[[Path], None]) -> Path:
    """``folder/key``, made by ``build(private)`` unless it exists: `build` fills `private` (a
    new empty folder), which is then renamed to ``folder/key``. Waits while another worker
    builds the same key."""
    target = folder / key
    with open(folder / f"{key}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not target.exists():
            private = Path(tempfile.mkdtemp(prefix=f".{key}-", dir=folder))
            try:
                build(private)
                private.rename(target)
            finally:
                shutil.rmtree(private, ignore_errors=True)
        fcntl.flock(lock, fcntl.LOCK_UN)
    return target
