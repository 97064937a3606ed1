"""The TB1 and TB2/Harbor task loader, the Dockerfile translation and terminal-bench@1 on task
directories laid out as upstream's (the official test.sh boilerplate included)."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.core import ConfigError
from tasks.terminal.taskdir import BuildStep, Unsupported, load_task, translate_dockerfile

TB2_TEST_SH = """#!/bin/bash
apt-get update
apt-get install -y curl
curl -LsSf https://astral.sh/uv/0.9.5/install.sh | sh
source $HOME/.local/bin/env
uvx -p 3.13 -w pytest==8.4.1 -w pytest-json-ctrf==0.3.5 pytest --ctrf /logs/verifier/ctrf.json /tests/test_outputs.py -rA
if [ $? -eq 0 ]; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
"""
TEST_PY = "def test_hello():\n    assert open('/app/hello.txt').read().strip() == 'Hello, world!'\n"


def make_tb2(root: Path, name: str = "hello", dockerfile: str | None = None,
             toml_extra: str = "") -> Path:
    task = root / name
    (task / "environment").mkdir(parents=True)
    (task / "tests").mkdir()
    (task / "solution").mkdir()
    (task / "task.toml").write_text('version = "1.0"\n[metadata]\ncategory = "file-operations"\n'
                                    'difficulty = "easy"\n[verifier]\ntimeout_sec = 120.0\n'
                                    + toml_extra)
    (task / "instruction.md").write_text("Create /app/hello.txt containing 'Hello, world!'.\n")
    (task / "environment" / "Dockerfile").write_text(dockerfile or (
        "FROM ghcr.io/laude-institute/t-bench/python-3-13:20250620\n"
        "RUN apt-get update && apt-get install -y jq && rm -rf /var/lib/apt/lists/*\n"
        "WORKDIR /app\nENV GREETING=hi\n"))
    (task / "tests" / "test.sh").write_text(TB2_TEST_SH)
    (task / "tests" / "test_outputs.py").write_text(TEST_PY)
    (task / "solution" / "solve.sh").write_text("#!/bin/bash\necho 'Hello, world!' > hello.txt\n")
    return task


def make_tb1(root: Path, name: str = "hello-tb1") -> Path:
    task = root / name
    (task / "tests").mkdir(parents=True)
    (task / "task.yaml").write_text("instruction: |-\n  Create /app/hello.txt containing "
                                    "'Hello, world!'.\ncategory: file-operations\n"
                                    "difficulty: easy\nmax_test_timeout_sec: 60\n")
    (task / "Dockerfile").write_text("FROM ghcr.io/laude-institute/t-bench/python-3-13:20250620\n"
                                     "WORKDIR /app\nCOPY data.txt /app/data.txt\n")
    (task / "data.txt").write_text("x\n")
    (task / "run-tests.sh").write_text("#!/bin/bash\npytest $TEST_DIR/test_outputs.py -rA\n")
    (task / "tests" / "test_outputs.py").write_text(TEST_PY)
    (task / "solution.yaml").write_text("- command: echo 'Hello, world!' > /app/hello.txt\n"
                                        "  min_timeout_sec: 0.1\n")
    return task


def test_tb2_task_is_read_and_its_dockerfile_translated(tmp_path):
    task = load_task(make_tb2(tmp_path))
    assert (task.format, task.category, task.workdir) == ("tb2", "file-operations", "/app")
    assert task.instruction.startswith("Create /app/hello.txt")
    assert task.packages == ("jq",) and task.env == (("GREETING", "hi"),)
    assert task.verifier_timeout_s == 120.0 and task.unsupported is None
    assert any("replaced by Debian bookworm" in note for note in task.notes)


def test_tb1_task_is_read_with_its_solution_commands(tmp_path):
    task = load_task(make_tb1(tmp_path))
    assert task.format == "tb1" and task.solution == ("echo 'Hello, world!' > /app/hello.txt",)
    assert BuildStep("copy", ("data.txt", "/app/data.txt")) in task.steps


@pytest.mark.parametrize("dockerfile, reason", [
    ("FROM a AS b\nRUN true\nFROM c\n", "multi-stage build"),
    ("FROM a\nRUN curl -fsSL https://x.sh | sh\n", "needs the network at build time"),
    ("FROM a\nADD https://example.org/f.tgz /opt/\n", "from a URL"),
    ("FROM a\nRUN pip install -r requirements.txt\n", "pip install of files"),
    ("FROM a\nCOPY missing/ /app/\n", "source 'missing/' is missing"),
    ("FROM a\nONBUILD RUN true\n", "instruction ONBUILD"),
])
def test_untranslatable_steps_make_the_task_unsupported_with_the_step(tmp_path, dockerfile,
                                                                       reason):
    task = load_task(make_tb2(tmp_path, dockerfile=dockerfile))
    assert task.unsupported is not None and reason in task.unsupported


def test_run_parts_pip_and_compound_commands(tmp_path):
    packages, steps, workdir, notes = translate_dockerfile(
        "FROM python:3.13-slim\nRUN apt-get update && apt-get install -y --no-install-recommends "
        "git=1:2.39 make && pip install numpy==1.26 && mkdir -p /data && echo ok > /data/f\n"
        "RUN for i in 1 2; do echo $i >> /data/n; done; apt-get install -y bc\n", tmp_path)
    assert packages == ["bc", "git", "make", "python3-numpy"]
    assert steps[0] == BuildStep("run", ("mkdir -p /data && echo ok > /data/f",))
    assert steps[1].args[0].startswith("for i in 1 2; do")  # kept whole
    assert workdir == "/" and any("versions differ" in n for n in notes)


def test_a_task_that_needs_the_internet_is_unsupported_offline(tmp_path):
    task = load_task(make_tb2(tmp_path, toml_extra="[environment]\nallow_internet = true\n"))
    assert task.unsupported == "the task declares it needs the internet at run time"


def test_a_directory_without_a_task_is_an_error(tmp_path):
    with pytest.raises(Unsupported, match="neither a TB1"):
        load_task(tmp_path)


def test_terminal_bench_suite_needs_a_task_directory(monkeypatch):
    from tasks.terminal import TerminalBenchSuite

    monkeypatch.delenv("TERMINAL_BENCH_TASKS", raising=False)
    with pytest.raises(ConfigError, match="TERMINAL_BENCH_TASKS"):
        TerminalBenchSuite()


def test_official_layouts_run_end_to_end_in_the_sandbox(tmp_path, lite_suite):
    """TB2 with the upstream uv/pytest test.sh (offline stand-ins) and TB1 with pytest: the
    oracle passes, submitting at once fails, an unsupported task is listed with its reason."""
    from tasks.terminal import TerminalBenchSuite

    make_tb2(tmp_path)
    make_tb1(tmp_path)
    make_tb2(tmp_path, "needs-net", dockerfile="FROM a\nRUN wget https://x/y\n")
    suite = TerminalBenchSuite(tmp_path)
    assert sorted(s.id for s in suite.tasks()) == ["hello", "hello-tb1"]
    assert "needs the network" in suite.unsupported["needs-net"]
    for task_id in ("hello", "hello-tb1"):
        env = suite.make_env(task_id)
        env.reset(seed=0)
        assert env.step("submit").reward == 0.0
        env.reset(seed=0)
        assert env.step("echo $GREETING; jq --version | cut -c1-3").observation.startswith(
            "hi\njq-" if task_id == "hello" else "\n")
        result = env.step(env.oracle_action())
        while not (result.terminated or result.truncated):
            result = env.step(env.oracle_action())
        env.close()
        assert result.reward == 1.0, (task_id, result.observation)
