"""Repositories at a commit, from a mirror directory (``$SWEBENCH_REPOS``) or cloned online.

A mirror directory holds one git repository per upstream repository, named
``owner__name``, ``owner+name`` or ``owner/name`` (bare or not; a ``repo`` sub-folder is looked
into too, the layout of ``git clone --mirror`` copies made by other tools). Nothing of the
repositories' code ever enters this project: checkouts go to the cache.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from harness.core import HarnessError
from tasks.sandbox_mirror import find_in_mirror, repository_git_dir

__all__ = ["RepoError", "REPOS_ENV", "mirror_path", "checkout", "cache_root", "read_at",
           "CHECKOUT_LAYOUT"]

REPOS_ENV = "SWEBENCH_REPOS"
CACHE_ENV = "HARNESS_SWEBENCH_CACHE"


class RepoError(HarnessError):
    """A repository or commit that cannot be found."""


def cache_root() -> Path:
    """``$HARNESS_SWEBENCH_CACHE``, else ``~/.cache/agent-rl-harness/swebench``."""
    configured = os.environ.get(CACHE_ENV)
    return Path(configured).expanduser() if configured else \
        Path.home() / ".cache" / "agent-rl-harness" / "swebench"


def _git(*args: str, cwd: Path | None = None, git_dir: Path | None = None) -> str:
    argv = ["git"] + ([f"--git-dir={git_dir}"] if git_dir else []) + list(args)
    done = subprocess.run(argv, cwd=cwd, capture_output=True, text=True)
    if done.returncode != 0:
        raise RepoError(f"git {' '.join(args[:3])} failed: {done.stderr.strip()[-300:]}")
    return done.stdout


def mirror_path(repo: str, mirrors: str | os.PathLike | None = None) -> Path:
    """The git dir of `repo` (``owner/name``) in the mirror directory."""
    root = mirrors or os.environ.get(REPOS_ENV)
    owner, _, name = repo.partition("/")
    found = find_in_mirror(Path(root), repo) if root else None
    if found is not None:
        return found
    cloned = cache_root() / "mirrors" / f"{owner}__{name}"
    if repository_git_dir(cloned) is not None:
        return repository_git_dir(cloned)  # type: ignore[return-value]
    if os.environ.get("HARNESS_OFFLINE") or not shutil.which("git"):
        raise RepoError(f"no mirror of {repo} under ${REPOS_ENV} ({root or 'unset'})")
    try:  # online: one bare clone, reused
        _git("clone", "--bare", "--quiet", f"https://github.com/{repo}.git", str(cloned))
    except RepoError as exc:
        raise RepoError(f"no mirror of {repo} under ${REPOS_ENV} ({root or 'unset'}) and "
                        f"cloning failed: {exc}") from None
    return cloned


def read_at(repo: str, commit: str, path: str, mirrors: str | None = None) -> str | None:
    """The text of `path` at `commit`, or None when it does not exist there."""
    try:
        return _git("show", f"{commit}:{path}", git_dir=mirror_path(repo, mirrors))
    except RepoError:
        return None


CHECKOUT_LAYOUT = 2
"""Bumped when what `checkout` puts into a work tree changes (2: history and tags)."""


def checkout(repo: str, commit: str, mirrors: str | None = None) -> Path:
    """A cached work tree of `repo` at `commit`: a git repository whose HEAD is `commit`
    (same hash, so the official ``git diff <base_commit>``, ``git show`` and ``git checkout
    <base_commit> <files>`` work), built once.

    Like upstream's clone with the tags newer than ``base_commit`` removed, it holds every
    tag reachable from `commit` and the commits back to them (commit objects only, plus the
    trees of `commit` and of its parents), so versions computed from tags (setuptools_scm:
    ``git describe``) are the ones upstream's images install."""
    owner, _, name = repo.partition("/")
    target = cache_root() / f"checkouts-{CHECKOUT_LAYOUT}" / f"{owner}__{name}" / commit
    if (target / ".git" / "HEAD").exists():
        return target
    source = mirror_path(repo, mirrors)
    staging = target.with_name(f".{commit}.tmp")
    if staging.exists():
        shutil.rmtree(staging)
    staging.mkdir(parents=True)
    _git("init", "--quiet", cwd=staging)
    _copy_commit(source, commit, staging)  # what the mirror lacks: .git/harness-missing-files
    _git("config", "user.email", "harness@localhost", cwd=staging)
    _git("config", "user.name", "harness", cwd=staging)
    staging.rename(target)
    return target


def _history_objects(source: Path, commit: str) -> tuple[list[str], list[tuple[str, str]]]:
    """The object ids to copy for `commit` (its tree and its parents' trees, every commit it
    descends from, the tag objects of the tags reachable from it) and those tags as
    ``(ref name, object id)``."""
    def listed(*args: str) -> list[str]:
        done = subprocess.run(["git", f"--git-dir={source}", *args], capture_output=True,
                              text=True)
        if done.returncode != 0:
            raise RepoError(f"commit {commit} is not in the mirror {source}: "
                            f"{done.stderr.strip()[-200:]}")
        return [line.split(" ")[0] for line in done.stdout.splitlines() if line]

    parents = listed("rev-parse", f"{commit}^@")
    ids = listed("rev-list", "--objects", "--no-walk", "--missing=allow-any", commit, *parents)
    ids += listed("rev-list", commit)
    tags = []
    for line in _git("for-each-ref", f"--merged={commit}", "--format=%(objectname) %(refname)",
                     "refs/tags", git_dir=source).splitlines():
        object_id, _, ref = line.partition(" ")
        tags.append((ref, object_id))
        ids.append(object_id)
    return list(dict.fromkeys(ids)), tags


def _copy_commit(source: Path, commit: str, staging: Path) -> list[str]:
    """Copy `commit` with the objects `_history_objects` names from the git dir `source` into
    the new repository `staging`, create its tags, check it out, and mark files whose blobs
    the mirror lacks (snapshots may omit the largest files) skip-worktree, so they never show
    up as deleted in ``git diff``; returns those paths."""
    ids, tags = _history_objects(source, commit)
    pack = subprocess.run(["git", f"--git-dir={source}", "pack-objects", "--missing=allow-any",
                           "--stdout", "-q"], input="\n".join(ids).encode() + b"\n",
                          capture_output=True)
    subprocess.run(["git", "index-pack", "--stdin"], input=pack.stdout, cwd=staging,
                   capture_output=True, check=True)
    if tags:
        subprocess.run(["git", "update-ref", "--stdin"], cwd=staging, check=True,
                       capture_output=True,
                       input="".join(f"create {ref} {oid}\n" for ref, oid in tags).encode())
    (staging / ".git" / "HEAD").write_text(commit + "\n")
    _git("read-tree", commit, cwd=staging)
    subprocess.run(["git", "checkout-index", "-a", "-f"], cwd=staging, capture_output=True)
    missing = [line[3:] for line in _git("status", "--porcelain", cwd=staging).splitlines()
               if line.startswith(" D ")]
    for start in range(0, len(missing), 200):
        _git("update-index", "--skip-worktree", *missing[start:start + 200], cwd=staging)
    if missing:
        (staging / ".git" / "harness-missing-files").write_text("\n".join(missing) + "\n")
    return missing
