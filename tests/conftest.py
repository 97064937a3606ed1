import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
os.environ.setdefault("HF_HUB_OFFLINE", "1")


@pytest.fixture
def harness_cli():
    """The `harness` command of the environment running the tests."""
    return [sys.executable, "-m", "harness.cli"]
