"""TB1 task features played in the sandbox: a ``run-tests.sh`` that pip-installs the
verifier's dependency from PyPI (through the registries egress), the time limits of
``task.yaml`` (``max_agent_timeout_sec``, ``max_test_timeout_sec``) and ``pip install
--index-url`` in a Dockerfile (PyPI honoured, any other index refused, the URL named). Each
playable task: its oracle passes, submitting at once fails."""

from __future__ import annotations

import urllib.request
from pathlib import Path

import pytest

from tasks.sandbox import sandbox_available
from tasks.terminal.taskdir import load_task
from tests.tasks.terminal.support import play_oracle

PYTEST_RUN = "#!/bin/bash\npytest $TEST_DIR/test_outputs.py -rA\n"


def make_tb1(root: Path, name: str, *, test_py: str, solution: str, run_tests: str = PYTEST_RUN,
             dockerfile: str = "FROM debian:12\nWORKDIR /app\n", timeouts: str = "") -> Path:
    """A TB1 task folder as terminal-bench lays it out (task.yaml, Dockerfile, run-tests.sh,
    tests/test_outputs.py, solution.sh)."""
    task = root / name
    (task / "tests").mkdir(parents=True)
    (task / "task.yaml").write_text(f"instruction: |-\n  Task {name}; see the tests.\n"
                                    f"category: software-engineering\ndifficulty: easy\n"
                                    f"{timeouts}")
    (task / "Dockerfile").write_text(dockerfile)
    (task / "run-tests.sh").write_text(run_tests)
    (task / "tests" / "test_outputs.py").write_text(test_py)
    (task / "solution.sh").write_text(solution)
    return task


@pytest.fixture
def sandbox() -> None:
    reason = sandbox_available()
    if reason is not None:
        pytest.skip(f"sandbox unavailable: {reason}")


@pytest.fixture
def pypi(sandbox) -> None:
    """PyPI reachable from this host (the registries egress forwards to it)."""
    try:
        urllib.request.urlopen("https://pypi.org/simple/pip/", timeout=15).close()
    except OSError as exc:
        pytest.skip(f"PyPI unreachable from this host: {exc}")


def bench_env(root: Path, task_id: str):
    from tasks.terminal import TerminalBenchSuite

    suite = TerminalBenchSuite(root)
    assert suite.unsupported == {}
    return suite.make_env(task_id)


def step_all(env, actions: list[str]):
    env.reset(seed=0)
    return [env.step(action) for action in actions]


# ---- (1) the verifier installs its dependency with pip --------------------------------------

UNIDECODE_TEST = """from text_unidecode import unidecode


def test_ascii_transliteration():
    word = open('/app/word.txt').read().strip()
    assert open('/app/ascii.txt').read().strip() == unidecode(word) == 'cafe'
"""


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_run_tests_pip_installs_the_verifiers_dependency_from_pypi(tmp_path, pypi):
    make_tb1(tmp_path, "pip-verifier", test_py=UNIDECODE_TEST,
             dockerfile="FROM debian:12\nWORKDIR /app\nRUN printf 'caf\\303\\251\\n' > word.txt\n",
             run_tests="#!/bin/bash\npip install --no-cache-dir text-unidecode==1.3\n"
                       "pytest $TEST_DIR/test_outputs.py -rA\n",
             solution="echo cafe > /app/ascii.txt\n")
    env = bench_env(tmp_path, "pip-verifier")
    try:
        before, submitted = step_all(env, ["python3 -c 'import text_unidecode'", "submit"])
        assert "No module named 'text_unidecode'" in before.observation  # not in the image
        assert (submitted.reward, submitted.info["verifier"]) == (0.0, "tests failed (1 of 1)")
        result = play_oracle(env)
    finally:
        env.close()
    assert (result.reward, result.info["verifier"]) == (1.0, "all tests passed"), (
        result.observation)
    hosts = {(r["host"], r["verdict"]) for r in result.info.get("egress", [])}
    assert ("files.pythonhosted.org", "allowed") in hosts, hosts  # the verifier's download


# ---- (2) task.yaml time limits --------------------------------------------------------------

