"""Checkouts carry the tags up to ``base_commit`` (bug A: setuptools_scm versions)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tasks.swebench.repos import checkout

MIRRORS = os.environ.get("SWEBENCH_REPOS")
needs_mirrors = pytest.mark.skipif(
    not MIRRORS, reason="SWEBENCH_REPOS is unset: no mirror directory of the SWE-bench "
                        "repositories (see tasks/swebench/repos.py)")


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True,
                          check=True).stdout.strip()


def _commit(work: Path, name: str) -> str:
    (work / f"{name}.txt").write_text(name)
    _git(work, "add", ".")
    _git(work, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", name)
    return _git(work, "rev-parse", "HEAD")


def test_checkout_has_the_tags_before_its_commit_and_none_after(tmp_path, monkeypatch):
    monkeypatch.setenv("HARNESS_SWEBENCH_CACHE", str(tmp_path / "cache"))
    work = tmp_path / "mirrors" / "own__proj"
    work.mkdir(parents=True)
    _git(work, "init", "-q")
    _commit(work, "one")
    _git(work, "-c", "user.name=t", "-c", "user.email=t@t", "tag", "-a", "v1.0", "-m", "1.0")
    _commit(work, "two")
    base = _commit(work, "three")
    _commit(work, "four")
    _git(work, "tag", "v2.0")  # newer than base: must not be carried
    tree = checkout("own/proj", base, str(tmp_path / "mirrors"))
    assert _git(tree, "rev-parse", "HEAD") == base
    assert _git(tree, "tag") == "v1.0"
    assert _git(tree, "describe", "--tags", "--long") == f"v1.0-2-g{base[:7]}"
    assert _git(tree, "show", "--stat", "--format=%s") == "three\n\n three.txt | 1 +\n " \
        "1 file changed, 1 insertion(+)"
    assert _git(tree, "status", "--porcelain") == ""


@needs_mirrors
def test_pytest_checkout_describes_as_upstream_clone(tmp_path, monkeypatch):
    """pytest-dev__pytest-10051 (Verified): before the fix the checkout had no tags and
    pytest installed as 0.1.dev1; the expected description is the mirror's own
    ``git describe --tags --long aa55975c7d`` (computed 2025-12-05)."""
    monkeypatch.setenv("HARNESS_SWEBENCH_CACHE", str(tmp_path / "cache"))
    tree = checkout("pytest-dev/pytest", "aa55975c7d3f6c9f6d7f68accc41bb7cadf0eb9a")
    assert _git(tree, "describe", "--tags", "--long") == "7.2.0.dev0-157-gaa55975"
    assert "7.2.0" not in _git(tree, "tag").split()  # released after base_commit
    assert len(_git(tree, "show")) < 10_000  # the commit's own diff, not the whole tree
