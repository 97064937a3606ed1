import pytest

from tasks.base import register_suite, suite_ids

TINY = {"hidden": 32, "layers": 2, "heads": 2, "kv_heads": 1, "intermediate": 64,
        "chat_template": "compact"}
"""A ~35k-parameter Qwen2 for fast tests."""


@pytest.fixture(scope="session")
def tiny_shape():
    """`TINY` as a fixture (test modules here are not a package)."""
    return dict(TINY)


@pytest.fixture(autouse=True, scope="session")
def _suites():
    if "frozenlake-random@1" not in suite_ids():
        register_suite("frozenlake-random", 1, "tasks.frozenlake_random:RandomFrozenLakeSuite")
    from harness.train.bench import BENCH_SUITE, FirstMoveSuite

    if f"{BENCH_SUITE}@1" not in suite_ids():
        register_suite(BENCH_SUITE, 1, FirstMoveSuite)
    from harness.train.bench import GUIDED_SUITE, GuidedSuite

    if f"{GUIDED_SUITE}@1" not in suite_ids():
        register_suite(GUIDED_SUITE, 1, GuidedSuite)


@pytest.fixture(autouse=True)
def _one_thread():
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
