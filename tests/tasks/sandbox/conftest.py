"""Fixtures of the sandbox tests: the base rootfs (built once, cached) and host-side checks."""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import pytest

from tasks.sandbox import (AGENT_UID, BASE_RECIPE, Sandbox, build_rootfs, sandbox_available,
                           sandbox_id_map)


@pytest.fixture(scope="session")
def base_rootfs() -> Path:
    """The base rootfs; the first build downloads from deb.debian.org (about 30 s)."""
    reason = sandbox_available()
    if reason is not None:
        pytest.skip(f"sandbox unavailable: {reason}")
    return build_rootfs(BASE_RECIPE)


@pytest.fixture(scope="session")
def terminal_rootfs() -> Path:
    """The terminal tasks' rootfs (Python and a toolchain; it carries bubblewrap too)."""
    from tasks.terminal.environment import TERMINAL_RECIPE

    return build_rootfs(TERMINAL_RECIPE)


@pytest.fixture
def sandbox(base_rootfs):
    with Sandbox(base_rootfs) as box:
        yield box


def agent_host_uid() -> int:
    """The host uid the sandbox's agent user runs as (its id shifted into the host range)."""
    return sandbox_id_map().host(AGENT_UID)


def host_processes_of(uid: int | None = None) -> list[int]:
    """Pids of host processes whose real uid is `uid` (default: the agent's host uid)."""
    uid = agent_host_uid() if uid is None else uid
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            status = (entry / "status").read_text()
        except OSError:
            continue
        for line in status.splitlines():
            if line.startswith("Uid:") and int(line.split()[1]) == uid:
                pids.append(int(entry.name))
    return pids


def _in_box_or_loose(pid: int, marker: str) -> bool:
    """Whether process `pid` sees `marker` in its root (it runs in the box that holds it) or
    runs in the host's own pid namespace (it is loose on the host). Confined processes of
    other boxes, or of a host-side build under bwrap, are in neither."""
    proc = Path(f"/proc/{pid}")
    try:
        loose = os.readlink(proc / "ns" / "pid") == os.readlink("/proc/self/ns/pid")
        return loose or (proc / "root" / marker.lstrip("/")).exists()
    except OSError:  # it exited meanwhile
        return False


def assert_no_agent_processes(box: Sandbox) -> None:
    """Nothing the agent started in `box` is still running on the host: no agent-uid process
    in `box` (found by a marker file written into its root now) or loose in the host's pid
    namespace. Agent-uid processes confined elsewhere (another test's sandbox in another
    worker, a SWE-bench host build) are not this test's."""
    marker = f"/etc/escape-check-{uuid.uuid4().hex}"
    box.write_file(marker, "")
    left = [pid for pid in host_processes_of() if _in_box_or_loose(pid, marker)]
    assert left == [], "agent processes outlived their command"


__all__ = ["agent_host_uid", "assert_no_agent_processes", "host_processes_of", "os"]
