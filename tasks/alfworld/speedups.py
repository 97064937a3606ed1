"""Memoisation of pure functions inside TextWorld's PDDL engine, so a step costs milliseconds.

The stock engine re-translates the PDDL task twice on every ``load`` and ``reset`` (about a
second) and re-parses every grammar string with TatSu and deep-copies the derivation contexts on
every step (about 70 ms). `install` replaces, process-wide and idempotently:

- ``fast_downward.load_lib``: library copies are pooled (`load_library`, `release_library`);
- ``fast_downward.pddl2sas``: memoised on ``(domain, problem, optimize)`` (LRU of
  `TRANSLATION_CACHE` tasks) and serialised by a lock (the translator keeps its options in
  module globals and overwrites ``sys.argv``; the caller's ``sys.argv`` is restored). For a
  problem registered with `register_replanning_task`, the ``optimize=True`` translation that
  ``PddlState`` loads as its replanning task is that of the registered planning problem
  (`tasks.alfworld.planning`);
- ``textworld.envs.pddl.textgen._parse_and_convert``: memoised on the text and rule name, a
  deep copy returned each time (callers mutate the symbols' contexts);
- ``textworld.envs.pddl.textgen.copy_context``: the variable and mapping dicts are copied
  shallowly instead of deeply (their values, entity infos and logic variables, are only read);
- ``textworld.logic.Rule.parse_conjunctive_query``: memoised on the expression (the rule
  objects are only read).

Observations, admissible commands and plans are unchanged; ``tests/tasks/alfworld/
test_alfworld_engine.py`` compares whole trajectories with and without `install`.
"""

from __future__ import annotations

import copy
import sys
import threading
from collections import OrderedDict
from typing import Any

__all__ = ["install", "uninstall", "installed", "register_replanning_task", "translate",
           "TRANSLATION_CACHE", "import_fast_downward", "load_library",
           "release_library"]

TRANSLATION_CACHE = 12
"""Translated tasks kept per process (a full ALFWorld task takes ~10 MB)."""

_LOCK = threading.RLock()
_ORIGINALS: dict[str, Any] = {}
_TRANSLATIONS: OrderedDict = OrderedDict()
_REPLANNING: OrderedDict = OrderedDict()
_REPLANNING_KEPT = 64
_PARSES: dict = {}
_QUERIES: dict = {}
_LIBRARIES: list = []


def import_fast_downward():
    """``fast_downward``, imported so that its translator's option parser (which reads
    ``sys.argv`` when first imported) sees the arguments ``pddl2sas`` gives it."""
    argv = sys.argv
    try:
        sys.argv = ["translate.py", "domain", "task"]
        import fast_downward
        from fast_downward.translate import options  # noqa: F401
    finally:
        sys.argv = argv
    return fast_downward


def _raw_translate(domain: str, problem: str, verbose: bool, optimize: bool):
    original = _ORIGINALS.get("pddl2sas") or import_fast_downward().pddl2sas
    argv = sys.argv
    try:
        return original(domain, problem, verbose=verbose, optimize=optimize)
    finally:
        sys.argv = argv


def translate(domain: str, problem: str, verbose: bool = False, optimize: bool = False):
    """``fast_downward.pddl2sas``, memoised and thread-safe; returns ``(task, sas_text)``."""
    if optimize and problem in _REPLANNING:
        problem = _REPLANNING[problem]
    key = (domain, problem, optimize)
    with _LOCK:
        if key in _TRANSLATIONS:
            _TRANSLATIONS.move_to_end(key)
            return _TRANSLATIONS[key]
        result = _raw_translate(domain, problem, verbose, optimize)
        _TRANSLATIONS[key] = result
        while len(_TRANSLATIONS) > TRANSLATION_CACHE:
            _TRANSLATIONS.popitem(last=False)
        return result


def load_library():
    """A Fast Downward library copy: a released one when available (`release_library`),
    else a fresh copy (``fast_downward.load_lib``). Libraries are reused, never unloaded:
    ``dlclose`` on a copy that has searched corrupts the dynamic loader (a later ``dlopen``
    crashes)."""
    with _LOCK:
        if _LIBRARIES:
            return _LIBRARIES.pop()
    original = _ORIGINALS.get("load_lib") or import_fast_downward().load_lib
    return original()


def release_library(lib) -> None:
    """Free `lib`'s task and state registry and keep the copy for `load_library`."""
    with _LOCK:
        lib.cleanup()
        _LIBRARIES.append(lib)


def register_replanning_task(problem: str, planning_problem: str) -> None:
    """Replan `problem` on `planning_problem` (its relevance-pruned, unit-cost version) when
    a ``PddlState`` of `problem` is built next (the last `_REPLANNING_KEPT` are kept)."""
    with _LOCK:
        _REPLANNING[problem] = planning_problem
        _REPLANNING.move_to_end(problem)
        while len(_REPLANNING) > _REPLANNING_KEPT:
            _REPLANNING.popitem(last=False)


def _parse_and_convert(text, rule_name, trace=False):
    key = (text, rule_name)
    cached = _PARSES.get(key)
    if cached is None:
        cached = _ORIGINALS["_parse_and_convert"](text, rule_name=rule_name)
        _PARSES[key] = cached
    return copy.deepcopy(cached)


def _copy_context(context):
    return {"state": context["state"], "facts": context["facts"],
            "variables": dict(context["variables"]), "mapping": dict(context["mapping"]),
            "entity_infos": context["entity_infos"]}


def _parse_conjunctive_query(cls, expression: str):
    rule = _QUERIES.get(expression)
    if rule is None:
        rule = _ORIGINALS["parse_conjunctive_query"](cls, expression)
        _QUERIES[expression] = rule
    return rule


def install() -> None:
    """Install the memoised functions (idempotent)."""
    with _LOCK:
        if _ORIGINALS:
            return
        fast_downward = import_fast_downward()
        import textworld.logic
        from textworld.envs.pddl import textgen

        _ORIGINALS.update(
            pddl2sas=fast_downward.pddl2sas,
            _parse_and_convert=textgen._parse_and_convert,
            copy_context=textgen.copy_context,
            parse_conjunctive_query=textworld.logic.Rule.parse_conjunctive_query.__func__,
            load_lib=fast_downward.load_lib)
        fast_downward.pddl2sas = translate
        fast_downward.load_lib = load_library
        textgen._parse_and_convert = _parse_and_convert
        textgen.copy_context = _copy_context
        textworld.logic.Rule.parse_conjunctive_query = classmethod(_parse_conjunctive_query)


def uninstall() -> None:
    """Put the stock functions back (used by the equivalence test)."""
    with _LOCK:
        if not _ORIGINALS:
            return
        import fast_downward
        import textworld.logic
        from textworld.envs.pddl import textgen

        fast_downward.pddl2sas = _ORIGINALS["pddl2sas"]
        fast_downward.load_lib = _ORIGINALS["load_lib"]
        textgen._parse_and_convert = _ORIGINALS["_parse_and_convert"]
        textgen.copy_context = _ORIGINALS["copy_context"]
        textworld.logic.Rule.parse_conjunctive_query = classmethod(
            _ORIGINALS["parse_conjunctive_query"])
        _ORIGINALS.clear()
        _TRANSLATIONS.clear()
        _PARSES.clear()
        _QUERIES.clear()


def installed() -> bool:
    return bool(_ORIGINALS)
