"""Search latency of the WebShop env: ``webshop_report(args)`` for ``harness bench``.

Per-step wall time of a ``search[instruction]`` step (a cold search: the results cache is
cleared before each) next to the same run's baseline, a non-search step (opening a product
from the results page), on the real 1,000-product set and on 100,000 generated products.
Targets: under 10 ms per search step on 1,000 products, under 100 ms on 100,000.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass
from typing import Any

from tasks.webshop.env import WebShopEnv, WebShopWorld
from tasks.webshop.goals import Goal, build_goals
from tasks.webshop.search import BM25Index
from tasks.webshop.suite import WebShopSuite
from tasks.webshop.synthetic import generate_catalog

__all__ = ["LatencyBench", "bench_search", "webshop_report", "webshop_env_bench"]


@dataclass(frozen=True)
class LatencyBench:
    """Per-step latencies in milliseconds over `n` goals, and the index build time."""

    label: str
    n_products: int
    n: int
    search_ms: tuple[float, ...]
    click_ms: tuple[float, ...]
    build_s: float

    @staticmethod
    def _p(values: tuple[float, ...], q: float) -> float:
        ordered = sorted(values)
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))]

    def lines(self, target_ms: float) -> list[str]:
        search, click = statistics.median(self.search_ms), statistics.median(self.click_ms)
        return [
            f"{self.label}: {self.n_products} products, {self.n} goals, index built in "
            f"{self.build_s:.1f}s",
            f"  search step (cold)     : median {search:8.3f} ms  p95 "
            f"{self._p(self.search_ms, 0.95):8.3f} ms  (target < {target_ms:g} ms: "
            f"{'met' if search < target_ms else 'NOT met'})",
            f"  non-search step (click): median {click:8.3f} ms  p95 "
            f"{self._p(self.click_ms, 0.95):8.3f} ms",
            f"  ratio search/click     : {search / click:8.1f}",
        ]


def bench_search(world: WebShopWorld, goals: list[Goal], label: str, build_s: float
                 ) -> LatencyBench:
    """Time one search step and one product click for each goal (see the module docstring)."""
    search_ms, click_ms = [], []
    for goal in goals:
        env = WebShopEnv(world, goal)
        env.reset(seed=0)
        action = env.admissible_actions()[0]
        world.clear_cache()
        started = time.perf_counter()
        result = env.step(action)
        search_ms.append(1000 * (time.perf_counter() - started))
        products = [c for c, what in env.view().clickables.items() if what == "product"]
        if not products or result.terminated or result.truncated:
            continue
        started = time.perf_counter()
        env.step(f"click[{products[0]}]")
        click_ms.append(1000 * (time.perf_counter() - started))
    return LatencyBench(label, len(world.catalog), len(goals), tuple(search_ms),
                        tuple(click_ms), build_s)


def _real(n_goals: int) -> LatencyBench:
    started = time.perf_counter()
    suite = WebShopSuite()
    suite.world.index  # built at the first search otherwise: the build is timed here
    build_s = time.perf_counter() - started
    return bench_search(suite.world, list(suite.goals[:n_goals]), "webshop@2 (real data)",
                        build_s)


def _generated(n_products: int, n_goals: int) -> LatencyBench:
    started = time.perf_counter()
    catalog = generate_catalog(n_products)
    goals, prices = build_goals(catalog)
    index = BM25Index([p.search_text() for p in catalog.products],
                      [p.asin for p in catalog.products])
    world = WebShopWorld(catalog, prices, index=index)
    build_s = time.perf_counter() - started
    return bench_search(world, list(goals[:n_goals]), "webshop-synthetic (generated)", build_s)


def webshop_report(args: Any) -> list[str]:
    """Lines of ``harness bench webshop``: search-step latency on 1,000 real and 100,000
    generated products, each next to the non-search step latency of the same run."""
    n_goals = int(getattr(args, "webshop_goals", 200))
    n_products = int(getattr(args, "webshop_products", 100_000))
    return (_real(n_goals).lines(10.0)
            + _generated(n_products, n_goals).lines(100.0 if n_products >= 100_000 else 10.0))


def webshop_env_bench() -> list[str]:
    """WebShop's part of ``harness bench env``: the search step on the real 1,000-product set
    and on 100,000 generated products (as ``harness bench webshop``)."""
    return webshop_report(None)
