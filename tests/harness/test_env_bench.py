"""`harness bench env`: the report assembles every registered bench; ALFWorld's runs."""

import re

import pytest

from harness import env_bench


def test_env_report_concatenates_the_benches_in_order(monkeypatch):
    monkeypatch.setattr(env_bench, "ENV_BENCHES", {"a": lambda: ["one", "two"],
                                                   "b": lambda: ["three"]})
    assert env_bench.env_report(None) == ["one", "two", "three"]


@pytest.mark.slow
def test_alfworld_bench_reports_harness_and_stock_latency(monkeypatch):
    monkeypatch.setattr(env_bench, "ALFWORLD_STEPS", 8)
    monkeypatch.setattr(env_bench, "STOCK_STEPS", 2)
    monkeypatch.delenv("ALFWORLD_DATA", raising=False)
    lines = env_bench.alfworld_bench()
    assert lines[0].startswith("ALFWorld (generated games: 6, 48 random admissible steps)")
    harness_ms = float(re.search(r"harness engine\s+: median\s+([\d.]+) ms", lines[1])[1])
    stock_ms = float(re.search(r"stock TextWorld : median\s+([\d.]+) ms", lines[2])[1])
    ratio = float(re.search(r"ratio stock/harness\s+:\s+([\d.]+)x", lines[3])[1])
    assert harness_ms > 0 and stock_ms > 0
    assert ratio == pytest.approx(stock_ms / harness_ms, rel=0.05)
    assert "target < 20 ms" in lines[1]
