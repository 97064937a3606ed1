import os
import sys
from pathlib import Path

import pytest

import harness  # noqa: F401 - first, before test modules load torch: OpenMP threads sleep

ROOT = Path(__file__).resolve().parents[1]
os.environ.setdefault("HF_HUB_OFFLINE", "1")


@pytest.fixture
def harness_cli():
    """The `harness` command of the environment running the tests."""
    return [sys.executable, "-m", "harness.cli"]


@pytest.fixture
def private_tmpdir():
    """A TMPDIR of the test's own for harness children (their sandbox roots go there, so no
    other test's collector touches them), which a sandbox's mapped ids can pass through
    (pytest's tmp_path sits in a 0700 folder). Whatever a failed test left mounted there is
    unmounted at the end."""
    import subprocess
    import tempfile

    path = Path(tempfile.mkdtemp(prefix="harness-test-tmp-", dir="/tmp"))
    path.chmod(0o711)
    yield path
    for line in Path("/proc/self/mounts").read_text().splitlines():
        if line.split(" ")[1].startswith(f"{path}/"):
            subprocess.run(["umount", "-l", line.split(" ")[1]], capture_output=True)
    subprocess.run(["rm", "-rf", str(path)], capture_output=True)


@pytest.fixture(scope="module")
def ray_instance():
    """A local Ray instance bound to 127.0.0.1 for one test module (2 CPUs, no dashboard)."""
    import ray

    ray.init(address="local", _node_ip_address="127.0.0.1", num_cpus=2,
             include_dashboard=False, log_to_driver=False, configure_logging=False)
    yield
    ray.shutdown()


def _timeout_s(item: pytest.Item) -> float:
    marker = item.get_closest_marker("timeout")
    if marker is not None and marker.args:
        return float(marker.args[0])
    return float(item.config.getini("timeout") or 0)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Slow tests first, the longest timeouts first among them (the learning test), the rest in
    file order. With two workers, the longest tests then run beside the others instead of
    alone at the end (on a loaded machine the learning test, collected late, once ran alone
    for its last 15 minutes)."""
    order = {id(item): n for n, item in enumerate(items)}

    def key(item: pytest.Item) -> tuple[bool, float, int]:
        slow = item.get_closest_marker("slow") is not None
        return not slow, -_timeout_s(item) if slow else 0.0, order[id(item)]

    items.sort(key=key)
