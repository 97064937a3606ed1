"""A Terminal-Bench task whose environment fails to build: the failure is recorded beside the
layer (under the layer's key) and raised again at once, by a later build or episode, without
building; ``retry_failed`` builds again; a changed task is a new key; a failure while the
command stops is not recorded.

Each test keeps its layers and records in a rootfs cache of its own (`private_layers`), whose
terminal rootfs links to the shared cache's (built there once, never removed)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.core import HarnessError
from tasks.base import EnvironmentNotBuilt
from tests.tasks.terminal.test_terminal_loader import make_tb2

GOOD = "WORKDIR /app\nRUN echo built > /app/built.txt\n"
BAD = "WORKDIR /app\nRUN echo cannot build this && exit 1\n"
"""No ``FROM``: the terminal rootfs alone, without a base image's layer (whose ``apt-get
update`` would reach the Debian mirror), so these builds run offline in well under a second."""


@pytest.fixture
def private_layers(private_tmpdir, monkeypatch):
    """``HARNESS_ROOTFS_CACHE`` of the test's own: its terminal rootfs a link to the shared
    cache's, its ``layers`` folder (built layers, failure records) new and empty."""
    from tasks.sandbox import build_rootfs, sandbox_available, seccomp_program
    from tasks.terminal.environment import TERMINAL_RECIPE

    reason = sandbox_available()
    if reason is not None:
        pytest.skip(f"sandbox unavailable: {reason}")
    rootfs = build_rootfs(TERMINAL_RECIPE)  # the shared cache's, built once
    seccomp_program()  # compiled there too, once per process
    cache = private_tmpdir / "rootfs-cache"
    cache.mkdir()
    (cache / rootfs.name).symlink_to(rootfs)
    monkeypatch.setenv("HARNESS_ROOTFS_CACHE", str(cache))
    return cache


def write_tasks(root: Path) -> Path:
    """A folder of three TB2 tasks: ``good`` builds, ``bad``'s RUN exits 1, ``offline``
    needs the network (unsupported)."""
    make_tb2(root, "good", dockerfile=GOOD)
    make_tb2(root, "bad", dockerfile=BAD)
    make_tb2(root, "offline", dockerfile="RUN wget https://x/y\n")
    return root


@pytest.fixture
def replays(monkeypatch):
    """Task ids in the order their layer was replayed (built), every call counted."""
    from tasks.terminal import environment

    calls: list[str] = []
    real = environment._replay

    def counted(task, *args, **kwargs):
        calls.append(task.id)
        return real(task, *args, **kwargs)

    monkeypatch.setattr(environment, "_replay", counted)
    return calls


def test_a_failed_build_is_recorded_and_raised_again_without_building(tmp_path,
                                                                       private_layers,
                                                                       replays):
    from tasks.terminal import TerminalBenchSuite
    from tasks.terminal.environment import FAILURE_SUFFIX, BuildFailed
    from tasks.terminal.taskdir import Unsupported

    suite = TerminalBenchSuite(write_tasks(tmp_path / "tasks"))
    with pytest.raises(BuildFailed, match="cannot build this") as first:
        suite.build_task("bad")
    assert isinstance(first.value, Unsupported) and isinstance(first.value, EnvironmentNotBuilt)
    assert not first.value.recorded and replays == ["bad"]
    records = list((private_layers / "layers").glob(f"bad-*{FAILURE_SUFFIX}"))
    assert len(records) == 1
    assert "cannot build this" in json.loads(records[0].read_text())["error"]
    assert not [p for p in (private_layers / "layers").glob("bad-*") if p.is_dir()]
    for again in (lambda: suite.build_task("bad"), lambda: suite.make_env("bad")):
        with pytest.raises(EnvironmentNotBuilt, match="cannot build this") as later:
            again()
        assert later.value.recorded and "--retry-failed" in str(later.value)
    assert replays == ["bad"]  # neither the second build nor the episode's env built it
    suite.build_task("good")
    suite.build_task("good")
    assert replays == ["bad", "good"]


def test_retry_failed_builds_again_and_a_fixed_task_builds(tmp_path, private_layers,
                                                            replays):
    from tasks.terminal import TerminalBenchSuite

    root = write_tasks(tmp_path / "tasks")
    suite = TerminalBenchSuite(root)
    for retry in (False, False, True):
        with pytest.raises(EnvironmentNotBuilt):
            suite.build_task("bad", retry_failed=retry)
    assert replays == ["bad", "bad"]  # built first, recorded, then built again on retry
    (root / "bad" / "environment" / "Dockerfile").write_text(BAD.replace("exit 1", "true"))
    fixed = TerminalBenchSuite(root)  # the changed task is a new layer key: built afresh
    fixed.build_task("bad")
    assert replays == ["bad", "bad", "bad"]
    env = fixed.make_env("bad")
    assert env.environment.layer.is_dir()


def test_an_unreadable_record_is_no_record_and_a_stopping_command_records_nothing(
        tmp_path, private_layers, replays, monkeypatch):
    from tasks.terminal import TerminalBenchSuite, environment
    from tasks.terminal.environment import FAILURE_SUFFIX

    suite = TerminalBenchSuite(write_tasks(tmp_path / "tasks"))
    monkeypatch.setattr(environment, "stopping", lambda: True)  # a signal closed the sandbox
    with pytest.raises(EnvironmentNotBuilt):
        suite.build_task("bad")
    layers = private_layers / "layers"
    assert not list(layers.glob(f"*{FAILURE_SUFFIX}"))
    monkeypatch.setattr(environment, "stopping", lambda: False)
    with pytest.raises(EnvironmentNotBuilt):
        suite.build_task("bad")
    (record,) = layers.glob(f"*{FAILURE_SUFFIX}")
    record.write_text("{not json")
    with pytest.raises(EnvironmentNotBuilt):
        suite.build_task("bad")
    assert replays == ["bad", "bad", "bad"]
    assert isinstance(EnvironmentNotBuilt("x"), HarnessError)
