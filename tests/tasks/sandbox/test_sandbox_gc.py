"""`tasks.sandbox_gc`: owner records, and the collector on fake roots (a dead owner, a live one,
a reused pid, a reboot, roots of older code) and on real sandboxes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from tasks import sandbox_gc
from tasks.sandbox_gc import (GRACE_S, OWNER_FILE, ProcessId, RootOwner, collect_garbage,
                              make_sandbox_root, own_process, process_id, read_owner,
                              register_process, sandboxes_dir)
from tasks.sandbox_rootfs import SandboxError

REPO = Path(__file__).resolve().parents[3]
LONG_AGO = time.time() - 10 * GRACE_S


def _sleeper(*args: str) -> subprocess.Popen:
    """A process that runs until killed, returned once `args` are in its command line."""
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)", *args])
    cmdline = Path(f"/proc/{proc.pid}/cmdline")
    while b"time.sleep(600)" not in cmdline.read_bytes():  # between fork and exec: pytest's
        time.sleep(0.001)
    return proc


def _dead_process() -> ProcessId:
    proc = _sleeper()
    identity = process_id(proc.pid)
    proc.kill()
    proc.wait()
    assert identity is not None
    return identity


def _fake_root(parent: Path, name: str, owner: ProcessId | None, *,
               processes: tuple[ProcessId, ...] = (), boot_id: str | None = None) -> Path:
    """A root as `make_sandbox_root` makes it (a layer folder, an owner file unless None)."""
    root = parent / name
    (root / "layer" / "upper").mkdir(parents=True)
    (root / "layer" / "upper" / "file").write_text("agent's work")
    if owner is not None:
        own_boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
        (root / OWNER_FILE).write_text(json.dumps({
            "pid": owner.pid, "start_time": owner.start_time,
            "boot_id": own_boot if boot_id is None else boot_id,
            "processes": [[p.pid, p.start_time] for p in processes]}))
    return root


def _age(root: Path) -> None:
    for path in (root / "layer", root):
        os.utime(path, (LONG_AGO, LONG_AGO))


def _mounted(path: Path) -> bool:
    points = [line.split(" ")[1] for line in Path("/proc/self/mounts").read_text().splitlines()]
    return str(path) in points


def _tmpfs(path: Path) -> bool:
    """Mount a small tmpfs on `path`; False where this user cannot mount."""
    if os.geteuid() != 0:
        return False
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(path)],
                          capture_output=True)
    return done.returncode == 0


@pytest.fixture
def places(tmp_path):
    """(parent of roots, folder of legacy roots), both private to the test."""
    parent, legacy = tmp_path / "sandboxes", tmp_path / "tmp"
    parent.mkdir()
    legacy.mkdir()
    yield parent, legacy
    for line in Path("/proc/self/mounts").read_text().splitlines():  # a failed test's mounts
        point = line.split(" ")[1]
        if point.startswith(str(tmp_path) + "/"):
            subprocess.run(["umount", "-l", point], capture_output=True)


def test_process_identity_reads_proc_and_tells_a_reused_pid_apart():
    me = own_process()
    assert me.pid == os.getpid() and me.alive()
    assert process_id(os.getpid()) == me
    assert not ProcessId(me.pid, me.start_time + 1).alive()  # same pid, another process
    assert not _dead_process().alive()


def test_zombie_counts_as_gone():
    proc = subprocess.Popen(["true"])
    stat = Path(f"/proc/{proc.pid}/stat")
    while stat.read_text().rsplit(")", 1)[1].split()[0] != "Z":  # ended, not reaped yet
        time.sleep(0.01)
    assert process_id(proc.pid) is None
    proc.wait()


def test_nothing_to_collect_returns_nothing(places):
    parent, legacy = places
    assert collect_garbage(parent, legacy_parent=legacy) == []
    assert collect_garbage(parent / "absent", legacy_parent=legacy / "absent") == []


def test_root_of_a_dead_owner_is_removed_with_its_mount_and_helper(places):
    parent, legacy = places
    helper = _sleeper()
    root = _fake_root(parent, "1-1-dead", _dead_process(),
                      processes=(process_id(helper.pid),))
    mounted = _tmpfs(root / "layer")
    lines = collect_garbage(parent, legacy_parent=legacy)
    assert helper.wait(timeout=30) == -9
    assert f"killed process {helper.pid} of sandbox {root}" in lines
    assert lines[-1].startswith(f"removed {root} (its owner, pid ")
    assert (f"unmounted {root / 'layer'}" in lines) == mounted
    assert not root.exists() and not _mounted(root / "layer")
    assert collect_garbage(parent, legacy_parent=legacy) == []


def test_root_of_a_live_owner_is_never_touched(places):
    parent, legacy = places
    helper = _sleeper()
    root = _fake_root(parent, "2-1-live", own_process(), processes=(process_id(helper.pid),))
    _age(root)
    mounted = _tmpfs(root / "layer")
    (root / "layer" / "work").write_text("the owner's")
    try:
        assert collect_garbage(parent, legacy_parent=legacy, grace_s=0) == []
        assert helper.poll() is None and (root / "layer" / "work").read_text() == "the owner's"
        assert _mounted(root / "layer") == mounted
        assert (root / OWNER_FILE).exists()
    finally:
        helper.kill()
        helper.wait()


def test_owner_pid_reused_by_another_process_counts_as_gone(places):
    parent, legacy = places
    me = own_process()
    innocent = _sleeper()  # runs under a pid the root recorded for a helper that is gone
    reused = ProcessId(innocent.pid, process_id(innocent.pid).start_time - 1)
    root = _fake_root(parent, "3-1-reused", ProcessId(me.pid, me.start_time - 1),
                      processes=(reused,))
    try:
        lines = collect_garbage(parent, legacy_parent=legacy)
        assert lines == [f"removed {root} (its owner, pid {me.pid}, is gone)"]
        assert innocent.poll() is None  # a reused pid is never killed
    finally:
        innocent.kill()
        innocent.wait()


def test_owner_of_an_earlier_boot_counts_as_gone(places):
    parent, legacy = places
    root = _fake_root(parent, "4-1-boot", own_process(), boot_id="an-earlier-boot")
    assert collect_garbage(parent, legacy_parent=legacy) == [
        f"removed {root} (its owner, pid {os.getpid()}, is gone)"]


def test_root_without_owner_file_is_kept_while_fresh_then_removed(places):
    parent, legacy = places
    root = _fake_root(parent, "5-1-partial", None)  # being made right now, or its maker died
    assert collect_garbage(parent, legacy_parent=legacy) == []
    assert root.exists()
    _age(root)
    assert collect_garbage(parent, legacy_parent=legacy) == [
        f"removed {root} (it has no owner)"]


def test_root_whose_owner_file_is_not_written_yet_has_its_owner_in_its_name(places):
    parent, legacy = places
    me, dead = own_process(), _dead_process()
    mine = _fake_root(parent, f"{me.pid}-{me.start_time}-1-abcdefgh", None)
    gone = _fake_root(parent, f"{dead.pid}-{dead.start_time}-1-abcdefgh", None)
    _age(mine)
    assert collect_garbage(parent, legacy_parent=legacy) == [
        f"removed {gone} (its owner, pid {dead.pid}, is gone)"]  # fresh, yet its owner is gone
    assert mine.exists()


def test_legacy_root_nobody_uses_is_removed_once_idle(places):
    parent, legacy = places
    root = _fake_root(legacy, "harness-sandbox-7-abcdefgh", None)
    other = _fake_root(legacy, "not-a-sandbox", None)
    mounted = _tmpfs(root / "layer")
    assert collect_garbage(parent, legacy_parent=legacy) == []  # changed within GRACE_S
    _age(root)
    _age(other)
    lines = collect_garbage(parent, legacy_parent=legacy)
    assert lines[-1] == f"removed {root} (an older harness left it)"
    assert (f"unmounted {root / 'layer'}" in lines) == mounted
    assert not root.exists() and other.exists()


def test_legacy_root_a_live_process_uses_is_kept(places):
    parent, legacy = places
    root = _fake_root(legacy, "harness-sandbox-8-abcdefgh", None)
    _age(root)
    user = _sleeper(str(root / "layer" / "merged"))  # as a sandboxed command names it
    try:
        assert collect_garbage(parent, legacy_parent=legacy) == []
        assert root.exists() and user.poll() is None
    finally:
        user.kill()
        user.wait()
    assert collect_garbage(parent, legacy_parent=legacy) == [
        f"removed {root} (an older harness left it)"]


def test_process_naming_a_dead_owners_root_is_killed(places):
    parent, legacy = places
    owner = _dead_process()
    root = _fake_root(parent, "9-1-dead", owner)
    straggler = _sleeper(str(root / "layer" / "merged"))  # e.g. bwrap, not recorded
    lines = collect_garbage(parent, legacy_parent=legacy)
    assert straggler.wait(timeout=30) == -9
    assert lines == [f"killed process {straggler.pid} of sandbox {root}",
                     f"removed {root} (its owner, pid {owner.pid}, is gone)"]


def test_make_sandbox_root_records_the_owner_and_registered_processes(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    root = make_sandbox_root(7)
    helper = _sleeper()
    try:
        register_process(root, helper.pid)
        assert root.parent == sandboxes_dir() == tmp_path / f"harness-sandboxes-{os.geteuid()}"
        me = own_process()
        assert root.name.startswith(f"{me.pid}-{me.start_time}-7-")
        assert root.stat().st_mode & 0o777 == root.parent.stat().st_mode & 0o777 == 0o711
        assert sorted(p.name for p in root.iterdir()) == [OWNER_FILE]
        record = read_owner(root)
        assert record == RootOwner(own_process(), record.boot_id, (process_id(helper.pid),))
        assert record.owner_alive()
        assert collect_garbage() == []  # its owner runs: kept
    finally:
        helper.kill()
        helper.wait()
    register_process(root, helper.pid)  # it ended: nothing to record
    assert len(read_owner(root).processes) == 1
    second = _sleeper()
    try:
        register_process(root, second.pid)  # the ended helper is dropped
        assert read_owner(root).processes == (process_id(second.pid),)
    finally:
        second.kill()
        second.wait()


def test_sandboxes_dir_refuses_a_symlink(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / f"harness-sandboxes-{os.geteuid()}").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(SandboxError, match="is not a folder of uid"):
        sandboxes_dir()
    with pytest.raises(SandboxError, match="is not a folder of uid"):
        make_sandbox_root(1)


def test_register_process_needs_an_owner_file(tmp_path):
    with pytest.raises(SandboxError, match="has no owner file"):
        register_process(tmp_path, os.getpid())


def test_registry_of_open_roots_forgets_closed_ones(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.setattr(sandbox_gc, "_OPEN", {})
    monkeypatch.setitem(sandbox_gc._STATE, "prune_at", 3)
    closed = [make_sandbox_root(n) for n in range(3)]
    for root in closed:
        subprocess.run(["rm", "-rf", str(root)], check=True)  # closed by its sandbox
    assert list(sandbox_gc._OPEN) == closed  # not pruned yet: 3 entries
    root = make_sandbox_root(3)  # the 4th: more than prune_at, so pruned
    assert list(sandbox_gc._OPEN) == [root]


# ---- real sandboxes ---------------------------------------------------------------------------
def test_a_live_sandbox_survives_a_collection(sandbox):
    root = sandbox._root
    assert read_owner(root).owner == own_process() and read_owner(root).processes
    assert not any(str(root) in line for line in collect_garbage())
    assert sandbox.run("echo still here").output.strip() == "still here"
    assert _mounted(root / "layer")


CLOSE_OWN = """
import json, sys, threading, time
from tasks.sandbox import BASE_RECIPE, Sandbox, build_rootfs
from tasks.sandbox_gc import close_own_sandboxes, make_sandbox_root


