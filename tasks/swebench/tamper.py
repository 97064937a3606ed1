"""The tamper check of a SWE-bench prediction, run at grading (issue 39).

A prediction can pass the hidden tests without fixing anything by changing how the tests run:
a force-pass plugin loaded through pytest configuration (``[tool:pytest] addopts = -p
pkg._forcepass`` in ``setup.cfg``, ``[tool.pytest.ini_options]`` in ``pyproject.toml``), a
``pytest11`` entry point that the eval script's ``pip install`` registers, ``PYTEST_*``
variables, ``sitecustomize``/``.pth`` start-up hooks. `check_patch` reads the diff hunk by
hunk and returns

- the patch without its **configuration hunks**: every hunk of ``setup.cfg``,
  ``pyproject.toml`` or ``setup.py`` whose added or removed lines lie in a pytest section
  (``[tool:pytest]``, ``[pytest]``, ``[tool.pytest.*]``) or name ``addopts``, ``pytest11``,
  ``PYTEST_*``, ``pytest_plugins``, ``sitecustomize``/``usercustomize`` or a ``.pth`` file
  (the section of a line is read from the hunk and, when given, from the file at the base
  commit). Dropping the hunk rather than pinning a configuration keeps every gold patch
  resolving: no gold patch in the official tables has such a hunk
  (``tests/tasks/swebench/test_swebench_tamper.py`` counts them). Whole files of test
  infrastructure (``conftest.py``, ``pytest.ini``, ``tox.ini``, ``.pth``, test files) are
  dropped before, by `tasks.swebench.grading.sanitize_patch`;
- **flags**, one line each, for every dropped hunk and for added lines that look like test
  runner tampering in any file: pytest's reporting hooks (``pytest_runtest_makereport``,
  ``hookwrapper``, ``TestReport``, imports of ``_pytest``) outside the pytest repository
  itself, the text of a test summary or of the eval script's markers, the old log file
  ``/tmp/test_output.txt``, killing the parent process, import hooks (``sys.meta_path``,
  ``sys.path_hooks``). Those lines are not removed (a plugin that nothing loads is inert);
  the flag is reported with the episode and `harness leaderboard` counts flagged resolves
  apart.

What this cannot see: code under test runs inside the test process, as root in the grading
sandbox, so a patch can rewrite pytest's reports in memory at import time (monkeypatching
``_pytest``) or write a complete fake session to the real standard output and exit 0. The
harness reads the log through its own pipe and fails runs killed by a signal and logs with
conflicting results (`tasks.swebench.grading`), which defeats forgeries appended to a file,
appended after pytest's own summary or followed by killing the runner; a self-contained
in-process forgery is only flagged, by the textual signs above, and obfuscated code evades
them. That residue is SWE-bench's own exposure, not this harness's.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["TamperReport", "check_patch", "CONFIG_FILES"]

CONFIG_FILES = ("setup.cfg", "pyproject.toml", "setup.py")
"""Files whose pytest-related hunks are dropped (``pytest.ini``/``tox.ini`` go whole)."""

_PYTEST_SECTION = re.compile(r"^(tool:pytest|pytest|tool\.pytest(\..*)?)$")
_HEADER = re.compile(r"^\s*\[\[?\s*([^\]]+?)\s*\]\]?\s*$")
_CONFIG_WORDS = re.compile(
    r"\baddopts\b|pytest11|\bPYTEST_[A-Z_]+|\bpytest_plugins\b|sitecustomize|usercustomize"
    r"|\.pth\b|\bpytest-plugins\b", re.I)
_RUNNER_HOOKS = re.compile(
    r"pytest_runtest_makereport|pytest_runtest_logreport|pytest_report_teststatus"
    r"|pytest_runtest_protocol|hookwrapper|\bTestReport\b|^\s*(from|import)\s+_pytest\b")
_FORGERY = re.compile(
    r"short test summary info|>>>>> (Start|End) Test Output|test_output\.txt"
    r"|os\.kill\(\s*os\.getppid|\bkillpg\b|\bsys\.(meta_path|path_hooks)\b")
_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@(.*)$")


@dataclass(frozen=True)
class TamperReport:
    """What `check_patch` found: `patch` without its configuration hunks, `flags` (one line
    per finding, empty for a clean patch) and `dropped_hunks` (how many were removed)."""

    patch: str
    flags: tuple[str, ...]
    dropped_hunks: int


def _files(patch: str) -> list[str]:
    return [p for p in re.split(r"(?m)^(?=diff --git )", patch) if p.startswith("diff --git ")]


def _split_hunks(part: str) -> tuple[list[str], list[list[str]]]:
    """A file's diff as (header lines, hunks as line lists, each starting with ``@@``)."""
    header: list[str] = []
    hunks: list[list[str]] = []
    for line in part.splitlines(keepends=True):
        if line.startswith("@@ "):
            hunks.append([line])
        elif hunks:
            hunks[-1].append(line)
        else:
            header.append(line)
    return header, hunks


