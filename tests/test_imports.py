"""The import direction of DESIGN.md, enforced on the source tree.

harness.cli -> harness.{runner,train,report,audit,serve} -> harness.{stats,store,policies}
-> tasks (the contract) -> harness.core; `tasks` and `signals` import only harness.core (and
`tasks` its own `tasks.sandbox`); torch only lazily, under harness/train/, harness/policies/
and signals/. Imports count wherever they are written: ``import`` statements at any depth,
``importlib.import_module("...")`` calls with a literal name, and ``"package.module:attr"``
strings (registries that import by name); relative imports count as the absolute name they
resolve to. No two packages may import each other, directly or through others (same-layer
cycles included), and no two files either (imports inside functions count; imports under
``if TYPE_CHECKING:`` do not). A self-test plants each kind of violation and checks the
checker reports it.

Families are plugins: `harness` imports from `tasks` only the registry and the contract
(`CONTRACT`: ``tasks``, ``tasks.base``, ``tasks.plugins``, the data-set registry, the sandbox),
never a family's modules (``tasks.<family>...`` or ``tasks/<family>_<part>.py``); no family
imports another. A family's front-end, ``tasks/<family>/cli.py`` (its commands, servers and
benches, loaded by `harness.cli` through `tasks.plugins`), sits at the top layer: it may drive
the engine, and nothing in `tasks` imports it except by a registry string.
"""

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PROJECT = ("harness", "tasks", "signals")

LAYER = {  # a module may import modules of the same or a lower layer
    "harness.core": 0,
    "harness.records": 1, "harness.store": 1, "harness.episode_writer": 1,
    "harness.sqlite_batch": 1, "harness.writer_process": 1, "harness.stats": 1, "harness.policies": 1,
    "harness.episodes": 1, "harness.claims": 1, "harness.compute": 1,
    "harness.config": 2, "harness.runner": 2, "harness.train": 2, "harness.report": 2,
    "harness.audit": 2, "harness.serve": 2, "harness.signal_eval": 2, "harness.executors": 2,
    "harness.view": 2, "harness.study": 2, "harness.orchestrator": 2, "harness.merge": 2,
    "harness.ablation": 2,
    "harness.cli": 3, "harness.bench": 3, "harness.quickstart": 3, "harness.env_bench": 3,
    "harness.tasks_cli": 3, "harness.data": 3,
}
CONTRACT = ("tasks", "tasks.base", "tasks.plugins", "tasks.datasets", "tasks.embedded",
            "tasks.sandboxed_env")
"""What of `tasks` the engine may import (with every ``tasks.sandbox*`` module)."""
FRONT_END_LAYER = 3
TORCH_ALLOWED = ("harness/train/", "harness/policies/", "harness/merge/", "signals/")
MODULE_STRING = re.compile(r"^(harness|tasks|signals)(\.[A-Za-z_]\w*)*(:[A-Za-z_][\w.]*)?$")


def _layer(module: str) -> int | None:
    parts = module.split(".")
    for n in range(len(parts), 0, -1):
        if ".".join(parts[:n]) in LAYER:
            return LAYER[".".join(parts[:n])]
    return None


def _module_name(path: Path, root: Path = ROOT) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def family_of(module: str) -> str | None:
    """The family a ``tasks`` module belongs to (``tasks.frozenlake_random`` -> frozenlake);
    None for the registry, the contract and the sandbox."""
    parts = module.split(".")
    if parts[0] != "tasks" or len(parts) < 2 or module in CONTRACT \
            or parts[1].startswith("sandbox") or ".".join(parts[:2]) in CONTRACT:
        return None
    return parts[1].split("_")[0]


def is_front_end(module: str) -> bool:
    """A family's front-end: ``tasks.<family>.cli`` (top layer, see the module docstring)."""
    parts = module.split(".")
    return len(parts) == 3 and parts[0] == "tasks" and parts[2] == "cli"


def _is_import_module(call: ast.Call) -> bool:
    func = call.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    return name in ("import_module", "__import__")


