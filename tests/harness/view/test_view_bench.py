"""`harness bench view` on a small generated store: every page answers and every figure is
reported next to its direct-SQL baseline."""

from __future__ import annotations

from harness.report.bench import synthetic_store
from harness.view.bench import bench_view


def test_bench_times_every_page_next_to_its_query(tmp_path):
    db = synthetic_store(tmp_path / "small.db", n_policies=10, n_suites=3, tasks_per_type=8,
                         n_eval_seeds=2)
    figures = bench_view(db)  # raises when a page does not answer 200
    assert figures["episodes"] == 10 * 3 * 3 * 8 * 2
    for name in ("episodes", "episode", "compare", "leaderboard"):
        assert figures[f"page:{name}"] > 0 and figures[f"sql:{name}"] > 0