def busy():
    box = Sandbox(build_rootfs(BASE_RECIPE))
    thread = threading.Thread(target=box.run, args=("touch /tmp/started; sleep 600",),
                              kwargs={"timeout_s": 600}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 120
    while box.run("test -e /tmp/started").exit_code != 0:
        assert time.monotonic() < deadline, "the command never started"
        time.sleep(0.05)
    return box, thread


box, running = busy()
closed, orphan = busy()
closed.close()  # as a signal unwinding its `with` block does: its command still runs
lines = close_own_sandboxes(refuse_new=True)
running.join(30)
orphan.join(30)
try:
    make_sandbox_root(3)
    refused = ""
except Exception as exc:
    refused = str(exc)
print(json.dumps({"root": str(box._root), "closed": str(closed._root), "lines": lines,
                  "commands_ended": not running.is_alive() and not orphan.is_alive(),
                  "refused": refused}))
"""


@pytest.mark.slow
def test_close_own_sandboxes_kills_unmounts_and_removes(base_rootfs, private_tmpdir):
    env = {**os.environ, "PYTHONPATH": str(REPO), "TMPDIR": str(private_tmpdir)}
    done = subprocess.run([sys.executable, "-c", CLOSE_OWN], env=env, capture_output=True,
                          text=True, timeout=300, cwd=private_tmpdir)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.splitlines()[-1])
    root, closed = Path(report["root"]), Path(report["closed"])
    assert root.parent == private_tmpdir / f"harness-sandboxes-{os.geteuid()}"
    killed = [line for line in report["lines"] if line.startswith("killed process")]
    assert len(killed) >= 2, report  # the holder and the running command at least
    assert f"unmounted {root / 'layer'}" in report["lines"]
    assert f"removed {root} (closed at the command's stop)" in report["lines"]
    assert report["commands_ended"], report  # the closed sandbox's command too
    assert "stopping" in report["refused"]
    assert not root.exists() and not closed.exists()
    assert not [line for line in Path("/proc/self/mounts").read_text().splitlines()
                if str(private_tmpdir) in line]
