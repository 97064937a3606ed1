"""The import direction of DESIGN.md, enforced on the source tree.

harness.cli -> harness.{runner,train,report,audit,serve} -> harness.{stats,store,policies}
-> harness.core; `tasks` and `signals` import only harness.core; torch only lazily, under
harness/train/, harness/policies/ and signals/.
"""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

LAYER = {  # a module may import modules of the same or a lower layer
    "harness.core": 0,
    "harness.records": 1, "harness.store": 1, "harness.stats": 1, "harness.policies": 1,
    "harness.episodes": 1,
    "harness.config": 2, "harness.runner": 2, "harness.train": 2, "harness.report": 2,
    "harness.audit": 2, "harness.serve": 2, "harness.signal_eval": 2,
    "harness.cli": 3, "harness.bench": 3, "harness.quickstart": 3, "harness.env_bench": 3,
    "harness.tasks_cli": 3,
}
TORCH_ALLOWED = ("harness/train/", "harness/policies/", "signals/")


def _layer(module: str) -> int | None:
    parts = module.split(".")
    for n in range(len(parts), 0, -1):
        if ".".join(parts[:n]) in LAYER:
            return LAYER[".".join(parts[:n])]
    return None


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(tree: ast.AST):
    """(imported module, is at module level) for every import in `tree`."""
    top = set(id(node) for node in tree.body)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, id(node) in top
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node.module, id(node) in top


SOURCES = sorted(p for package in ("harness", "tasks", "signals")
                 for p in (ROOT / package).rglob("*.py"))


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(ROOT)))
def test_import_direction(path):
    module = _module_name(path)
    tree = ast.parse(path.read_text())
    relative = str(path.relative_to(ROOT))
    for imported, at_top in _imports(tree):
        root = imported.split(".")[0]
        if root == "torch":
            assert relative.startswith(TORCH_ALLOWED), f"{module} imports torch"
            assert not at_top, f"{module} imports torch at module level (import it lazily)"
        if module.startswith(("tasks", "signals")):
            if root == "harness":
                assert imported == "harness.core", f"{module} imports {imported}"
            if module.startswith("tasks"):
                assert root != "signals", f"{module} imports {imported}"
            else:
                assert root != "tasks", f"{module} imports {imported}"
        elif root == "harness":
            mine, theirs = _layer(module), _layer(imported)
            assert mine is not None, f"{module} is not placed in a layer of this test"
            assert theirs is not None, f"{imported} is not placed in a layer of this test"
            assert theirs <= mine, f"{module} (layer {mine}) imports {imported} (layer {theirs})"


def test_the_checker_sees_a_violation(tmp_path):
    tree = ast.parse("import os\ndef f():\n    import torch\nfrom harness.cli import main\n")
    found = list(_imports(tree))
    assert ("torch", False) in found and ("harness.cli", True) in found
