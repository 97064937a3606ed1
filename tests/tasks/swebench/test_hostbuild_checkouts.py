"""The confined host build from any checkout (issue 40): the README's test command must pass
wherever a user clones, and the build hides the caller's ``/tmp`` and home, where clones
often lie. Each place gets a copy of this checkout's files (what a clone of the working tree
holds) and runs `test_confined_build_writes_only_its_output` there, in its own pytest."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
TEST = ("tests/tasks/swebench/test_swebench_environment.py"
        "::test_confined_build_writes_only_its_output")


def _checkout_files() -> list[str]:
    """The checkout's tracked and untracked, not ignored files (as they are now)."""
    done = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-z", "--cached", "--others",
                           "--exclude-standard"], capture_output=True)
    if done.returncode != 0:
        pytest.skip("not a git checkout")
    return [name for name in done.stdout.decode().split("\0")
            if name and (ROOT / name).is_file()]


def _clone(files: list[str], target: Path) -> None:
    for name in files:
        (target / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, target / name, follow_symlinks=False)


PLACES = {"tmp": ("/tmp", "x-"), "home": (None, "x-"), "space": ("/tmp", "a b-")}
"""Where a clone is made (a fresh folder there, then ``x`` in it): under ``/tmp``, under the
home folder and under ``/tmp`` in a folder whose name has a space (``/tmp/a b-…/x``)."""


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bwrap (Debian bubblewrap) missing")
@pytest.mark.parametrize("place", sorted(PLACES))
def test_confined_build_passes_in_a_clone(place, tmp_path):
    parent, prefix = PLACES[place]
    folder = Path(tempfile.mkdtemp(prefix=prefix, dir=parent or Path.home()))
    clone = folder / "x"
    try:
        _clone(_checkout_files(), clone)
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "addopts=",
             "-p", "no:xdist", "--rootdir", str(clone), "--basetemp", str(tmp_path / "inner"),
             str(clone / TEST)],
            cwd=clone, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0 and "1 passed" in done.stdout, done.stdout[-3000:]
    finally:
        shutil.rmtree(folder, ignore_errors=True)
