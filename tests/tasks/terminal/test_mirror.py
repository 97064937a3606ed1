"""Sources outside the registries from a local mirror folder (``TERMINAL_BENCH_MIRROR``): a
task whose build clones a repository and downloads files is unsupported without the mirror
(the URL named) and with a mirror that lacks one of them; with the mirror it builds from it
(the clone's origin is the URL asked for), passes with its oracle and fails on submit."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tasks.terminal.taskdir import MIRROR_ENV, load_task
from tests.tasks.terminal.support import play_oracle, write_tb1_task

DOCKERFILE = ("FROM debian:bookworm\nWORKDIR /app\n"
              "RUN git clone https://github.com/acme/tool.git /app/tool\n"
              "RUN wget -q https://files.example.org/data/in.txt -O /app/in.txt && "
              "curl -fsSL https://files.example.org/data/in.txt > /app/again.txt\n")
TEST = ("import subprocess\n\ndef test_sum():\n"
        "    assert open('/app/out.txt').read().strip() == '42'\n"
        "    url = subprocess.run(['git', '-C', '/app/tool', 'remote', 'get-url', 'origin'],"
        " capture_output=True, text=True).stdout.strip()\n"
        "    assert url == 'https://github.com/acme/tool.git'\n")


def _task(root: Path) -> Path:
    return write_tb1_task(
        root / "tasks", "mirrored", dockerfile=DOCKERFILE, test=TEST,
        instruction="Run the tool on in.txt into out.txt.",
        solution="bash /app/tool/sum.sh /app/in.txt > /app/out.txt\n"
                 "cmp /app/in.txt /app/again.txt")


def _mirror(root: Path, *, with_file: bool = True) -> Path:
    mirror = root / "mirror"
    work = root / "work-tree"
    work.mkdir()
    (work / "sum.sh").write_text("paste -sd+ \"$1\" | bc\n")
    git = ["git", "-C", str(work), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(["git", "init", "-q", str(work)], check=True)
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-qm", "tool"], check=True)
    subprocess.run(["git", "clone", "-q", "--bare", str(work), str(mirror / "acme__tool")],
                   check=True)
    if with_file:
        target = mirror / "files" / "files.example.org" / "data" / "in.txt"
        target.parent.mkdir(parents=True)
        target.write_text("40\n2\n")
    return mirror


def test_without_the_mirror_or_with_a_file_missing_the_url_is_named(tmp_path, monkeypatch):
    task = _task(tmp_path)
    monkeypatch.delenv(MIRROR_ENV, raising=False)
    assert "https://github.com/acme/tool.git is outside the registries" in \
        load_task(task).unsupported
    monkeypatch.setenv(MIRROR_ENV, str(_mirror(tmp_path, with_file=False)))
    assert "https://files.example.org/data/in.txt is outside the registries (not in the " \
           "mirror folder" in load_task(task).unsupported


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_with_the_mirror_it_builds_and_passes_with_its_oracle_only(tmp_path, monkeypatch):
    from tasks.terminal import TerminalBenchSuite

    monkeypatch.setenv(MIRROR_ENV, str(_mirror(tmp_path)))
    task = _task(tmp_path)
    assert load_task(task).unsupported is None
    suite = TerminalBenchSuite(task.parent)
    env = suite.make_env("mirrored")
    try:
        assert play_oracle(env).reward == 1.0
        env.reset(seed=0)
        assert env.step("submit").reward == 0.0
    finally:
        env.close()
