"""OSWorld's official evaluator functions (PyPI ``desktop-env``), imported module by module.

``desktop_env.evaluators.metrics`` and ``.getters`` import every submodule at package import,
and some of those need heavy libraries (``easyocr`` and torch, ``opencv``, ``librosa``,
``playwright``). This module registers the two packages without running their
``__init__``, then imports only the submodule that defines the function a task names (found by
reading upstream's own ``__init__`` import lists). A function whose submodule cannot be
imported here is reported with the missing library, so the capability check can list the task
as unsupported with that reason. Install: ``pip install -e '.[osworld]'`` then
``pip install --no-deps desktop-env==1.0.2`` (its declared dependencies include torch 2.5).
"""

from __future__ import annotations

import ast
import functools
import importlib
import importlib.util
import logging
import sys
import types
from collections.abc import Callable
from pathlib import Path

from harness.core import MissingDependencyError

PACKAGE = "desktop_env"
EXTRA = "osworld"
KINDS = ("metrics", "getters")


def official_available() -> str | None:
    """None when ``desktop_env`` is importable, else the reason."""
    if importlib.util.find_spec(PACKAGE) is None:
        return ("PyPI desktop-env is not installed (pip install -e '.[osworld]' && "
                "pip install --no-deps desktop-env==1.0.2)")
    return None


def _require() -> Path:
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise MissingDependencyError("desktop-env", EXTRA, "OSWorld's official evaluators "
                                     "(then: pip install --no-deps desktop-env==1.0.2)")
    return Path(list(spec.submodule_search_locations)[0])


@functools.cache
def _package(kind: str) -> str:
    """Register ``desktop_env.evaluators.<kind>`` as a bare package (its __init__ not run)."""
    root = _require()
    importlib.import_module(f"{PACKAGE}.evaluators")  # upstream's is comments only
    # upstream's getters warn on every result file an agent did not produce (an ordinary
    # failed task here); keep their errors only
    logging.getLogger("desktopenv").setLevel(logging.ERROR)
    name = f"{PACKAGE}.evaluators.{kind}"
    if name not in sys.modules:
        module = types.ModuleType(name)
        module.__path__ = [str(root / "evaluators" / kind)]
        module.__package__ = name
        sys.modules[name] = module
    return name


@functools.cache
def _function_index(kind: str) -> dict[str, str]:
    """Function name -> submodule, read from upstream's ``<kind>/__init__.py`` imports."""
    init = _require() / "evaluators" / kind / "__init__.py"
    index: dict[str, str] = {}
    for node in ast.parse(init.read_text()).body:
        if isinstance(node, ast.ImportFrom) and node.level == 1 and node.module:
            for alias in node.names:
                index[alias.asname or alias.name] = node.module
        elif isinstance(node, ast.FunctionDef):
            index[node.name] = ""  # defined in __init__ itself (metrics.infeasible)
    return index


class OfficialFunctionError(RuntimeError):
    """An official getter or metric that does not exist or cannot be imported here."""


def official_function(kind: str, name: str) -> Callable:
    """The official ``metrics.<name>`` or ``getters.<name>`` function.

    Raises `OfficialFunctionError` naming the missing library when its submodule cannot be
    imported with the light dependencies of the ``osworld`` extra.
    """
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}")
    index = _function_index(kind)
    if name not in index:
        raise OfficialFunctionError(f"desktop_env {kind} has no function {name!r}")
    if not index[name]:
        raise OfficialFunctionError(f"{kind}.{name} is defined in the package __init__")
    module_name = f"{_package(kind)}.{index[name]}"
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        missing = getattr(exc, "name", None) or str(exc)
        raise OfficialFunctionError(f"{module_name} needs {missing}, which the osworld "
                                    f"extra does not install") from None
    return getattr(module, name)


def function_problem(kind: str, name: str) -> str | None:
    """None when the function is usable here, else one line saying why not."""
    try:
        official_function(kind, name)
    except OfficialFunctionError as exc:
        return str(exc)
    return None
