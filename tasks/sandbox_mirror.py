"""Sources outside the package registries, served into a sandbox from a local mirror folder.

A sandbox reaches only the registries (`tasks.sandbox_egress`); a build step or a command that
fetches from elsewhere (``git clone`` of a public repository, ``wget``/``curl`` of a file)
runs only when a user-provided mirror folder holds what it asks for:

- git repositories, one per upstream repository, named ``owner__name``, ``owner+name`` or
  ``owner/name`` (bare or not; a ``repo`` sub-folder is looked into too): the layout
  ``SWEBENCH_REPOS`` accepts, so one mirror serves both;
- files by URL: ``files/<host>/<path>`` (the query string dropped).

The folder is bound read-only at `MIRROR_INSIDE`; the stand-ins for ``git``, ``wget`` and
``curl`` (``tasks/terminal/shims``) serve a URL from it and fail, naming the URL, on any
other. Nothing of a mirror ever enters this project.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from urllib.parse import urlsplit

__all__ = ["MIRROR_INSIDE", "find_in_mirror", "mirror_file", "mirror_holds",
           "repository_git_dir", "source_urls"]

MIRROR_INSIDE = "/opt/harness-mirror"
_FETCHERS = ("curl", "wget")


def repository_git_dir(path: Path) -> Path | None:
    """The git dir of the repository at `path` (or `path`/repo): ``.git`` of a work tree or
    a bare repository; None when there is none."""
    for candidate in (path, path / "repo"):
        if (candidate / ".git").exists():
            return candidate / ".git"
        if (candidate / "HEAD").exists() and (candidate / "objects").exists():
            return candidate
    return None


def find_in_mirror(root: Path, repo: str) -> Path | None:
    """The git dir of `repo` (``owner/name``) in mirror folder `root`, or None."""
    owner, _, name = repo.partition("/")
    for folder in (f"{owner}__{name}", f"{owner}+{name}", f"{owner}/{name}", name):
        found = repository_git_dir(Path(root) / folder)
        if found is not None:
            return found
    return None


def _repo_of(url: str) -> str:
    """``owner/name`` of a repository URL (``https://host/owner/name(.git)``)."""
    parts = [p for p in urlsplit(url).path.split("/") if p]
    name = parts[-1].removesuffix(".git") if parts else ""
    return f"{parts[-2]}/{name}" if len(parts) >= 2 else name


def mirror_file(root: Path, url: str) -> Path:
    """Where mirror folder `root` keeps the file at `url`."""
    split = urlsplit(url)
    return Path(root) / "files" / split.netloc / split.path.lstrip("/")


def source_urls(command: str) -> list[tuple[str, str]]:
    """``(kind, url)`` of each outside source `command` asks for: ``git`` for a ``git
    clone``, ``file`` for a ``curl``/``wget`` download (URLs in order, duplicates kept)."""
    try:
        words = shlex.split(command, comments=True)
    except ValueError:
        words = command.split()
    found: list[tuple[str, str]] = []
    tool = ""
    for i, word in enumerate(words):
        base = word.rsplit("/", 1)[-1]
        if base in _FETCHERS:
            tool = "file"
        elif base == "git" and i + 1 < len(words) and words[i + 1] == "clone":
            tool = "git"
        elif word in ("&&", "||", ";", "|"):
            tool = ""
        elif tool and re.match(r"(https?|git)://", word):
            found.append((tool, word))
    return found


def mirror_holds(root: Path, kind: str, url: str) -> bool:
    """Whether mirror folder `root` holds the repository or file `url` names."""
    if kind == "git":
        return find_in_mirror(root, _repo_of(url)) is not None
    return mirror_file(root, url).is_file()
