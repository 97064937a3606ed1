"""The sandbox's basic behaviour: commands, limits, files, snapshots, the rootfs cache."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest

from tasks.sandbox import (AGENT_UID, BASE_RECIPE, Limits, RootfsRecipe, Sandbox,
                           SandboxError, build_rootfs, rootfs_cache_dir, sandbox_available)
from tests.tasks.sandbox.conftest import assert_no_agent_processes


def test_commands_run_as_the_agent_in_the_workdir(sandbox):
    result = sandbox.run("id -u; pwd; echo $HOME; echo err >&2; exit 3")
    assert result.output.splitlines() == [str(AGENT_UID), "/work", "/home/agent", "err"]
    assert (result.exit_code, result.status, result.timed_out) == (3, "failed", False)


def test_files_persist_across_commands_and_state_does_not(sandbox):
    assert sandbox.run("echo one > notes.txt; export X=1; cd /tmp").exit_code == 0
    result = sandbox.run('cat notes.txt; pwd; echo "x=${X:-unset}"')
    assert result.output.splitlines() == ["one", "/work", "x=unset"]


def test_wall_clock_limit_kills_the_command_quickly(sandbox):
    started = time.perf_counter()
    result = sandbox.run("echo before; sleep 30; echo after", timeout_s=1)
    assert result.timed_out and result.exit_code is None and result.status == "timeout"
    assert result.output == "before\n"
    assert time.perf_counter() - started < 5
    assert_no_agent_processes(sandbox)


def test_output_keeps_head_and_tail_and_states_the_cut(base_rootfs):
    with Sandbox(base_rootfs, limits=Limits(output_bytes=100)) as box:
        result = box.run("seq 1 10000")
    assert result.truncated
    assert result.output.startswith("1\n2\n3\n") and result.output.endswith("9999\n10000\n")
    total = len("\n".join(str(i) for i in range(1, 10001))) + 1
    assert f"[... {total - 100} bytes of output omitted ...]" in result.output


def test_root_holds_dockers_default_capabilities_in_its_own_user_namespace(sandbox):
    from tasks.sandbox import ROOT_CAPABILITIES
    result = sandbox.run("id -u; grep CapEff /proc/self/status; mount -t tmpfs none /mnt",
                         user="root")
    lines = result.output.splitlines()
    bits = {"CAP_CHOWN": 0, "CAP_DAC_OVERRIDE": 1, "CAP_FOWNER": 3, "CAP_FSETID": 4,
            "CAP_KILL": 5, "CAP_SETGID": 6, "CAP_SETUID": 7, "CAP_SETPCAP": 8,
            "CAP_NET_BIND_SERVICE": 10, "CAP_NET_RAW": 13, "CAP_SYS_CHROOT": 18,
            "CAP_MKNOD": 27, "CAP_AUDIT_WRITE": 29, "CAP_SETFCAP": 31}
    expected = sum(1 << bits[name] for name in ROOT_CAPABILITIES)
    assert lines[0] == "0" and int(lines[1].split()[1], 16) == expected == 0xa80425fb
    assert result.exit_code != 0  # no CAP_SYS_ADMIN, and the filter denies mount


def test_write_read_and_copy_in(sandbox, tmp_path):
    sandbox.write_file("/work/a/b.txt", "hello\n", mode=0o600, owner="agent")
    assert sandbox.read_file("/work/a/b.txt") == b"hello\n"
    assert sandbox.run("stat -c '%a %U' /work/a/b.txt").output == "600 agent\n"
    (tmp_path / "tree" / "sub").mkdir(parents=True)
    (tmp_path / "tree" / "sub" / "x.bin").write_bytes(bytes(range(256)))
    sandbox.copy_in(tmp_path / "tree", "/opt/tree")
    assert sandbox.read_file("/opt/tree/sub/x.bin") == bytes(range(256))
    assert sandbox.run("stat -c %U /opt/tree/sub/x.bin").output == "root\n"
    with pytest.raises(SandboxError, match="cannot read"):
        sandbox.read_file("/nope")


def test_snapshot_restore_brings_back_the_exact_layer(sandbox):
    sandbox.run("mkdir -p d/e; echo 1 > d/e/f; echo keep > k", user="agent")
    sandbox.run("rm -rf /etc/apt && echo changed > /etc/hostname", user="root")
    snap = sandbox.snapshot()
    listing = "find / -xdev \\( -path /proc -o -path /dev \\) -prune -o -print | sort | md5sum"
    before = sandbox.run(listing, user="root").output
    sandbox.run("rm -rf d k; echo new > n; touch /tmp/t", user="agent")
    sandbox.run("mkdir /etc/apt; echo again > /etc/hostname", user="root")
    assert sandbox.run(listing, user="root").output != before
    for _ in range(2):
        sandbox.restore(snap)
        assert sandbox.run(listing, user="root").output == before
        assert sandbox.run("cat d/e/f k /etc/hostname; ls /etc/apt").output == (
            "1\nkeep\nchanged\nls: cannot access '/etc/apt': No such file or directory\n")
        sandbox.run("rm -rf d", user="agent")


def test_restore_rejects_a_foreign_snapshot(base_rootfs):
    with Sandbox(base_rootfs) as one, Sandbox(base_rootfs) as two:
        with pytest.raises(SandboxError, match="not from this"):
            two.restore(one.snapshot())


def test_close_removes_the_layer_and_refuses_commands(base_rootfs):
    box = Sandbox(base_rootfs)
    box.run("echo x > f")
    root = box._root
    box.close()
    assert not root.exists()
    assert str(root) not in Path("/proc/self/mounts").read_text()
    with pytest.raises(SandboxError, match="closed"):
        box.run("true")


def test_extra_layers_stack_over_the_rootfs(base_rootfs, tmp_path):
    with Sandbox(base_rootfs) as box:
        box.run("mkdir -p /app && echo from-layer > /app/data && rm /etc/hostname", user="root")
        box.export_layer(tmp_path / "layer")
    with Sandbox(base_rootfs, layers=[tmp_path / "layer"]) as box:
        assert box.run("cat /app/data; test -e /etc/hostname || echo gone").output == (
            "from-layer\ngone\n")


def test_a_layer_that_cannot_be_copied_is_a_sandbox_error(base_rootfs, tmp_path):
    with Sandbox(base_rootfs) as box:
        box.run("echo x > /tmp/f")
        with pytest.raises(SandboxError, match="export_layer: copying the layer failed: cp"):
            box.export_layer(tmp_path / "no such folder" / "layer")


def test_rootfs_cache_returns_at_once_and_keys_on_the_recipe(base_rootfs, monkeypatch):
    assert sandbox_available() is None
    lines: list[str] = []
    started = time.perf_counter()
    assert build_rootfs(BASE_RECIPE, progress=lines.append) == base_rootfs
    assert time.perf_counter() - started < 0.5 and lines == []
    assert base_rootfs.parent == rootfs_cache_dir()
    other = RootfsRecipe("base", BASE_RECIPE.packages + ("jq",), customize=BASE_RECIPE.customize)
    assert other.digest() != BASE_RECIPE.digest()
    assert BASE_RECIPE.extend("base", ("jq",)).digest() == RootfsRecipe(
        "base", tuple(sorted(other.packages)), customize=BASE_RECIPE.customize).digest()
    monkeypatch.setenv("HARNESS_ROOTFS_CACHE", "/tmp/somewhere-else")
    assert rootfs_cache_dir() == Path("/tmp/somewhere-else")


def test_a_missing_rootfs_is_one_clear_error(tmp_path):
    if sandbox_available() is not None:
        pytest.skip("sandbox unavailable")
    with pytest.raises(SandboxError, match="not a root filesystem"):
        Sandbox(tmp_path)


def test_unknown_user_is_an_error(sandbox):
    with pytest.raises(SandboxError, match="unknown sandbox user"):
        sandbox.run("true", user="nobody")
    assert os.geteuid() == 0


def test_the_sandbox_runs_wherever_ci_installs_it():
    """The sandboxed suites' tests skip on machines without the sandbox; as root with
    bubblewrap installed (what `.ci/system-packages` sets up) a skip would hide a broken
    sandbox, so there it must be available, and elsewhere it must say why not."""
    installed = os.geteuid() == 0 and shutil.which("bwrap") is not None
    assert (sandbox_available() is None) == installed, sandbox_available()
