"""What a family plugs into the `harness` command line, beside its suites.

A family registers, from its own package and next to its `register_suite` lines:

- `register_commands` — a module with ``add_commands(subparsers)`` adding its subcommands
  (``harness swebench ...``, ``harness serve-fhir``: a family's servers are commands too);
- `register_bench` — ``harness bench NAME``: a ``"module:function"`` taking the parsed
  arguments and returning the lines to print;
- `register_bench_part` — lines a family adds to an engine bench (``harness bench env`` lists
  every family's engine latency; ``harness bench signals`` the exact-Q solver's timing): a
  zero-argument ``"module:function"`` (or function) returning lines;
- `register_generator` — ``harness tasks generate FAMILY``: a module holding
  ``DESCRIPTION``, ``add_generate_arguments(parser)`` and ``generate(args) -> lines``.

Families inside this tree register in ``tasks/__init__.py``. A family in another package
declares an entry point in the group `ENTRY_POINT_GROUP` (``harness.families``) naming a
module that registers on import (or a ``"module:function"`` called once); `load_families`
imports every one not loaded yet, and the registry calls it whenever a name is not found, so
an installed family needs no edit in this tree. Entries are strings, imported only when used.
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Callable
from importlib import metadata
from typing import Any

from harness.core import HarnessError, UnknownNameError

__all__ = ["ENTRY_POINT_GROUP", "register_commands", "command_modules", "register_bench",
           "bench_names", "get_bench", "register_bench_part", "bench_parts",
           "register_generator", "generators", "load_families", "resolve"]

ENTRY_POINT_GROUP = "harness.families"
log = logging.getLogger(__name__)

LinesFunction = Callable[[], list[str]]
_COMMANDS: list[str] = []
_BENCHES: dict[str, str] = {}
_BENCH_PARTS: dict[str, dict[str, str | LinesFunction]] = {}
_GENERATORS: dict[str, str] = {}
_LOADED: set[str] = set()


def _check_name(kind: str, name: str) -> None:
    if not name or not isinstance(name, str) or any(c.isspace() for c in name):
        raise ValueError(f"bad {kind} name {name!r}")


def register_commands(module: str) -> None:
    """`module` adds subcommands with ``add_commands(subparsers)``; handlers set ``func``
    and import heavy dependencies lazily. Registering a module twice adds it once."""
    _check_name("command module", module)
    if module not in _COMMANDS:
        _COMMANDS.append(module)


def command_modules() -> tuple[str, ...]:
    """The registered command modules, in registration order (installed families loaded)."""
    load_families()
    return tuple(_COMMANDS)


def register_bench(name: str, target: str) -> None:
    """``harness bench NAME`` runs `target` (``"module:function"``, taking the parsed
    arguments, returning the lines to print, each figure next to its same-run baseline)."""
    _check_name("bench", name)
    if ":" not in target:
        raise ValueError(f"bench {name}: {target!r} is not 'module:function'")
    _BENCHES[name] = target


def bench_names() -> list[str]:
    """Every registered family bench, sorted."""
    load_families()
    return sorted(_BENCHES)


def get_bench(name: str) -> str:
    """The ``"module:function"`` of bench `name` (`UnknownNameError` with the list)."""
    if name not in _BENCHES:
        load_families()
    if name not in _BENCHES:
        raise UnknownNameError("bench", name, sorted(_BENCHES))
    return _BENCHES[name]


def register_bench_part(bench: str, name: str, target: str | LinesFunction) -> None:
    """Family `name` adds the lines of `target` (zero arguments -> lines, or its
    ``"module:function"``) to engine bench `bench`; parts print in registration order."""
    _check_name("bench", bench)
    _check_name("bench part", name)
    _BENCH_PARTS.setdefault(bench, {})[name] = target


def bench_parts(bench: str) -> dict[str, str | LinesFunction]:
    """Family name -> its line function (or its ``"module:function"``, for `resolve`) for
    engine bench `bench`, in registration order."""
    load_families()
    return dict(_BENCH_PARTS.get(bench, {}))


def register_generator(family: str, module: str) -> None:
    """``harness tasks generate FAMILY`` uses `module` (see the module docstring)."""
    _check_name("generator", family)
    _GENERATORS[family] = module


def generators() -> dict[str, str]:
    """Family -> module of its generator tool, in registration order."""
    load_families()
    return dict(_GENERATORS)


def resolve(target: str | Callable[..., Any]) -> Callable[..., Any]:
    """The function a ``"module:function"`` string names (a callable is returned as is)."""
    if callable(target):
        return target
    module, _, attribute = target.partition(":")
    return getattr(importlib.import_module(module), attribute)


def load_families() -> list[str]:
    """Import every installed family (entry points of `ENTRY_POINT_GROUP`) not loaded yet;
    return the names loaded now. A family that fails to load is one `HarnessError`."""
    loaded = []
    for entry in metadata.entry_points(group=ENTRY_POINT_GROUP):
        key = f"{entry.name}={entry.value}"
        if key in _LOADED:
            continue
        _LOADED.add(key)
        try:
            target = entry.load()
        except Exception as exc:  # noqa: BLE001 - one line naming the broken family
            raise HarnessError(f"family {entry.name!r} ({entry.value}) failed to load: "
                               f"{type(exc).__name__}: {exc}") from exc
        if entry.attr and callable(target):
            target()
        log.debug("loaded family %s from %s", entry.name, entry.value)
        loaded.append(entry.name)
    return loaded
