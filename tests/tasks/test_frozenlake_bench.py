import numpy as np

from tasks.frozenlake_bench import (BENCH_TASK, bench_exact_q, exact_q_lines,
                                    python_value_iteration)
from tasks import get_suite
from tasks.frozenlake import GAMMA, solve


def test_the_baseline_value_iteration_computes_the_same_q():
    desc = tuple(get_suite("frozenlake@1").task(BENCH_TASK).metadata["rows"])
    np.testing.assert_allclose(np.array(python_value_iteration(desc, GAMMA)),
                               solve(desc, False)[3], atol=1e-10)


def test_exact_bench_reports_every_state_action_pair():
    result = bench_exact_q()
    assert result["pairs"] == 64 * 4 and result["max_gap"] < 1e-10
    assert result["vectorised_s"] > 0 and result["python_s"] > 0


def test_the_part_is_registered_for_the_signals_bench():
    from tasks.plugins import bench_parts, resolve

    assert resolve(bench_parts("signals")["frozenlake"]) is exact_q_lines
