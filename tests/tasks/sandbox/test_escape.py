"""Escape and abuse attempts: each is contained, the host is unaffected, the status is clear."""

from __future__ import annotations

import os
import shlex
import socket
import subprocess
import time
from pathlib import Path

import pytest

from tasks.sandbox import AGENT_UID, Limits, Sandbox
from tests.tasks.sandbox.conftest import agent_host_uid, assert_no_agent_processes


def test_no_network_not_even_the_hosts_loopback(sandbox):
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    port = server.getsockname()[1]
    try:
        probe = (f"import socket\nfor host in ['127.0.0.1', '1.1.1.1']:\n"
                 f"    try:\n        socket.create_connection((host, {port}), timeout=2)\n"
                 f"        print(host, 'connected')\n"
                 f"    except OSError as exc:\n        print(host, 'refused', exc.errno)\n")
        result = sandbox.run(f"python3 -c \"{probe}\"; cat /sys/class/net/*/address 2>&1 | "
                             "head -3; ls /sys/class/net 2>&1")
    finally:
        server.close()
    assert "connected" not in result.output
    assert "127.0.0.1 refused 111" in result.output  # the sandbox's own, empty loopback
    assert "1.1.1.1 refused 101" in result.output  # network unreachable


def test_host_files_outside_the_binds_are_invisible(sandbox, tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("host secret")
    result = sandbox.run(f"cat {secret} /root/.bashrc; ls /work/main 2>&1; "
                         "cat /proc/1/cmdline | tr '\\0' ' '; echo; ps -e --no-headers | wc -l",
                         user="root")
    assert "host secret" not in result.output
    assert "No such file or directory" in result.output
    assert "bwrap" in result.output or "bash" in result.output  # pid 1 is the sandbox's own
    assert int(result.output.split()[-1]) < 10  # only the sandbox's processes are visible


def test_writes_outside_the_workdir_are_refused_or_stay_in_the_layer(sandbox, base_rootfs):
    result = sandbox.run("touch /etc/owned /usr/bin/owned /owned; echo status $?")
    assert result.output.count("Permission denied") == 3
    before = Path("/etc/hostname").read_text()
    sandbox.run("echo pwned > /etc/hostname; echo x > /usr/bin/newtool; rm -rf /usr/share",
                user="root")
    assert Path("/etc/hostname").read_text() == before
    assert not (base_rootfs / "usr" / "bin" / "newtool").exists()
    assert (base_rootfs / "usr" / "share").is_dir()
    assert sandbox.run("cat /etc/hostname").output == "pwned\n"  # only the episode's layer


def test_fork_bomb_is_bounded_and_leaves_nothing(base_rootfs):
    with Sandbox(base_rootfs, limits=Limits(processes=64)) as box:
        started = time.perf_counter()
        result = box.run("bomb() { bomb | bomb & }; bomb; sleep 2; echo survived", timeout_s=5)
        assert time.perf_counter() - started < 15
        assert result.status in ("timeout", "ok", "failed")
        assert_no_agent_processes(box)
        assert box.run("echo still usable").output == "still usable\n"
    assert subprocess.run(["true"]).returncode == 0  # the host can still fork


def test_filling_the_disk_stops_at_the_quota(base_rootfs):
    free_before = os.statvfs("/tmp").f_bavail
    with Sandbox(base_rootfs, limits=Limits(disk_bytes=32 << 20)) as box:
        result = box.run("dd if=/dev/zero of=/work/fill bs=1M count=200 2>&1 | tail -1; "
                         "head -c 1000 /dev/zero > /work/small || echo small-failed")
        assert "No space left on device" in result.output
        assert "small-failed" in result.output
        assert box.layer_bytes() <= 33 << 20
        assert box.run("rm /work/fill && echo freed").output == "freed\n"
    # the host lost at most a rounding amount while the sandbox was full
    assert os.statvfs("/tmp").f_bavail * os.statvfs("/tmp").f_frsize > \
        free_before * os.statvfs("/tmp").f_frsize - (64 << 20)


def test_one_file_larger_than_the_file_size_limit_is_cut(base_rootfs):
    with Sandbox(base_rootfs, limits=Limits(file_size_bytes=1 << 20)) as box:
        result = box.run("head -c 5000000 /dev/zero > big; echo rc=$?; stat -c %s big")
    assert "rc=153" in result.output or "File size limit" in result.output
    assert result.output.strip().endswith("1048576")


def test_sleeping_forever_in_background_or_foreground_leaves_nothing(sandbox):
    result = sandbox.run("(sleep 1000 &) ; setsid nohup sleep 1000 >/dev/null 2>&1 & "
                         "echo started")
    assert result.status == "ok" and result.output == "started\n"
    assert_no_agent_processes(sandbox)
    result = sandbox.run("sleep infinity", timeout_s=1)
    assert result.status == "timeout"
    assert_no_agent_processes(sandbox)


def test_setuid_binaries_give_no_privilege(sandbox):
    sandbox.run("cp /usr/bin/id /usr/local/bin/rootid && chmod 4755 /usr/local/bin/rootid && "
                "cp /bin/bash /usr/local/bin/rootsh && chmod 4755 /usr/local/bin/rootsh",
                user="root")
    result = sandbox.run("ls -l /usr/local/bin/rootid | cut -c1-10; /usr/local/bin/rootid -u; "
                         "/usr/local/bin/rootsh -p -c 'id -u; cat /etc/shadow' 2>&1; "
                         "su -c id root </dev/null 2>&1 | head -1")
    lines = result.output.splitlines()
    assert lines[0] == "-rwsr-xr-x"
    assert lines[1] == "61000" and lines[2] == "61000"
    assert "Permission denied" in lines[3]
    assert "uid=0" not in result.output


def test_killing_the_parent_and_everything_visible(sandbox):
    host_sleeper = subprocess.Popen(["sleep", "60"])
    try:
        result = sandbox.run("kill -9 $PPID 1; kill -9 -1; echo agent-alive")
        assert "agent-alive" in result.output or result.exit_code is not None
        result = sandbox.run("kill -9 -1; kill -9 1; echo root-alive", user="root")
        assert result.exit_code is not None and not result.timed_out
        assert host_sleeper.poll() is None  # host processes are out of reach
        assert sandbox.run("echo usable").output == "usable\n"
    finally:
        host_sleeper.kill()
        host_sleeper.wait()
    assert_no_agent_processes(sandbox)


def test_huge_outputs_are_cut_to_the_limit(base_rootfs):
    limit = 4096
    with Sandbox(base_rootfs, limits=Limits(output_bytes=limit)) as box:
        started = time.perf_counter()
        result = box.run("yes spam | head -c 200000000; head -c 100000 /dev/urandom")
        elapsed = time.perf_counter() - started
    assert result.truncated and result.status == "ok"
    assert len(result.output.encode()) < 3 * limit  # the tail may hold replaced bytes
    assert result.output.startswith("spam\nspam\n")
    assert "bytes of output omitted" in result.output
    assert elapsed < 30


_RESERVE = (  # 32 GiB of address space reserved, never writable (as OCaml 5 reserves heaps)
    "import ctypes\n"
    "libc = ctypes.CDLL(None, use_errno=True)\n"
    "libc.mmap.restype = ctypes.c_void_p\n"
    "libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,\n"
    "                      ctypes.c_int, ctypes.c_long]\n"
    "address = libc.mmap(None, 32 << 30, 0, 0x02 | 0x20 | 0x4000, -1, 0)\n"  # PROT_NONE
    "print('reserved' if address != ctypes.c_void_p(-1).value else 'refused')\n")


def test_memory_is_capped_by_the_data_limit_not_the_address_space(base_rootfs):
    reserve = f"python3 -c {shlex.quote(_RESERVE)}"
    with Sandbox(base_rootfs, limits=Limits(memory_bytes=256 << 20)) as box:
        result = box.run("python3 -c 'x = bytearray(1 << 30)'")
        reserved = box.run(reserve)
        under_address_limit = box.run(f"ulimit -v {256 << 10}; {reserve}")
    assert result.status == "failed" and "MemoryError" in result.output
    # Docker's resident-memory limit allows a reservation never made writable; so does this
    # one, where an address-space limit refuses it (coqc aborts at 16 GiB of address space)
    assert reserved.status == "ok" and "reserved" in reserved.output
    assert "refused" in under_address_limit.output


@pytest.mark.parametrize("user", ["agent", "root"])
def test_no_new_mounts_or_device_access(sandbox, user):
    result = sandbox.run("mount -t proc proc /mnt 2>&1; echo rc=$?; ls /dev | tr '\\n' ' '",
                         user=user)
    assert "rc=0" not in result.output
    assert "sda" not in result.output and "vda" not in result.output


def test_the_leak_check_sees_this_sandboxs_processes_and_no_other_sandboxs(base_rootfs):
    """Self-test of `assert_no_agent_processes`: a command still running in the box fails
    it, and so does an agent-uid process loose on the host; one running in another box
    (another test, at the same time) does not."""
    import threading

    with Sandbox(base_rootfs) as box, Sandbox(base_rootfs) as other:
        runner = threading.Thread(target=other.run, args=("sleep 4",), kwargs={"timeout_s": 20})
        runner.start()
        time.sleep(1.0)
        assert_no_agent_processes(box)  # the other box's sleep is not this box's
        mine = threading.Thread(target=box.run, args=("sleep 4",), kwargs={"timeout_s": 20})
        mine.start()
        time.sleep(1.0)
        with pytest.raises(AssertionError, match="outlived"):
            assert_no_agent_processes(box)
        mine.join()
        runner.join()
        assert_no_agent_processes(box)
        loose = subprocess.Popen(["setpriv", f"--reuid={agent_host_uid()}",
                                  f"--regid={agent_host_uid()}",
                                  "--clear-groups", "sleep", "30"])  # as if it had escaped
        try:
            time.sleep(0.5)
            with pytest.raises(AssertionError, match="outlived"):
                assert_no_agent_processes(box)
        finally:
            loose.kill()
            loose.wait()
