"""Session sandboxes (`Sandbox(session=True)`): the episode's commands share one pid, network
and IPC namespace, so a server a command starts keeps serving later commands; a command's
output ends when it exits even while a background process holds it; the wall-clock limit
kills the command's processes; the host's processes stay invisible; a restore or close ends
every process of the session."""

from __future__ import annotations

import os
import time

import pytest

from tasks.sandbox import Limits, Sandbox

pytestmark = pytest.mark.slow

_GET = ("python3 -c \"import urllib.request as u; "
        "print(u.urlopen('http://127.0.0.1:{port}/').status)\"")


@pytest.mark.timeout(300)
def test_a_background_server_serves_later_commands_of_both_users(terminal_rootfs):
    with Sandbox(terminal_rootfs, workdir="/tmp", session=True) as box:
        started = box.run("python3 -m http.server 3000 --bind 127.0.0.1 &", user="root")
        assert started.exit_code == 0 and not started.timed_out  # the held output not awaited
        assert box.run("for i in $(seq 50); do " + _GET.format(port=3000)
                       + " 2>/dev/null && break; sleep 0.1; done", user="agent"
                       ).output.strip() == "200"
        listing = box.run("ps -eo user,comm --no-headers", user="agent").output
        assert "python3" in listing and "process_api" not in listing and "pytest" not in listing
        assert len(listing.splitlines()) < 12  # the session's processes, not the host's


@pytest.mark.timeout(300)
def test_the_wall_clock_limit_kills_the_commands_processes_not_the_session(terminal_rootfs):
    with Sandbox(terminal_rootfs, workdir="/tmp", session=True,
                 limits=Limits(wall_s=3)) as box:
        box.run("nohup sleep 600 > /dev/null 2>&1 &", user="root")  # left running on purpose
        killed = box.run("sleep 500 | cat", user="root")
        assert killed.timed_out and killed.exit_code is None
        left = box.run("ps -eo args --no-headers", user="root").output
        assert "sleep 600" in left and "sleep 500" not in left


@pytest.mark.timeout(300)
def test_restore_and_close_end_every_process_of_the_session(terminal_rootfs):
    box = Sandbox(terminal_rootfs, workdir="/tmp", session=True)
    try:
        snapshot = box.snapshot()
        box.run("nohup sleep 600 > /dev/null 2>&1 &", user="root")
        assert "sleep 600" in box.run("ps -eo args", user="root").output
        box.restore(snapshot)
        assert "sleep 600" not in box.run("ps -eo args", user="root").output
        box.run("nohup sleep 700 > /dev/null 2>&1 &", user="root")
        assert "sleep 700" in box.run("ps -eo args", user="root").output  # running at close
    finally:
        box.close()
    deadline = time.monotonic() + 30
    while any("sleep 700" in _args(pid) for pid in os.listdir("/proc") if pid.isdigit()):
        assert time.monotonic() < deadline, "a session process outlived close()"
        time.sleep(0.1)


def _args(pid: str) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
            return cmdline.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


@pytest.mark.timeout(300)
def test_a_rootfs_without_bubblewrap_holds_a_session(base_rootfs):
    """The host's bwrap launches a session's commands: the rootfs needs none of its own."""
    with Sandbox(base_rootfs, session=True) as box:
        assert box.run("command -v bwrap || echo none").output.strip() == "none"
        box.run("nohup sleep 600 > /dev/null 2>&1 &", user="root")
        listing = box.run("ps -eo comm --no-headers", user="agent").output.split()
        assert "sleep" in listing and "process_api" not in listing