def _section_at(base: str | None, line_number: int) -> str | None:
    """The INI/TOML section in force at 1-based `line_number` of `base` (None: unknown)."""
    if base is None:
        return None
    section = ""
    for text in base.splitlines()[: max(line_number - 1, 0)]:
        match = _HEADER.match(text)
        if match:
            section = match.group(1).strip().strip('"')
    return section


def _config_findings(path: str, hunk: list[str], base: str | None) -> list[str]:
    """Why one hunk of a configuration file touches pytest's configuration (empty: it
    does not)."""
    match = _HUNK.match(hunk[0])
    section = _section_at(base, int(match.group(1))) if match else None
    ini = not path.endswith(".py")
    found: list[str] = []
    for line in hunk[1:]:
        sign, text = line[:1], line[1:].rstrip("\n")
        header = _HEADER.match(text) if ini else None
        if header:
            section = header.group(1).strip().strip('"')
        if sign not in "+-" or line.startswith(("+++", "---")):
            continue
        words = _CONFIG_WORDS.search(text)
        if ini and section is not None and _PYTEST_SECTION.match(section) and text.strip():
            found.append(f"[{section}] {text.strip()[:60]}")
        elif words:
            found.append(f"{words.group(0)}: {text.strip()[:60]}")
    return found


def _source_findings(path: str, hunk: list[str], repo: str) -> list[str]:
    found = []
    for line in hunk[1:]:
        if not line.startswith("+") or line.startswith("+++"):
            continue
        text = line[1:]
        match = _FORGERY.search(text)
        if match is None and repo != "pytest-dev/pytest":
            match = _RUNNER_HOOKS.search(text)
        if match:
            found.append(f"runner-tamper: {path}: {match.group(0).strip()}")
    return found


def _renumber(hunk: list[str], shift: int) -> list[str]:
    match = _HUNK.match(hunk[0])
    if match is None or shift == 0:
        return hunk
    old, old_n, new, new_n, tail = match.groups()
    new_count = f",{new_n}" if new_n is not None else ""
    old_count = f",{old_n}" if old_n is not None else ""
    return [f"@@ -{old}{old_count} +{int(new) + shift}{new_count} @@{tail}\n", *hunk[1:]]


def _delta(hunk: list[str]) -> int:
    body = [line for line in hunk[1:] if not line.startswith("\\")]
    return sum(line.startswith("+") for line in body) - sum(line.startswith("-") for line in body)


def check_patch(patch: str, *, repo: str = "",
                base_text: Callable[[str], str | None] | None = None) -> TamperReport:
    """The tamper check of `patch` (module docstring). `repo` is the instance's ``owner/name``
    (pytest's own repository may use its hooks); `base_text(path)` gives a file's text at the
    base commit (None when absent or unknown), used to place a hunk in its section."""
    kept_files: list[str] = []
    flags: list[str] = []
    dropped = 0
    for part in _files(patch):
        names = re.match(r"diff --git a/(\S+) b/(\S+)", part)
        path = names.group(2) if names else "?"
        header, hunks = _split_hunks(part)
        name = path.rsplit("/", 1)[-1]
        config = name in CONFIG_FILES  # at any depth: pytest reads the nearest to its args
        base = None
        if config and base_text is not None and not any(
                h.startswith("new file mode") for h in header):
            base = base_text(path)
        elif config and any(h.startswith("new file mode") for h in header):
            base = ""
        kept_hunks, shift = [], 0
        for hunk in hunks:
            findings = _config_findings(path, hunk, base) if config else []
            flags += _source_findings(path, hunk, repo)
            if findings:
                dropped += 1
                flags.append(f"pytest-config: {path}: {findings[0]} (hunk dropped)")
                shift -= _delta(hunk)
                continue
            kept_hunks.append(_renumber(hunk, shift))
        if hunks and not kept_hunks:
            continue
        text = "".join(header) + "".join("".join(h) for h in kept_hunks)
        kept_files.append(text if text.endswith("\n") else text + "\n")
    return TamperReport("".join(kept_files), tuple(dict.fromkeys(flags)), dropped)
