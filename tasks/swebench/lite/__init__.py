"""``swe-lite@2``: SWE-bench instances the project writes itself (SWE-smith style).

Small pure-Python libraries of our own live under ``libs/<name>/`` (the fixed code and its
tests); each instance injects one bug. ``instances.jsonl`` holds the rows in the official
schema (``repo`` = ``swe-lite/<name>``, ``patch`` = the fix, ``test_patch`` = the test that
catches the bug, FAIL_TO_PASS / PASS_TO_PASS); it is generated from ``bugs.py`` by
``python -m tasks.swebench.lite.build`` and checked in CI (F2P fails on the base and passes
with the gold patch, P2P passes on both).

The base of an instance is the library with the gold patch reversed, committed in a fresh git
repository with a fixed author and date, so ``base_commit`` is the same hash everywhere
(`materialize` checks it). Episodes and grading go through the same `LocalBackend` and
`grade_log` as the real suites, with the official ``parse_log_pytest`` and the official test
command; the environment is the base rootfs's Python 3 with pytest (one for every instance).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from functools import lru_cache
from pathlib import Path

from harness.core import HarnessError
from tasks.swebench.data import Instance, read_jsonl
from tasks.swebench.repos import cache_root

__all__ = ["LITE_DIR", "LITE_REPO_PREFIX", "lite_instances", "materialize", "lite_backend",
           "lite_environment", "TEST_CMD"]

LITE_DIR = Path(__file__).resolve().parent
LITE_REPO_PREFIX = "swe-lite/"
TEST_CMD = "pytest --no-header -rA --tb=no -p no:cacheprovider"
"""The official ``TEST_PYTEST`` of ``swebench.harness.constants``."""
_GIT_ENV = {"GIT_AUTHOR_NAME": "swe-lite", "GIT_AUTHOR_EMAIL": "swe-lite@localhost",
            "GIT_COMMITTER_NAME": "swe-lite", "GIT_COMMITTER_EMAIL": "swe-lite@localhost",
            "GIT_AUTHOR_DATE": "2024-01-01T00:00:00+0000",
            "GIT_COMMITTER_DATE": "2024-01-01T00:00:00+0000"}


@lru_cache(maxsize=1)
def _rows() -> tuple[Instance, ...]:
    return tuple(read_jsonl(LITE_DIR / "instances.jsonl"))


def lite_instances() -> list[Instance]:
    """The bundled instances, in file order."""
    return list(_rows())


def _git(args: list[str], cwd: Path, stdin: str | None = None) -> str:
    env = {**os.environ, **_GIT_ENV}
    done = subprocess.run(["git", "-c", "init.defaultBranch=main", "-c", "core.autocrlf=false",
                           *args], cwd=cwd, input=stdin, capture_output=True, text=True, env=env)
    if done.returncode != 0:
        raise HarnessError(f"swe-lite: git {args[0]} failed: {done.stderr.strip()[-300:]}")
    return done.stdout


def base_tree(instance: Instance, target: Path) -> None:
    """Write the library with `instance`'s gold patch reversed into `target` (new folder)."""
    library = LITE_DIR / "libs" / instance.repo[len(LITE_REPO_PREFIX):]
    shutil.copytree(library, target, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    _git(["init", "-q"], target)
    _git(["apply", "-R", "-"], target, stdin=instance.patch)
    shutil.rmtree(target / ".git")


def commit_tree(target: Path) -> str:
    """``git init`` + one commit of everything in `target` with the fixed identity and date."""
    _git(["init", "-q"], target)
    _git(["add", "-A"], target)
    _git(["commit", "-q", "-m", "base"], target)
    return _git(["rev-parse", "HEAD"], target).strip()


def materialize(instance: Instance) -> Path:
    """The cached base repository of `instance` (HEAD = ``base_commit``, checked)."""
    target = cache_root() / "lite" / instance.instance_id / instance.base_commit
    if (target / ".git" / "HEAD").exists():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    # a staging folder of its own: episodes in flight at once may build the same base
    staging = Path(tempfile.mkdtemp(prefix=f".{instance.base_commit}.", dir=target.parent))
    try:
        shutil.rmtree(staging)
        base_tree(instance, staging)
        head = commit_tree(staging)
        if head != instance.base_commit:
            raise HarnessError(f"swe-lite {instance.instance_id}: base commit {head} differs "
                               f"from the row's {instance.base_commit} (library and row out of "
                               "sync; run python -m tasks.swebench.lite.build)")
        try:
            staging.rename(target)
        except OSError:  # another one finished first
            if not (target / ".git" / "HEAD").exists():
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return target


def lite_environment() -> Path:
    """The environment layer shared by every swe-lite instance: conda's activation shim."""
    from tasks.swebench.environment import ACTIVATE_SHIM

    layer = cache_root() / "envs" / "swe-lite-1" / "layer"
    shim = layer / "opt" / "miniconda3" / "bin" / "activate"
    if not shim.exists() or shim.read_text() != ACTIVATE_SHIM:
        shim.parent.mkdir(parents=True, exist_ok=True)
        for folder in (layer / "opt", layer / "opt" / "miniconda3", shim.parent):
            folder.chmod(0o755)
        shim.write_text(ACTIVATE_SHIM)
    return layer


def lite_backend(*, test_timeout_s: float = 300):
    """The local backend over the bundled instances (base rootfs, shared environment)."""
    from tasks.sandbox import BASE_RECIPE, build_rootfs
    from tasks.swebench.local import EnvLayer, LocalBackend

    env = EnvLayer((lite_environment(),), (), TEST_CMD)
    return LocalBackend(rootfs=build_rootfs(BASE_RECIPE), source=materialize,
                        environment=lambda instance: env, test_timeout_s=test_timeout_s)


def row_json(instance: Instance) -> str:
    return json.dumps(instance.row() | {"log_parser": "parse_log_pytest"}, sort_keys=True)