SLOW_RUN_TESTS = "#!/bin/bash\nsleep 3\npytest $TEST_DIR/test_outputs.py -rA\n"
DONE_TEST = "def test_done():\n    assert open('/app/done.txt').read() == 'done\\n'\n"


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_max_test_timeout_sec_fails_a_slower_verifier_and_a_larger_one_passes(tmp_path,
                                                                             sandbox):
    for name, limit in (("verifier-1s", 1), ("verifier-60s", 60)):
        make_tb1(tmp_path, name, test_py=DONE_TEST, solution="echo done > /app/done.txt\n",
                 run_tests=SLOW_RUN_TESTS, timeouts=f"max_test_timeout_sec: {limit}\n")
    assert load_task(tmp_path / "verifier-1s").verifier_timeout_s == 1.0
    results = {}
    for name in ("verifier-1s", "verifier-60s"):
        env = bench_env(tmp_path, name)
        try:
            submitted = step_all(env, ["submit"])[-1]
            results[name] = (submitted.reward, play_oracle(env))
        finally:
            env.close()
    assert results["verifier-1s"][1].info["verifier"] == "timeout"
    assert results["verifier-1s"][1].reward == 0.0
    submitted, passed = results["verifier-60s"]
    assert submitted == 0.0
    assert (passed.reward, passed.info["verifier"]) == (1.0, "all tests passed")


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_max_agent_timeout_sec_kills_a_longer_command(tmp_path, sandbox):
    make_tb1(tmp_path, "agent-3s", test_py=DONE_TEST, solution="echo done > /app/done.txt\n",
             timeouts="max_agent_timeout_sec: 3\n")
    env = bench_env(tmp_path, "agent-3s")
    try:
        assert env.limits.wall_s == 3.0
        slow, quick = step_all(env, ["sleep 8; echo late > /app/late.txt", "ls /app"])
        result = play_oracle(env)
    finally:
        env.close()
    assert "[command killed after 3 s]" in slow.observation, slow.observation
    assert "late.txt" not in quick.observation
    assert (result.reward, result.info["verifier"]) == (1.0, "all tests passed")


# ---- (3) pip install --index-url ------------------------------------------------------------

SIX_TEST = """import six


def test_version_of_the_installed_six():
    assert open('/app/six.txt').read().strip() == six.__version__ == '1.16.0'
"""


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_a_pip_install_from_the_public_index_is_built_and_played(tmp_path, pypi):
    make_tb1(tmp_path, "pypi-index", test_py=SIX_TEST, solution="echo 1.16.0 > /app/six.txt\n",
             dockerfile="FROM debian:12\nWORKDIR /app\nRUN pip install --no-cache-dir "
                        "--index-url https://pypi.org/simple six==1.16.0\n")
    task = load_task(tmp_path / "pypi-index")
    assert (task.unsupported, task.build_network) == (None, "registries")
    env = bench_env(tmp_path, "pypi-index")
    try:
        seen, submitted = step_all(env, ["python3 -c 'import six; print(six.__version__)'",
                                         "submit"])
        result = play_oracle(env)
    finally:
        env.close()
    assert seen.observation.startswith("1.16.0\n") and submitted.reward == 0.0
    assert (result.reward, result.info["verifier"]) == (1.0, "all tests passed")


@pytest.mark.parametrize("run, supported", [
    ("pip install --index-url=https://pypi.org/simple/ six", True),
    ("pip3 install -i https://pypi.python.org/simple six", True),
    ("python3 -m pip install six", True),
    ("pip install -i https://test.pypi.org/simple/ six", False),
    ("pip install --extra-index-url=https://mirror.example/simple six", False),
    ("python -m pip install --index-url http://10.0.0.5:3141/root/pypi six", False),
    ("for p in six idna; do pip install --index-url https://mirror.example/simple $p; done",
     False),
])
def test_only_the_public_index_is_honoured_and_another_is_named(tmp_path, run, supported):
    task = load_task(make_tb1(tmp_path, "index", test_py=DONE_TEST, solution="true\n",
                              dockerfile=f"FROM debian:12\nWORKDIR /app\nRUN {run}\n"))
    if supported:
        assert (task.unsupported, task.build_network) == (None, "registries")
    else:
        url = next(w for w in run.replace("=", " ").split() if "://" in w)
        assert task.unsupported is not None and "\n" not in task.unsupported
        assert f"pip index {url} is not a package registry" in task.unsupported