def _absolute(node: ast.ImportFrom, module: str, is_package: bool) -> str | None:
    """The module a ``from`` import names, relative ones resolved against `module`."""
    if node.level == 0:
        return node.module
    base = module.split(".") if is_package else module.split(".")[:-1]
    base = base[:len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else [])) or None


def _imports(tree: ast.AST, module: str = "", is_package: bool = False
             ) -> Iterator[tuple[str, bool]]:
    """(imported module, is at module level) for every import in `tree`: statements
    (relative ones resolved against `module`), ``importlib.import_module("x")`` with a
    literal name, and ``"pkg.mod:attr"`` strings."""
    top = set(id(node) for node in getattr(tree, "body", []))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, id(node) in top
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node.module, id(node) in top
        elif isinstance(node, ast.ImportFrom) and node.level > 0:
            name = _absolute(node, module, is_package)
            if name:
                yield name, id(node) in top
        elif isinstance(node, ast.Call) and _is_import_module(node) and node.args:
            first = node.args[0]
            if isinstance(first, ast.Constant) and isinstance(first.value, str):
                yield first.value, False
        elif (isinstance(node, ast.Constant) and isinstance(node.value, str)
              and MODULE_STRING.match(node.value)
              and (":" in node.value or _is_project_module(node.value))):
            yield node.value.partition(":")[0], False


def _is_project_module(name: str) -> bool:
    """A dotted string that names a module of this tree (``"harness.db"`` is a file name)."""
    path = ROOT.joinpath(*name.split("."))
    return "." in name and (path.with_suffix(".py").is_file() or (path / "__init__.py").is_file())


def violations(module: str, relative: str, tree: ast.AST) -> list[str]:
    """Every import of `module` (file `relative`) that breaks the layering."""
    found = []
    is_package = relative.endswith("__init__.py")
    for imported, at_top in dict.fromkeys(_imports(tree, module, is_package)):
        root = imported.split(".")[0]
        if root == "torch":
            if not relative.startswith(TORCH_ALLOWED):
                found.append(f"{module} imports torch")
            elif at_top:
                found.append(f"{module} imports torch at module level (import it lazily)")
        mine, theirs = family_of(module), family_of(imported)
        if is_front_end(imported) and module.startswith("tasks") and module != "tasks" \
                and not is_front_end(module):
            found.append(f"{module} imports the front-end {imported}")
        if module.startswith("harness") and theirs is not None:
            found.append(f"{module} imports family internals {imported}")
        if mine is not None and theirs is not None and mine != theirs:
            found.append(f"{module} (family {mine}) imports {imported} (family {theirs})")
        if is_front_end(module):
            if root == "harness" and (_layer(imported) or 0) > FRONT_END_LAYER:
                found.append(f"{module} imports {imported}")
            continue
        if module.startswith(("tasks", "signals")):
            if root == "harness" and imported != "harness.core":
                found.append(f"{module} imports {imported}")
            if module.startswith("tasks") and root == "signals":
                found.append(f"{module} imports {imported}")
            if module.startswith("signals") and root == "tasks":
                found.append(f"{module} imports {imported}")
        elif root == "harness":
            mine, theirs = _layer(module), _layer(imported)
            if mine is None:
                found.append(f"{module} is not placed in a layer of this test")
            elif theirs is None:
                found.append(f"{imported} is not placed in a layer of this test")
            elif theirs > mine:
                found.append(f"{module} (layer {mine}) imports {imported} (layer {theirs})")
    return found


def _package(module: str) -> str:
    if is_front_end(module):
        return module  # a node of its own: it sits above the engine
    parts = module.split(".")
    return ".".join(parts[:2]) if parts[0] == "harness" and len(parts) > 1 else parts[0]


