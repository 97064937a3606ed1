"""ALFWorld's part of `harness bench env` runs (generated games, harness vs stock engine)."""

import re

import pytest

from tasks.alfworld import bench


@pytest.mark.slow
def test_alfworld_bench_reports_harness_and_stock_latency(monkeypatch):
    monkeypatch.setattr(bench, "ALFWORLD_STEPS", 8)
    monkeypatch.setattr(bench, "STOCK_STEPS", 2)
    monkeypatch.delenv("ALFWORLD_DATA", raising=False)
    lines = bench.alfworld_bench()
    assert lines[0].startswith("ALFWorld (generated games: 6, 48 random admissible steps)")
    harness_ms = float(re.search(r"harness engine\s+: median\s+([\d.]+) ms", lines[1])[1])
    stock_ms = float(re.search(r"stock TextWorld : median\s+([\d.]+) ms", lines[2])[1])
    ratio = float(re.search(r"ratio stock/harness\s+:\s+([\d.]+)x", lines[3])[1])
    assert harness_ms > 0 and stock_ms > 0
    assert ratio == pytest.approx(stock_ms / harness_ms, rel=0.05)
    assert "target < 20 ms" in lines[1]
