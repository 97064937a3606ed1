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
    assert any("t-bench python-3-13 emulated" in note for note in task.notes)


def test_tb1_task_is_read_with_its_solution_commands(tmp_path):
    task = load_task(make_tb1(tmp_path))
    assert task.format == "tb1" and task.solution == ("echo 'Hello, world!' > /app/hello.txt",)
    assert BuildStep("copy", ("data.txt", "/app/data.txt")) in task.steps


@pytest.mark.parametrize("dockerfile, reason", [
    ("FROM debian:12 AS b\nRUN true\nFROM debian:12\n", "multi-stage build"),
    ("FROM debian:12\nRUN curl -fsSL https://x.sh | sh\n", "needs the network at build time"),
    ("FROM debian:12\nADD https://example.org/f.tgz /opt/\n", "from a URL"),
    ("FROM debian:12\nRUN pip install torch --index-url https://download.pytorch.org/whl/cpu\n",
     "pip index https://download.pytorch.org/whl/cpu is not a package registry"),
    ("FROM debian:12\nCOPY missing/ /app/\n", "source 'missing/' is missing"),
    ("FROM debian:12\nONBUILD RUN true\n", "instruction ONBUILD"),
    ("FROM localstack/localstack:4.3\nRUN true\n",
     "base image localstack/localstack:4.3 is not emulated"),
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
    assert packages == ["bc", "git", "make"]  # pip names are never mapped to Debian packages
    assert steps[0] == BuildStep("from", ("python:3.13", "trixie"))  # the image's layer
    assert steps[1] == BuildStep("run", ("pip install numpy==1.26 && mkdir -p /data && "
                                         "echo ok > /data/f",))
    assert steps[2].args[0].startswith("for i in 1 2; do")  # kept whole
    assert workdir == "/" and any("from PyPI at build time" in n for n in notes)


def test_apt_options_before_install_still_name_the_packages(tmp_path):
    packages, steps, _, _ = translate_dockerfile(
        "FROM python:3.13-slim\nRUN apt-get update && apt-get -y install man-db\n"
        "RUN for i in 1; do apt-get -q -y install bc; done\n", tmp_path)
    assert packages == ["bc", "man-db"]  # terminal-bench-core new-encrypt-command's form
    assert [s.kind for s in steps] == ["from", "run"]


def test_harbors_default_public_network_is_given_as_the_registries(tmp_path):
    task = load_task(make_tb2(tmp_path, toml_extra="[environment]\nallow_internet = true\n"))
    assert (task.unsupported, task.network) == (None, "registries")


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
    make_tb2(tmp_path, "needs-net", dockerfile="FROM debian:12\nRUN wget https://x/y\n")
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


def test_heredoc_copy_becomes_a_file_and_heredoc_run_a_script(tmp_path):
    _, steps, _, _ = translate_dockerfile(
        "FROM debian:12\nWORKDIR /app\nCOPY <<EOT logs/auth.log\nline one\n  line two\nEOT\n"
        "RUN <<EOF\necho a > /a\necho b > /b\nEOF\nRUN cat <<-'END' > /c\n\tx\n\tEND\n", tmp_path)
    assert steps[2] == BuildStep("write", ("/app/logs/auth.log", "line one\n  line two\n"))
    assert steps[3] == BuildStep("run", ("echo a > /a\necho b > /b\n",))
    assert steps[4] == BuildStep("run", ("cat <<-'END' > /c\nx\nEND",))


def test_an_unterminated_heredoc_is_unsupported(tmp_path):
    with pytest.raises(Unsupported, match="heredoc EOT never ends"):
        translate_dockerfile("FROM debian:12\nCOPY <<EOT /f\nno end\n", tmp_path)


def test_pip_from_pypi_is_replayed_with_registries_at_build_time(tmp_path):
    task = load_task(make_tb2(tmp_path, dockerfile=(
        "FROM debian:12\nRUN pip install --index-url https://pypi.org/simple/ requests==2.32.3"
        "\n")))
    assert task.unsupported is None and task.build_network == "registries"
    assert task.packages == () and "requests==2.32.3" in task.steps[-1].args[0]
    plain = load_task(make_tb2(tmp_path, "plain", dockerfile="FROM debian:12\nRUN true\n"))
    assert plain.build_network == "none"


def test_arg_defaults_are_substituted(tmp_path):
    _, steps, _, _ = translate_dockerfile(
        "ARG BASE=debian:12\nFROM ${BASE}\nARG DIR=/opt/x\nWORKDIR $DIR\n", tmp_path)
    assert steps == [BuildStep("from", ("debian:bookworm", "bookworm")),
                     BuildStep("workdir", ("/opt/x",))]


def _tb1_compose(root: Path, name: str, compose: str) -> Path:
    task = make_tb1(root, name)
    (task / "Dockerfile").unlink()
    (task / "client").mkdir()
    (task / "client" / "Dockerfile").write_text("FROM debian:12\nWORKDIR /srv\n"
                                                "COPY seed.txt /srv/seed.txt\n")
    (task / "client" / "seed.txt").write_text("seed\n")
    (task / "docker-compose.yaml").write_text(compose)
    return task


def test_a_single_service_compose_names_the_build_context(tmp_path):
    task = load_task(_tb1_compose(tmp_path, "one", "services:\n  client:\n    build:\n"
                                  "      context: client\n      dockerfile: Dockerfile\n"))
    assert task.unsupported is None and task.context == (tmp_path / "one" / "client").resolve()
    assert BuildStep("copy", ("seed.txt", "/srv/seed.txt")) in task.steps


@pytest.mark.parametrize("compose, reason", [
    ("services:\n  client:\n    build: client\n  server:\n    image: x\n",
     "2 services (client, server); only single-service"),
    ("services:\n  client:\n    image: x\n", "service client has no build section"),
    ("services:\n  client:\n    build:\n      context: ../..\n", "leaves the build context"),
])
def test_compose_files_the_loader_cannot_use_are_unsupported(tmp_path, compose, reason):
    task = load_task(_tb1_compose(tmp_path, "bad", compose))
    assert task.unsupported is not None and reason in task.unsupported


@pytest.mark.parametrize("yaml_text, reason", [
    ("instruction: x\nmax_agent_timeout_sec: .nan\n", "agent timeout nan s is out of range"),
    ("instruction: x\nmax_test_timeout_sec: -5\n", "verifier timeout -5.0 s is out of range"),
    ("instruction: [unclosed\n", "task.yaml or a task file cannot be read"),
    ("- just\n- a list\n", "task.yaml is not a mapping"),
])
def test_bad_task_settings_make_one_task_unsupported_with_one_line(tmp_path, yaml_text,
                                                                    reason):
    make_tb1(tmp_path, "good")
    bad = make_tb1(tmp_path, "bad")
    (bad / "task.yaml").write_text(yaml_text)
    from tasks.terminal.taskdir import load_tasks

    tasks = {t.id: t for t in load_tasks(tmp_path)}
    assert tasks["good"].unsupported is None
    assert reason in tasks["bad"].unsupported and "\n" not in tasks["bad"].unsupported


def test_a_task_yaml_that_is_not_utf8_is_unsupported(tmp_path):
    bad = make_tb1(tmp_path, "latin")
    (bad / "task.yaml").write_bytes(b"instruction: caf\xe9\xff\xfe\n")
    assert "cannot be read" in load_task(bad).unsupported


_HEAD = "==================== short test summary info =====================\n"


@pytest.mark.parametrize("log, verdict", [
    (_HEAD + "PASSED t.py::a\nPASSED t.py::b\n", (1.0, "all tests passed")),
    (_HEAD + "PASSED t.py::a\nFAILED t.py::b - assert x - y\n", (0.0, "tests failed (1 of 2)")),
    (_HEAD + "ERROR ../tests/t.py\n", (0.0, "tests failed (1 of 1)")),
    (_HEAD + "PASSED t.py::a\nXPASS t.py::b\n", (0.0, "tests failed (1 of 2)")),
    (_HEAD + "SKIPPED [1] t.py:3: no\nXFAIL t.py::c\n", (1.0, "all tests passed")),
    (_HEAD + "FAILED t.py::a - flaky\nPASSED t.py::a\n", (1.0, "all tests passed")),
    ("PASSED t.py::a\n", (0.0, "no pytest summary")),  # no summary header: upstream fails
    ("collected 0 items\n", (0.0, "no pytest summary")),
    # terminal-bench-core jupyter-notebook-server: a captured log line in the PASSES section
    ("----- Captured log call -----\nERROR    traitlets:__init__.py:98 Notebook JSON is "
     "invalid\n" + _HEAD + "PASSED ../tests/test_outputs.py::test_a\n",
     (1.0, "all tests passed")),
])
def test_tb1_verdict_is_upstreams_pytest_rule(log, verdict):
    from tasks.terminal.env import pytest_verdict

    assert pytest_verdict(log) == verdict


ROOT_TEST_PY = """import os, pwd


def test_copy_made_by_the_new_user():
    path = '/srv/out.txt'
    assert open(path).read() == 'line one\\n'
    assert pwd.getpwuid(os.stat(path).st_uid).pw_name == 'tbuser'
"""


def test_compose_heredoc_and_root_only_steps_pass_with_the_oracle_only(tmp_path, lite_suite):
    """TB1 through a one-service compose file, a heredoc COPY, run-tests.sh as the verifier and
    a solution only root can run (useradd, chown): the oracle passes, submit-at-once fails."""
    from tasks.terminal import TerminalBenchSuite

    task = _tb1_compose(tmp_path, "rooted", "services:\n  client:\n    build:\n"
                        "      context: client\n")
    (task / "client" / "Dockerfile").write_text(
        "FROM debian:12\nWORKDIR /srv\nCOPY <<EOT /srv/seed.txt\nline one\nEOT\n"
        "RUN chmod 600 /srv/seed.txt\n")
    (task / "tests" / "test_outputs.py").write_text(ROOT_TEST_PY)
    (task / "solution.yaml").unlink()
    (task / "solution.sh").write_text("useradd tbuser && cp /srv/seed.txt /srv/out.txt && "
                                      "chown tbuser /srv/out.txt\n")
    suite = TerminalBenchSuite(tmp_path)
    assert suite.unsupported == {}
    env = suite.make_env("rooted")
    try:
        env.reset(seed=0)
        assert env.step("submit").reward == 0.0
        env.reset(seed=0)
        result = env.step(env.oracle_action())
        assert "[exit code 0]" in result.observation, result.observation
        result = env.step(env.oracle_action())
        assert (result.reward, result.info["verifier"]) == (1.0, "all tests passed")
    finally:
        env.close()


def test_tb1_tests_get_upstreams_default_scripts_unless_the_task_lists_its_own(tmp_path):
    dataset = tmp_path / "dataset"
    (dataset / "defaults").mkdir(parents=True)
    (dataset / "scripts").mkdir()
    (dataset / "defaults" / "run-tests.sh").write_text(
        "source $TEST_DIR/setup-uv-pytest.sh\nbash $TEST_DIR/run-uv-pytest.sh\n")
    for name in ("setup-uv-pytest.sh", "run-uv-pytest.sh", "other.sh"):
        (dataset / "scripts" / name).write_text("true\n")
    plain = make_tb1(dataset / "tasks", "plain")
    (plain / "run-tests.sh").unlink()
    task = load_task(plain)
    assert task.extras["run_tests"] == dataset / "defaults" / "run-tests.sh"
    assert [p.name for p in task.extras["test_scripts"]] == ["setup-uv-pytest.sh",
                                                            "run-uv-pytest.sh"]
    listed = make_tb1(dataset / "tasks", "listed")
    with (listed / "task.yaml").open("a") as yaml:
        yaml.write("test_scripts:\n  - other.sh\n")
    assert [p.name for p in load_task(listed).extras["test_scripts"]] == ["other.sh"]
