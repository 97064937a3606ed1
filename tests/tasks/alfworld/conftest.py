"""A small generated ALFWorld set shared by the ALFWorld tests (one game per task type and
split, 18 games, written once per session)."""

import pytest

from harness.core import make_rng

SMALL_SEED = "alfworld-tests"


@pytest.fixture(scope="session")
def small_seed():
    return SMALL_SEED


@pytest.fixture(scope="session")
def small_set(tmp_path_factory):
    """``(root, report)`` of `generate_games(root, 1, ...)` over the three splits."""
    from tasks.alfworld.generator import generate_games

    root = tmp_path_factory.mktemp("alfworld-small")
    report = generate_games(root, 1, make_rng(SMALL_SEED), workers=2)
    return root, report
