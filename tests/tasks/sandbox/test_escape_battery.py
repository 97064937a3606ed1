"""The escape battery (`tests.tasks.sandbox.probes`) run from every place untrusted code runs:
an agent command (as the agent and as root inside, in its own namespaces and in a session's),
code the agent wrote that a Terminal-Bench verifier runs (in a session), a task author's
Dockerfile ``RUN`` step at build time, and a patch's code run by SWE-bench-style grading.
Each must be contained with the host unchanged."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tasks.sandbox import Bind, Limits, Sandbox, sandbox_id_map
from tests.tasks.sandbox.probes import HostState, SecretProcess, assert_contained, probe_script

pytestmark = pytest.mark.slow
BATTERY_LIMITS = Limits(wall_s=240, memory_bytes=1 << 30, disk_bytes=256 << 20)


def _bytes_per_file() -> int:
    """Host kernel memory one empty file in the episode layer pins, from the slab caches'
    object sizes: its tmpfs inode, its overlay inode, and a dentry in each."""
    sizes = {fields[0]: int(fields[3]) for fields in (
        line.split() for line in Path("/proc/slabinfo").read_text().splitlines()[2:])}
    return sizes["shmem_inode_cache"] + sizes["ovl_inode"] + 2 * sizes["dentry"]


@pytest.mark.parametrize("user, session", [("agent", False), ("root", False),
                                           ("agent", True), ("root", True)])
def test_battery_from_an_agent_command(base_rootfs, terminal_rootfs, tmp_path, user, session):
    """Per-command namespaces, and a session's shared ones (the command set up by the
    host's bwrap joining them)."""
    (tmp_path / "host-folder").mkdir()
    (tmp_path / "host-folder" / "note.txt").write_text("a bound host folder")
    with SecretProcess() as secret, Sandbox(
            terminal_rootfs if session else base_rootfs, limits=BATTERY_LIMITS,
            binds=[Bind(tmp_path / "host-folder", "/mnt/host")], session=session) as box:
        box.write_file("/opt/probes.py", probe_script(secret.pid, "/mnt/host"))
        before = HostState.read()
        result = box.run("python3 /opt/probes.py", user=user)
    # checked once the sandbox is closed: a session keeps what a command left running until
    # then (its detached sleeper included), per-command namespaces end with the command
    assert result.status == "ok", result.output[-2000:]
    assert "host-secret-value" not in result.output
    assert_contained(result.output, before)


def test_inode_flood_costs_the_host_under_20_mib(base_rootfs):
    """300,000 empty files under the default limits: the layer's inode limit stops the flood,
    and what the files pin in host kernel memory (counted from the layer's used inodes and the
    slab caches' object sizes, so other processes' activity cannot blur it) is under 20 MiB."""
    with Sandbox(base_rootfs, limits=Limits(wall_s=120)) as box:
        assert box.layer_kind == "tmpfs"
        result = box.run(_FLOOD, user="root")
        layer = os.statvfs(box._layer)
        used = layer.f_files - layer.f_ffree
        made = int(result.output.split()[-1])
    assert "No space left on device" in result.output
    assert made < used <= Limits().inodes < 300_000
    assert used * _bytes_per_file() < 20 << 20, f"{used} inodes x {_bytes_per_file()} bytes"


# the inode counts of a Terminal-Bench episode, an image build and SWE-bench grading
@pytest.mark.parametrize("inodes", [1 << 16, 1 << 17, 1 << 15])
def test_inode_flood_in_a_large_layer_pins_under_20_mib(base_rootfs, inodes):
    """A layer of many inodes is an ext4 image: the flood stops at its inode count, and the
    kernel's caches of those files are reclaimable: once the host reclaims them
    (``drop_caches``), the caches the files live in (ext4 inodes, overlay inodes, dentries)
    hold under 20 MiB more than before (a tmpfs of 65,536 files would pin ~130 MiB). The
    caches are counted, not the whole slab, so another test's tmpfs layer does not blur it."""
    limits = Limits(wall_s=200, inodes=inodes, disk_bytes=8 << 30)
    with Sandbox(base_rootfs, limits=limits) as box:
        assert box.layer_kind == "ext4 image"
        # pinned memory stays pinned through every reclaim; what another worker's tests cache
        # meanwhile comes and goes: the least of three reclaims, before as after
        before = min((_cached_after_reclaim() for _ in range(3)),
                     key=lambda found: sum(n * size for n, size in found.values()))
        result = box.run(_FLOOD, user="root")
        pinned, after = min((_pinned_since(before, _cached_after_reclaim()) for _ in range(3)),
                            key=lambda found: found[0])
        made = int(result.output.split()[-1])
    assert "No space left on device" in result.output
    assert inodes // 2 < made <= inodes < 300_000
    assert pinned < 20 << 20, f"{pinned >> 20} MiB stayed after reclaim: {after} vs {before}"