def package_graph(trees: dict[str, ast.AST]) -> dict[str, dict[str, str]]:
    """package -> {package it imports: one module-level example}, over project packages."""
    graph: dict[str, dict[str, str]] = {}
    for module, tree in trees.items():
        for imported, _ in _imports(tree):
            if imported.split(".")[0] not in PROJECT:
                continue
            a, b = _package(module), _package(imported)
            if a == "tasks" and is_front_end(imported):
                continue  # a registry string: harness.cli loads it (tasks.plugins)
            if a != b:
                graph.setdefault(a, {}).setdefault(b, f"{module} -> {imported}")
    return graph


def package_cycles(graph: dict[str, dict[str, str]]) -> list[str]:
    """Each edge a -> b for which b also reaches a, with the import that makes it."""
    def reaches(start: str) -> set[str]:
        seen, stack = set(), [start]
        while stack:
            for nxt in graph.get(stack.pop(), {}):
                if nxt not in seen:
                    seen.add(nxt)
                    stack.append(nxt)
        return seen

    return [f"{a} -> {b} ({why}) closes a cycle" for a in sorted(graph)
            for b, why in sorted(graph[a].items()) if a in reaches(b)]


def _type_checking_only(tree: ast.AST) -> set[int]:
    """Ids of the import nodes under ``if TYPE_CHECKING:`` (never run)."""
    hidden = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            hidden.update(id(inner) for part in node.body for inner in ast.walk(part))
    return hidden


def file_graph(trees: dict[str, ast.AST], packages: set[str]) -> dict[str, dict[str, str]]:
    """file module -> {file module it imports: the import}, over the files of `trees`
    (``from a import b`` is an edge to ``a.b`` when that is a file, else to ``a``;
    `packages`: the modules that are ``__init__`` files)."""
    graph: dict[str, dict[str, str]] = {}
    for module, tree in trees.items():
        hidden = _type_checking_only(tree)
        for node in ast.walk(tree):
            if id(node) in hidden:
                continue
            targets = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = _absolute(node, module, module in packages)
                if base:
                    targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in trees
                               else base for alias in node.names]
            for target in targets:
                if target in trees and target != module:
                    graph.setdefault(module, {}).setdefault(target, f"{module} -> {target}")
    return graph


SOURCES = sorted(p for package in PROJECT for p in (ROOT / package).rglob("*.py"))


def _trees(sources, root=ROOT) -> dict[str, ast.AST]:
    return {_module_name(p, root): ast.parse(p.read_text()) for p in sources}


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(ROOT)))
def test_import_direction(path):
    tree = ast.parse(path.read_text())
    assert violations(_module_name(path), str(path.relative_to(ROOT)), tree) == []


def test_no_import_cycle_between_packages():
    assert package_cycles(package_graph(_trees(SOURCES))) == []


def _packages(sources, root=ROOT) -> set[str]:
    return {_module_name(p, root) for p in sources if p.name == "__init__.py"}


def test_no_import_cycle_between_files():
    assert package_cycles(file_graph(_trees(SOURCES), _packages(SOURCES))) == []


FILE_CYCLES = {  # each pair of files imports the other; the last pair only for type checking
    "harness/audit/one.py": "from harness.audit.two import f\n",
    "harness/audit/two.py": "def f():\n    from .one import g\n",         # lazy, relative
    "harness/policies/__init__.py": "from harness.policies.reg import R\n",
    "harness/policies/reg.py": "def make():\n    from harness.policies import x\n",
    "tasks/shop/env.py": "from tasks.shop.oracle import expert\n",
    "tasks/shop/oracle.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                            "    from tasks.shop.env import Env\n",
}


def test_the_file_cycle_check_reports_planted_cycles(tmp_path):
    for relative, source in FILE_CYCLES.items():
        (tmp_path / relative).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / relative).write_text(source)
    sources = sorted(tmp_path.rglob("*.py"))
    cycles = package_cycles(file_graph(_trees(sources, tmp_path), _packages(sources, tmp_path)))
    assert sorted(c.split(" (")[0] for c in cycles) == [
        "harness.audit.one -> harness.audit.two", "harness.audit.two -> harness.audit.one",
        "harness.policies -> harness.policies.reg", "harness.policies.reg -> harness.policies"]


