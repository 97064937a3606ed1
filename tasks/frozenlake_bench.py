"""FrozenLake's part of ``harness bench signals``: exact Q* of an 8x8 map.

`tasks.frozenlake`'s vectorised value iteration (uncached: model build + iteration), best of
`REPEATS`, next to a pure-Python value iteration of the same MDP measured in the same run, and
their largest disagreement. Registered with `tasks.plugins.register_bench_part` in
``tasks/__init__.py``.
"""

from __future__ import annotations

import time

import numpy as np

__all__ = ["REPEATS", "BENCH_TASK", "python_value_iteration", "bench_exact_q", "exact_q_lines"]

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
    from tasks.base import get_suite
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


def exact_q_lines() -> list[str]:
    """The lines of this part of ``harness bench signals``."""
    exact = bench_exact_q()
    return [f"exact Q* of frozenlake {BENCH_TASK} (8x8, {int(exact['pairs'])} state-action "
            f"pairs), best of {REPEATS}",
            f"  numpy value iteration (tasks.frozenlake) : {exact['vectorised_s'] * 1e3:8.2f} ms"
            "  (target < 50 ms)",
            f"  pure-Python value iteration (baseline)   : {exact['python_s'] * 1e3:8.2f} ms"
            f"  ratio {exact['python_s'] / exact['vectorised_s']:6.1f}x",
            f"  largest |Q| disagreement                 : {exact['max_gap']:.2e}"]
