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


@pytest.fixture(scope="module")
def ray_instance():
    """A local Ray instance bound to 127.0.0.1 for one test module (2 CPUs, no dashboard)."""
    import ray

    ray.init(address="local", _node_ip_address="127.0.0.1", num_cpus=2,
             include_dashboard=False, log_to_driver=False, configure_logging=False)
    yield
    ray.shutdown()
