"""Fixtures of the reliability probes (issue 18); helpers in `cli_support`."""

import pytest

from cli_support import run_harness


@pytest.fixture
def harness(tmp_path):
    """``harness(*args, **kwargs) -> Finished``: the CLI in a subprocess, cwd `tmp_path`."""
    return lambda *args, **kwargs: run_harness(*args, cwd=tmp_path, **kwargs)
