"""Nothing a sandbox makes outlives a `harness` command (issue 24, item 7): `harness sandbox
gc`, the collection every command starts with, and SIGTERM, SIGINT and SIGKILL during
terminal-lite, swe-lite and `swebench validate` runs.

Each child runs with a TMPDIR of its own (`private_tmpdir`), so its sandbox roots sit in a
parent no other test's collector reads, and every assertion is about that child's roots."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from harness import cli
from tasks.sandbox import sandbox_available
from tasks.sandbox_gc import LEGACY_PREFIX, OWNER_FILE, read_owner, sandboxes_dir

REPO = Path(__file__).resolve().parents[2]


def _env(tmpdir: Path) -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": str(REPO), "HF_HUB_OFFLINE": "1", "TMPDIR": str(tmpdir)}
    env.pop("COLUMNS", None)
    return env


def _harness(tmpdir: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "harness.cli", *args], cwd=tmpdir,
                          env=_env(tmpdir), capture_output=True, text=True, timeout=300)


def _parent(tmpdir: Path) -> Path:
    return tmpdir / f"harness-sandboxes-{os.geteuid()}"


def _mounts_under(path: Path) -> list[str]:
    points = [line.split(" ")[1] for line in Path("/proc/self/mounts").read_text().splitlines()]
    return [point for point in points if point.startswith(f"{path}/")]


def _dead_root(tmpdir: Path, name: str = "1-1-dead") -> Path:
    """A root whose owner is gone, as a SIGKILLed command leaves it (a tmpfs on its layer
    where this user can mount)."""
    proc = subprocess.Popen(["true"])
    stat = Path(f"/proc/{proc.pid}/stat").read_text()
    proc.wait()
    root = _parent(tmpdir) / name
    (root / "layer").mkdir(parents=True)
    (root / OWNER_FILE).write_text(json.dumps({
        "pid": proc.pid, "start_time": int(stat.rsplit(")", 1)[1].split()[19]),
        "boot_id": Path("/proc/sys/kernel/random/boot_id").read_text().strip(),
        "processes": []}))
    if os.geteuid() == 0:
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(root / "layer")],
                       check=True)
    return root


def test_cli_looks_for_garbage_where_the_collector_keeps_sandboxes(tmp_path, monkeypatch):
    parent, legacy = cli.SANDBOX_FOLDERS
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    assert parent.format(uid=os.geteuid()) == sandboxes_dir(create=False).name
    assert legacy == LEGACY_PREFIX
    assert not cli._sandbox_garbage_possible()
    (tmp_path / f"{LEGACY_PREFIX}3-abcdefgh").mkdir()
    assert cli._sandbox_garbage_possible()
    (tmp_path / f"{LEGACY_PREFIX}3-abcdefgh").rmdir()
    (tmp_path / parent.format(uid=os.geteuid()) / "1-1-x").mkdir(parents=True)
    assert cli._sandbox_garbage_possible()


def test_sandbox_gc_says_there_is_nothing_to_remove(private_tmpdir):
    done = _harness(private_tmpdir, "sandbox", "gc")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "nothing to remove\n"


def test_sandbox_gc_removes_a_dead_owners_root_and_says_so(private_tmpdir):
    root = _dead_root(private_tmpdir)
    live = _parent(private_tmpdir) / "2-1-live"  # this test process owns it: kept
    live.mkdir()
    (live / OWNER_FILE).write_text(json.dumps({
        "pid": os.getpid(),
        "start_time": int(Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()[19]),
        "boot_id": Path("/proc/sys/kernel/random/boot_id").read_text().strip(),
        "processes": []}))
    done = _harness(private_tmpdir, "sandbox", "gc")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[-1].startswith(f"removed {root} (its owner, pid ")
    assert (f"unmounted {root / 'layer'}" in lines) == (os.geteuid() == 0)
    assert not root.exists() and _mounts_under(private_tmpdir) == []
    assert live.exists()


def test_every_command_starts_by_collecting_quietly(private_tmpdir):
    root = _dead_root(private_tmpdir)
    done = _harness(private_tmpdir, "list", "policies")
    assert done.returncode == 0 and done.stderr == "", done.stderr
    assert "oracle" in done.stdout and "removed" not in done.stdout
    assert not root.exists() and _mounts_under(private_tmpdir) == []


# ---- signals during runs ----------------------------------------------------------------------
COMMANDS = {
    "terminal-lite": ("run", "--policy", "oracle", "--suite", "terminal-lite", "--tasks", "8",
                      "--eval-seeds", "50", "--db", "runs.db"),
    "swe-lite": ("run", "--policy", "oracle", "--suite", "swe-lite", "--tasks", "25",
                 "--eval-seeds", "20", "--db", "runs.db"),
    "swebench-validate": ("swebench", "validate", "--table", "swe-lite"),
}
"""Each plays for minutes if left alone; the signal comes once its first sandbox is up."""
SIGNALS = {"SIGTERM": signal.SIGTERM, "SIGINT": signal.SIGINT, "SIGKILL": signal.SIGKILL}


def _roots_of(tmpdir: Path, pid: int) -> list[Path]:
    """Sandbox roots under `tmpdir` whose owner file names process `pid`."""
    parent = _parent(tmpdir)
    roots = []
    for root in (parent.iterdir() if parent.is_dir() else ()):
        record = read_owner(root)
        if record is not None and record.owner.pid == pid:
            roots.append(root)
    return roots


def _processes_of_sandboxes_in(parent: Path) -> list[int]:
    """Pids (not this one) whose command line names a path under `parent` (bwrap) or whose
    mount table has an overlay with its upper directory there (a holder, a sandboxed
    command)."""
    named, upper = f"{parent}/".encode(), f"upperdir={parent}/".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            try:
                if named in (entry / "cmdline").read_bytes() or upper in (
                        entry / "mounts").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def _wait_for_a_mounted_sandbox(child: subprocess.Popen, tmpdir: Path, log: Path) -> None:
    deadline = time.monotonic() + 300
    while not any(_mounts_under(root) for root in _roots_of(tmpdir, child.pid)):
        assert child.poll() is None, log.read_text()[-3000:]
        assert time.monotonic() < deadline, "no sandbox came up in 300 s"
        time.sleep(0.02)


@pytest.mark.slow
@pytest.mark.timeout(900)
@pytest.mark.skipif(sandbox_available() is not None, reason="needs the sandbox")
@pytest.mark.parametrize("signame", list(SIGNALS))
@pytest.mark.parametrize("command", list(COMMANDS))
def test_signal_leaves_no_sandbox_behind_the_next_command(command, signame, private_tmpdir):
    signum = SIGNALS[signame]
    log = private_tmpdir / "child.log"
    with open(log, "w") as out:
        child = subprocess.Popen([sys.executable, "-m", "harness.cli", *COMMANDS[command]],
                                 cwd=private_tmpdir, env=_env(private_tmpdir), stdout=out,
                                 stderr=subprocess.STDOUT)
    try:
        _wait_for_a_mounted_sandbox(child, private_tmpdir, log)
        child.send_signal(signum)
        code = child.wait(timeout=120)
    finally:
        child.kill()
        child.wait()
    output = log.read_text()
    if signum == signal.SIGKILL:
        assert code == -signal.SIGKILL
    else:  # an orderly stop: the child closed its sandboxes itself
        assert code == 128 + signum and "Traceback" not in output, output[-3000:]
        assert _roots_of(private_tmpdir, child.pid) == [], output[-3000:]
        assert _mounts_under(private_tmpdir) == []
    following = _harness(private_tmpdir, "list", "policies")
    assert following.returncode == 0, following.stderr
    assert _roots_of(private_tmpdir, child.pid) == []
    assert _mounts_under(private_tmpdir) == []
    assert [p.name for p in _parent(private_tmpdir).iterdir()] == []
    left = _processes_of_sandboxes_in(_parent(private_tmpdir))
    assert left == [], [(Path(f"/proc/{p}/stat").read_text(), Path(f"/proc/{p}/cmdline").read_bytes()) for p in left]
    assert _harness(private_tmpdir, "sandbox", "gc").stdout == "nothing to remove\n"
