"""``harness bench env``: per-step latency of the real-engine environments.

`ENV_BENCHES` maps a name to a zero-argument function returning the lines to print (each figure
next to a baseline measured in the same run), given as ``"module:function"`` of the suite
family that owns the bench; `env_report` prints them all. ALFWorld's entry
(`tasks.alfworld.bench`) measures the harness's engine against stock TextWorld on the same
commands; WebShop's entry times the search step next to the non-search step of the same run
(``harness bench webshop``).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

__all__ = ["ENV_BENCHES", "env_report", "webshop_bench"]

def webshop_bench() -> list[str]:
    """Lines of the WebShop part of ``harness bench env``: the search step on the real
    1,000-product set and on 100,000 generated products (as ``harness bench webshop``)."""
    from tasks.webshop.bench import webshop_report

    return webshop_report(None)


ENV_BENCHES: dict[str, str | Callable[[], list[str]]] = {
    "alfworld": "tasks.alfworld.bench:alfworld_bench",
    "webshop": webshop_bench,
}
"""Name -> zero-argument function (or its ``"module:function"``) returning printed lines;
other suite families add theirs here."""


def _resolve(bench: str | Callable[[], list[str]]) -> Callable[[], list[str]]:
    if callable(bench):
        return bench
    module, _, function = bench.partition(":")
    return getattr(importlib.import_module(module), function)


def env_report(args: Any) -> list[str]:
    """Lines of ``harness bench env``: every entry of `ENV_BENCHES`, in order."""
    lines: list[str] = []
    for bench in ENV_BENCHES.values():
        lines += _resolve(bench)()
    return lines
