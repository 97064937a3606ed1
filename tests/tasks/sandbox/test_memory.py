"""The memory bound counts every process of a sandbox together, shared memory included, and
/dev/shm counts in the episode's disk quota: 768 MiB of ``MAP_SHARED`` memory, every page
touched, is stopped under a 256 MiB bound (as the agent and as root) with the reason recorded,
and 300 MiB written to /dev/shm stops at a 64 MiB quota."""

from __future__ import annotations

import os

import pytest

from tasks.sandbox import Limits, Sandbox
from tasks.sandbox_memory import MemoryBound, memory_mechanism

pytestmark = pytest.mark.slow

_SHARED = ("python3 -c \"import mmap\nm = mmap.mmap(-1, 768 << 20, flags=mmap.MAP_SHARED)\n"
           "for i in range(0, 768 << 20, 4096): m[i] = 1\nprint('survived')\"")
_LIMITS = Limits(memory_bytes=256 << 20, disk_bytes=64 << 20)


@pytest.mark.timeout(300)
@pytest.mark.parametrize("user", ["agent", "root"])
def test_shared_memory_past_the_bound_is_stopped_with_its_reason(base_rootfs, user):
    with Sandbox(base_rootfs, limits=_LIMITS) as box:
        result = box.run(_SHARED, user=user)
        assert "survived" not in result.output and result.exit_code != 0
        assert result.killed_by is not None and "memory bound" in result.killed_by
        small = box.run("python3 -c \"print('fine')\"", user=user)
        assert small.output == "fine\n" and small.killed_by is None


@pytest.mark.timeout(300)
def test_dev_shm_counts_in_the_disk_quota(base_rootfs):
    with Sandbox(base_rootfs, limits=_LIMITS) as box:
        result = box.run("dd if=/dev/zero of=/dev/shm/big bs=1M count=300 2>&1; "
                         "du -sm /dev/shm", user="root")
        assert "No space left on device" in result.output
        assert int(result.output.split()[-2]) <= 64


@pytest.mark.timeout(300)
def test_a_session_shares_dev_shm_between_its_commands(base_rootfs):
    with Sandbox(base_rootfs, limits=_LIMITS, session=True) as box:
        box.run("echo kept > /dev/shm/segment")
        assert box.run("cat /dev/shm/segment").output == "kept\n"


def test_the_enforcement_names_the_mechanism():
    mechanism = memory_mechanism()
    assert mechanism in ("cgroup v1", "cgroup v2", "watchdog")
    assert mechanism in Limits().enforcement()["memory_bytes"]
    bound = MemoryBound(1 << 30)
    try:
        assert bound.describe().startswith(mechanism) and not bound.killed()
        assert (bound.launcher() == []) == (mechanism == "watchdog")
    finally:
        bound.close()


@pytest.mark.skipif(memory_mechanism() == "watchdog", reason="no memory cgroup here")
def test_a_cgroup_whose_owner_is_gone_is_collected():
    from tasks.sandbox_gc import collect_garbage
    from tasks.sandbox_memory import _v1_parent, _v2_parent

    parent = _v1_parent() or _v2_parent()
    dead = max(int(p) for p in os.listdir("/proc") if p.isdigit()) + 100_000
    stale = parent / f"harness-sandbox-{dead}-1"
    stale.mkdir()
    collect_garbage()
    assert not stale.exists()
