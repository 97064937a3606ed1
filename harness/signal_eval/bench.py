"""`harness bench signals`: exact reference Q speed and per-family scoring throughput.

1. Exact Q* for every (state, action) of a frozenlake 8x8 map: `tasks.frozenlake`'s
   vectorised value iteration (uncached: model build + iteration), best of `REPEATS`, next to
   a pure-Python value iteration of the same MDP measured in the same run (and their largest
   disagreement).
2. Points scored per second by every method on a tiny local model (`harness.policies.tiny`,
   in-process ``hf``), on frozenlake points from a fresh random behaviour run, grouped by
   family.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["python_value_iteration", "bench_exact_q", "bench_throughput", "signals_report"]

REPEATS = 5
BENCH_TASK = "8x8-0250"


def python_value_iteration(desc: tuple[str, ...], gamma: float, tol: float = 1e-12
                           ) -> list[list[float]]:
    """Q* of deterministic FrozenLake by plain-Python value iteration (the bench baseline):
    lists of shape ``(n_states, 4)``."""
    n_rows, n_cols = len(desc), len(desc[0])
    flat = "".join(desc)
    moves = ((0, -1), (1, 0), (0, 1), (-1, 0))
    nxt = [[0] * 4 for _ in flat]
    for s in range(len(flat)):
        r, c = divmod(s, n_cols)
        for a, (dr, dc) in enumerate(moves):
            nxt[s][a] = min(max(r + dr, 0), n_rows - 1) * n_cols + min(max(c + dc, 0), n_cols - 1)
    terminal = [ch in "HG" for ch in flat]
    q = [[0.0] * 4 for _ in flat]
    while True:
        value = [0.0 if terminal[s] else max(q[s]) for s in range(len(flat))]
        delta, new = 0.0, []
        for s in range(len(flat)):
            row = [0.0] * 4
            if not terminal[s]:
                for a in range(4):
                    t = nxt[s][a]
                    row[a] = (1.0 if flat[t] == "G" else 0.0) + gamma * value[t]
            delta = max(delta, max(abs(x - y) for x, y in zip(row, q[s])))
            new.append(row)
        q = new
        if delta < tol:
            return q


def bench_exact_q() -> dict[str, float]:
    """Seconds (best of `REPEATS`) of both value iterations on `BENCH_TASK`'s map."""
    from tasks import get_suite
    from tasks.frozenlake import GAMMA, solve

    desc = tuple(get_suite("frozenlake@1").task(BENCH_TASK).metadata["rows"])
    solver = solve.__wrapped__  # the uncached function: model build + value iteration
    fast = slow = float("inf")
    for _ in range(REPEATS):
        started = time.perf_counter()
        q = solver(desc, False)[3]
        fast = min(fast, time.perf_counter() - started)
        started = time.perf_counter()
        baseline = python_value_iteration(desc, GAMMA)
        slow = min(slow, time.perf_counter() - started)
    return {"vectorised_s": fast, "python_s": slow, "pairs": float(q.size),
            "max_gap": float(np.max(np.abs(q - np.array(baseline))))}


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
    exact = bench_exact_q()
    lines = [f"exact Q* of frozenlake {BENCH_TASK} (8x8, {int(exact['pairs'])} state-action "
             f"pairs), best of {REPEATS}",
             f"  numpy value iteration (tasks.frozenlake) : {exact['vectorised_s'] * 1e3:8.2f} ms"
             "  (target < 50 ms)",
             f"  pure-Python value iteration (baseline)   : {exact['python_s'] * 1e3:8.2f} ms"
             f"  ratio {exact['python_s'] / exact['vectorised_s']:6.1f}x",
             f"  largest |Q| disagreement                 : {exact['max_gap']:.2e}",
             "scoring throughput on a tiny local model (hf, ~1M parameters, in-process), "
             "frozenlake points"]
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
