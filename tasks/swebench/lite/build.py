"""Write ``instances.jsonl`` from ``bugs.py`` and ``libs/``: ``python -m tasks.swebench.lite.build``

For each bug: the library with the bug injected is committed (fixed identity and date, so the
hash is ``base_commit``), the gold patch is ``git diff`` back to the fixed file, the test patch
is ``git diff`` of the test file with the new test appended; FAIL_TO_PASS are the new tests and
PASS_TO_PASS every test already in that file (pytest ids, as ``parse_log_pytest`` reads them).
Deterministic: the CI test rebuilds the rows and compares them with the file.
"""

from __future__ import annotations

import ast
import json
import shutil
import sys
import tempfile
from collections import Counter
from pathlib import Path

from tasks.swebench.lite import LITE_DIR, _git, commit_tree
from tasks.swebench.lite.bugs import BUGS

__all__ = ["build_rows", "main"]


def _tests_in(path: Path) -> list[str]:
    tree = ast.parse(path.read_text())
    return [node.name for node in tree.body
            if isinstance(node, ast.FunctionDef) and node.name.startswith("test_")]


def _row(bug: dict, number: int, work: Path) -> dict:
    library = LITE_DIR / "libs" / bug["lib"]
    repo = work / f"{bug['lib']}-{number}"
    shutil.copytree(library, repo, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    source = repo / bug["file"]
    fixed = source.read_text()
    if fixed.count(bug["fixed"]) != 1:
        raise ValueError(f"{bug['lib']}-{number}: the fixed text must occur once in "
                         f"{bug['file']}")
    source.write_text(fixed.replace(bug["fixed"], bug["buggy"]))
    base_commit = commit_tree(repo)
    source.write_text(fixed)
    patch = _git(["diff"], repo)
    _git(["checkout", "-q", "--", bug["file"]], repo)
    test_file = repo / bug["test_file"]
    existing = _tests_in(test_file)
    test_file.write_text(test_file.read_text() + bug["test"])
    test_patch = _git(["diff"], repo)
    new = [name for name in _tests_in(test_file) if name not in existing]
    if sorted(new) != sorted(bug["f2p"]):
        raise ValueError(f"{bug['lib']}-{number}: new tests {new} differ from f2p {bug['f2p']}")
    return {
        "repo": f"swe-lite/{bug['lib']}", "instance_id": f"swe-lite__{bug['lib']}-{number}",
        "base_commit": base_commit, "patch": patch, "test_patch": test_patch,
        "problem_statement": bug["issue"], "hints_text": "", "created_at": "2024-01-01T00:00:00Z",
        "version": "1",
        "FAIL_TO_PASS": json.dumps([f"{bug['test_file']}::{n}" for n in bug["f2p"]]),
        "PASS_TO_PASS": json.dumps([f"{bug['test_file']}::{n}" for n in existing]),
        "environment_setup_commit": base_commit, "log_parser": "parse_log_pytest",
    }


def build_rows() -> list[dict]:
    """The rows of every bug, in ``bugs.py`` order."""
    counts: Counter[str] = Counter()
    rows = []
    with tempfile.TemporaryDirectory(prefix="swe-lite-build-") as tmp:
        for bug in BUGS:
            counts[bug["lib"]] += 1
            rows.append(_row(bug, counts[bug["lib"]], Path(tmp)))
    return rows


def main() -> int:
    rows = build_rows()
    target = LITE_DIR / "instances.jsonl"
    target.write_text("".join(json.dumps(row, sort_keys=True) + "\n" for row in rows))
    print(f"wrote {len(rows)} instances to {target}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