_FLOOD = ("cd /tmp && python3 -c \"import os\nfor i in range(300000):\n"
          "    open(str(i), 'w').close()\" 2>&1 | tail -1; ls /tmp | wc -l")
_CACHES = ("ext4_inode_cache", "ovl_inode", "dentry")


def _pinned_since(before: dict[str, tuple[int, int]], after: dict[str, tuple[int, int]]
                  ) -> tuple[int, dict[str, tuple[int, int]]]:
    """Bytes more in the layer's caches in `after` than in `before`, and `after`."""
    return sum((after[name][0] - before[name][0]) * after[name][1] for name in after), after


def _cached_after_reclaim() -> dict[str, tuple[int, int]]:
    """(active objects, object size) of the slab caches a file of an ext4 layer under the
    overlay lives in, once reclaimable dentries and inodes are dropped."""
    os.sync()  # dirty inodes are written back before the kernel can reclaim them
    Path("/proc/sys/vm/drop_caches").write_text("2")
    found = {}
    for line in Path("/proc/slabinfo").read_text().splitlines()[2:]:
        fields = line.split()
        if fields[0] in _CACHES:
            found[fields[0]] = (int(fields[1]), int(fields[3]))
    return found


def test_root_inside_is_an_unprivileged_uid_in_a_child_user_namespace(base_rootfs):
    """Read from the host: the sandbox's uid 0 is an unprivileged host uid, and its
    capabilities belong to a user namespace that is not the host's (so it holds none in the
    host's: the kernel checks a capability against the namespace owning the resource)."""
    import threading
    import time

    ids = sandbox_id_map()
    with Sandbox(base_rootfs) as box:
        runner = threading.Thread(target=box.run, args=("sleep 13.579",),
                                  kwargs={"user": "root", "timeout_s": 30})
        runner.start()
        deadline = time.monotonic() + 20
        found: list[Path] = []
        while not found and time.monotonic() < deadline:
            found = [entry for entry in Path("/proc").iterdir() if entry.name.isdigit()
                     and _cmdline(entry) == ["sleep", "13.579"]]
        assert found, "the sandboxed sleep never appeared"
        status = dict(line.split(":", 1) for line in (found[0] / "status").read_text()
                      .splitlines())
        inner = os.readlink(found[0] / "ns" / "user")
        os.kill(int(found[0].name), 9)
        runner.join()
    assert status["Uid"].split() == [str(ids.host(0))] * 4 and ids.host(0) >= 65536
    assert status["Gid"].split() == [str(ids.host(0))] * 4
    assert inner != os.readlink("/proc/self/ns/user")


def _cmdline(entry: Path) -> list[str]:
    try:
        return (entry / "cmdline").read_bytes().decode(errors="replace").split("\0")[:-1]
    except OSError:
        return []


def _probe_task(root: Path, host_pid: int) -> Path:
    """A Terminal-Bench 2 task folder whose build step runs the battery, whose solution is
    agent-written code doing the same, and whose verifier runs that code as root."""
    task = root / "probe-task"
    (task / "environment").mkdir(parents=True)
    (task / "solution").mkdir()
    (task / "tests").mkdir()
    (task / "task.toml").write_text('version = "1.0"\n[metadata]\ndifficulty = "easy"\n'
                                    '[verifier]\ntimeout_sec = 240.0\n'
                                    '[agent]\ntimeout_sec = 240.0\n')
    (task / "instruction.md").write_text("Write /app/agent_code.py.\n")
    (task / "environment" / "probes.py").write_text(probe_script(host_pid))
    (task / "environment" / "Dockerfile").write_text(
        "FROM debian:bookworm-slim\nWORKDIR /app\nCOPY probes.py /opt/probes.py\n"
        "RUN python3 /opt/probes.py > /opt/build-report.txt 2>&1\n")
    (task / "solution" / "solve.sh").write_text("#!/bin/bash\ncp /opt/probes.py /app/agent_code.py\n")
    (task / "tests" / "test.sh").write_text(
        "#!/bin/bash\nmkdir -p /logs/verifier\n"
        "python3 /app/agent_code.py > /logs/verifier/probes.txt 2>&1\n"
        "echo 1 > /logs/verifier/reward.txt\n")
    return root


