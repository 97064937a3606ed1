"""`harness bench signals`: exact reference Q speed and per-family scoring throughput.

1. The parts families register for this bench (`tasks.plugins.register_bench_part`):
   FrozenLake's exact Q* for every (state, action) of an 8x8 map, its vectorised value
   iteration next to a pure-Python one of the same MDP measured in the same run
   (`tasks.frozenlake_bench`).
2. Points scored per second by every method on a tiny local model (`harness.policies.tiny`,
   in-process ``hf``), on frozenlake points from a fresh random behaviour run, grouped by
   family.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Any

__all__ = ["BENCH", "bench_throughput", "signals_report"]

BENCH = "signals"
"""The engine bench name families register their parts under (`tasks.plugins`)."""


def bench_throughput(n_points: int = 8) -> list[tuple[str, str, int, float, str | None]]:
    """``(family, method, points, seconds, error)`` for every registered method."""
    from harness.policies.tiny import make_tiny_model
    from harness.signal_eval.models import load_language_model
    from harness.signal_eval.pipeline import SignalsConfig, run_signals

    with tempfile.TemporaryDirectory() as tmp:
        model_path = make_tiny_model(Path(tmp) / "tiny")
        model = load_language_model(f"hf:{model_path}")
        config = SignalsConfig(suite="frozenlake@1", points=n_points, db=str(Path(tmp) / "b.db"),
                               tasks=8, eval_seeds=2, resamples=200)
        # each method's own cost: forget the pairs the previous method scored
        outcome = run_signals(config, model=model, on_signal=lambda _: model.clear_cache())
    return [(s.family, s.name, len(s.scores), s.wall_s, s.error) for s in outcome.scored]


def signals_report(args: Any) -> list[str]:
    """Lines of `harness bench signals`."""
    from tasks.plugins import bench_parts, resolve

    lines: list[str] = []
    for part in bench_parts(BENCH).values():
        lines += resolve(part)()
    lines.append("scoring throughput on a tiny local model (hf, ~1M parameters, in-process), "
                 "frozenlake points")
    by_family: dict[str, list[float]] = {}
    for family, name, points, seconds, error in bench_throughput():
        if error is not None:
            lines.append(f"  {family:18s} {name:20s} failed: {error.splitlines()[-1][:60]}")
            continue
        lines.append(f"  {family:18s} {name:20s} {points / max(seconds, 1e-9):10.1f} points/s")
        by_family.setdefault(family, [0.0, 0.0])
        by_family[family][0] += points
        by_family[family][1] += seconds
    for family, (points, seconds) in by_family.items():
        lines.append(f"  family {family:18s} {points / max(seconds, 1e-9):10.1f} points/s "
                     "(all its methods in turn)")
    return lines
