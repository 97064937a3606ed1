"""``harness bench env``: per-step latency of the real-engine environments.

Each suite family that has a real engine adds its part with
`tasks.plugins.register_bench_part` (``"env"``, a zero-argument function returning the lines
to print, each figure next to a baseline measured in the same run); `env_report` prints every
part in registration order. ALFWorld's part measures the harness's engine against stock
TextWorld on the same commands; WebShop's times the search step next to the non-search step
of the same run (as ``harness bench webshop``).
"""

from __future__ import annotations

from typing import Any

__all__ = ["BENCH", "env_report"]

BENCH = "env"
"""The engine bench name families register their parts under."""


def env_report(args: Any) -> list[str]:
    """Lines of ``harness bench env``: every registered part, in order."""
    from tasks.plugins import bench_parts, resolve

    lines: list[str] = []
    for part in bench_parts(BENCH).values():
        lines += resolve(part)()
    return lines
