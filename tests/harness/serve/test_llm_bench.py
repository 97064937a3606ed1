"""`harness bench llm` at a small scale: every step is one request, the report's figures."""

import pytest

from harness.serve.bench import ClientRun, LLMBench, bench_llm, report_lines


@pytest.mark.slow
def test_small_bench_counts_every_request():
    result = bench_llm(concurrency=16, latency_ms=50, steps=4, n_tasks=8)
    assert result.episodes == 16 and [run.client for run in result.runs] == ["openai",
                                                                             "direct"]
    assert all(run.requests == 16 * 4 and run.rps > 0 for run in result.runs)
    assert result.bound_rps == pytest.approx(16 / 0.05) and result.bare_rps > 0
    lines = report_lines(result)
    assert any("Little's-law bound" in line and "320.0" in line for line in lines)
    assert sum("ratio to bound" in line for line in lines) == 2


def test_report_lines_hand_computed():
    runs = (ClientRun("openai", 7680, 18.0, 0.9, 0.2), ClientRun("direct", 7680, 16.0, 0.4,
                                                                 0.2))
    result = LLMBench(concurrency=256, latency_s=0.5, episodes=256, bare_rps=480.0, runs=runs)
    assert result.bound_rps == 512.0
    assert result.ratio(runs[0]) == pytest.approx(7680 / 18 / 512)
    text = "\n".join(report_lines(result))
    assert "512.0 requests/s" in text and "256 frozenlake@1 episodes x 30 calls" in text
    assert "426.7 requests/s  ratio to bound 0.83" in text
    assert "480.0 requests/s  ratio to bound 0.94" in text