PLANTED = {
    "harness/stats/leak.py": "from harness.cli import main\n",                 # upward
    "harness/stats/rel.py": "from ..cli import main\n",                        # upward, relative
    "harness/store/lazy.py": "def f():\n    from harness.runner import run\n",  # upward, lazy
    "harness/policies/dyn.py": "import importlib\nM = importlib.import_module('harness.train')\n",
    "tasks/reg.py": "ENTRY = 'harness.runner:run_async'\n",                   # tasks -> harness
    "harness/runner/t.py": "import torch\n",                                  # torch outside
    "harness/train/eager.py": "import torch\n",                               # torch eagerly
    "harness/report/r.py": "from harness.audit import x\n",                   # report -> audit
    "harness/audit/a.py": "def g():\n    import harness.report.tables\n",     # audit -> report
    "harness/runner/fam.py": "def h():\n    from tasks.webshop.env import X\n",  # engine -> family
    "harness/cli/table.py": "BENCHES = {'w': 'tasks.webshop.bench:report'}\n",  # by string
    "harness/audit/ok.py": "from tasks.base import Suite\nfrom tasks.plugins import resolve\n",
    "tasks/sokoban/x.py": "from tasks.frozenlake import solve\n",            # family -> family
    "tasks/frozenlake_extra.py": "from tasks.frozenlake import solve\n",      # same family
    "tasks/minesweeper/cli.py": "def f():\n    from harness.runner import run\n",  # front-end
    "tasks/minesweeper/game.py": "from tasks.minesweeper.cli import f\n",    # imports it
}


def test_the_checker_reports_every_planted_violation(tmp_path):
    for relative, source in PLANTED.items():
        (tmp_path / relative).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / relative).write_text(source)
    sources = sorted(tmp_path.rglob("*.py"))
    found = {str(p.relative_to(tmp_path)): violations(_module_name(p, tmp_path),
                                                       str(p.relative_to(tmp_path)),
                                                       ast.parse(p.read_text()))
             for p in sources}
    assert found["harness/stats/leak.py"] == [
        "harness.stats.leak (layer 1) imports harness.cli (layer 3)"]
    assert found["harness/stats/rel.py"] == [
        "harness.stats.rel (layer 1) imports harness.cli (layer 3)"]
    assert found["harness/store/lazy.py"] == [
        "harness.store.lazy (layer 1) imports harness.runner (layer 2)"]
    assert found["harness/policies/dyn.py"] == [
        "harness.policies.dyn (layer 1) imports harness.train (layer 2)"]
    assert found["tasks/reg.py"] == ["tasks.reg imports harness.runner"]
    assert found["harness/runner/t.py"] == ["harness.runner.t imports torch"]
    assert found["harness/train/eager.py"] == [
        "harness.train.eager imports torch at module level (import it lazily)"]
    assert found["harness/report/r.py"] == [] and found["harness/audit/a.py"] == []
    assert found["harness/runner/fam.py"] == [
        "harness.runner.fam imports family internals tasks.webshop.env"]
    assert found["harness/cli/table.py"] == [
        "harness.cli.table imports family internals tasks.webshop.bench"]
    assert found["harness/audit/ok.py"] == [] and found["tasks/frozenlake_extra.py"] == []
    assert found["tasks/sokoban/x.py"] == [
        "tasks.sokoban.x (family sokoban) imports tasks.frozenlake (family frozenlake)"]
    assert found["tasks/minesweeper/cli.py"] == []
    assert found["tasks/minesweeper/game.py"] == [
        "tasks.minesweeper.game imports the front-end tasks.minesweeper.cli"]
    cycles = package_cycles(package_graph(_trees(sources, tmp_path)))
    assert any(c.startswith("harness.audit -> harness.report") for c in cycles), cycles
    assert any(c.startswith("harness.report -> harness.audit") for c in cycles), cycles