def test_battery_from_a_build_step_and_from_code_the_verifier_runs(tmp_path):
    from tasks.terminal import TerminalBenchSuite

    with SecretProcess() as secret:
        suite = TerminalBenchSuite(_probe_task(tmp_path / "tasks", secret.pid))
        before = HostState.read()
        env = suite.make_env("probe-task")  # the suite's own limits, as in a run
        env.reset(seed=0)
        build_report = env.environment.layer / "opt" / "build-report.txt"
        assert_contained(build_report.read_text(), before)  # the Dockerfile's RUN step
        step = None
        while step is None or not (step.terminated or step.truncated):
            step = env.step(env.oracle_action())
        # the battery's shared-memory probe crosses the sandbox's memory bound on purpose:
        # the bound's kill is recorded and the verifier's reward is then 0 (a verdict never
        # stands past a kill); the probes' report is read all the same
        assert step.info["verifier"] in ("reward.txt", "verifier killed by the memory bound "
                                         f"({env._require()._memory.describe()})")
        report = env._require().read_file("/logs/verifier/probes.txt").decode()
        env.close()
        assert_contained(report, before)  # the agent's code, run by the verifier as root


_HOOK = '''
import os as _os, subprocess as _subprocess
if not _os.path.exists("/tmp/grading-report.txt"):
    with open("/tmp/grading-report.txt", "w") as _report:
        _subprocess.run(["python3", _os.path.join(_os.path.dirname(__file__), "_probe.py")],
                        stdout=_report, stderr=_subprocess.STDOUT)
'''


def test_battery_from_a_patch_under_swebench_grading(tmp_path):
    import shutil
    import subprocess

    from tasks.swebench.lite import lite_backend, lite_instances

    backend = lite_backend()
    instance = next(i for i in lite_instances() if i.instance_id == "swe-lite__textkit-1")
    binds = backend.environment(instance).binds
    work = tmp_path / "work"
    shutil.copytree(backend.source(instance), work, symlinks=True)
    with SecretProcess() as secret:
        (work / "textkit" / "_probe.py").write_text(
            probe_script(secret.pid, binds[0].target if binds else "/"))
        with open(work / "textkit" / "__init__.py", "a") as init:
            init.write(_HOOK)
        subprocess.run(["git", "-C", str(work), "add", "-A"], check=True)
        patch = subprocess.run(["git", "-C", str(work), "diff", "--cached"], check=True,
                               capture_output=True, text=True).stdout
        before = HostState.read()
        with backend.open_sandbox(instance, limits=backend.grading_limits(),
                                  owner="root") as sandbox:
            result = backend.evaluate_in(sandbox, instance, patch)
            report = sandbox.read_file("/tmp/grading-report.txt").decode()
        assert not result.verdict.resolved  # graded as usual: the probe fixes nothing
        assert_contained(report, before)


def test_battery_from_a_package_build_on_the_host(tmp_path):
    """The SWE-bench environment builder's host-side build, where an sdist's ``setup.py``
    runs: the battery as that build's command (unprivileged uid, seccomp, no network but the
    egress proxy, masked kernel surfaces, an ext4 /tmp, ulimits)."""
    import sys

    from tasks.swebench.hostbuild import run_host_build

    python = Path(sys.base_prefix)
    with SecretProcess() as secret:
        before = HostState.read()
        done = run_host_build([str(python / "bin" / "python3"), "-"], python=python,
                              cache_root=tmp_path / "cache", stdin=probe_script(secret.pid),
                              timeout_s=240)
    assert done.returncode == 0, done.stderr[-2000:]
    assert_contained(done.stdout, before)
