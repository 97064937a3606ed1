"""Layers, not copies: tasks on one base image share its layer (Python laid out as the python
image, package lists kept), tasks asking for the same Debian packages share their apt layer,
each task adds only its own steps; a terminal-bench task's files stay as its Dockerfile made
them (the agent is root) and its commands share one session (a server it starts serves the
verifier)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tasks.sandbox import Sandbox
from tasks.terminal.environment import build_environment
from tasks.terminal.taskdir import load_task
from tests.tasks.terminal.support import play_oracle, write_tb1_task

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1200)]

_PY = "FROM python:3.13-slim-bookworm\nRUN apt-get update && apt-get install -y cowsay\n"


def _tb1(root: Path, name: str, dockerfile: str, solution: str, test: str) -> Path:
    return write_tb1_task(root, name, dockerfile=dockerfile, solution=solution, test=test,
                          limits="max_test_timeout_sec: 60\nmax_agent_timeout_sec: 120\n")


def test_shared_layers_and_the_python_image_layout(tmp_path):
    first = build_environment(load_task(_tb1(tmp_path, "one", _PY + "RUN echo 1 > /one\n",
                                             "true", "def test_x():\n    pass\n")))
    second = build_environment(load_task(_tb1(tmp_path, "two", _PY + "RUN echo 2 > /two\n",
                                              "true", "def test_x():\n    pass\n")))
    assert first.rootfs == second.rootfs and first.layers[1:] == second.layers[1:]
    assert first.layer != second.layer and len(first.layers) == 3  # task, apt, image
    assert not (first.layer / "usr" / "games").exists()  # the package is in the shared layer
    with Sandbox(first.rootfs, layers=first.layers, workdir="/tmp") as box:
        probe = box.run(
            "python --version; readlink -f /usr/local/bin/python; "
            "ls /usr/local/lib/python3.13/site-packages | grep -c '^pip$'; "
            "test -x /usr/games/cowsay && echo cowsay; ls /var/lib/apt/lists | grep -c Packages; "
            "rm -rf /usr/local/lib/python3.13/site-packages/pip; python -m pip --version",
            user="root").output.splitlines()
    assert probe[0].startswith("Python 3.13") and probe[1] == "/usr/bin/python3.13"
    assert probe[2] == "1" and probe[3] == "cowsay" and int(probe[4]) >= 1
    assert "No module named pip" in probe[5]  # broken as the official image breaks


def test_a_terminal_bench_task_keeps_root_ownership_and_one_session(tmp_path):
    from tasks.terminal import TerminalBenchSuite

    server = ("cat > /app/serve.py <<'EOF'\nimport http.server\n"
              "http.server.HTTPServer(('127.0.0.1', 8765), "
              "http.server.SimpleHTTPRequestHandler).serve_forever()\nEOF\n"
              "nohup python3 /app/serve.py > /dev/null 2>&1 &\nsleep 1")
    test = ("import urllib.request\n\ndef test_served():\n    assert urllib.request.urlopen("
            "'http://127.0.0.1:8765/serve.py').status == 200\n")
    _tb1(tmp_path / "tasks", "served", "FROM debian:bookworm\nWORKDIR /app\n"
         "RUN git init -q /app/repo\n", server, test)
    suite = TerminalBenchSuite(tmp_path / "tasks")
    env = suite.make_env("served")
    try:
        env.reset(seed=0)
        owner = env.step("stat -c %U /app/repo && git -C /app/repo status --short | wc -l")
        assert owner.observation.startswith("root\n0\n")  # as built; git trusts it
        step = play_oracle(env)  # a reset: the state the first step checked is rebuilt
        assert step.reward == 1.0, step.info  # the verifier reached the agent's server
    finally:
        env.close()
    env = suite.make_env("served")
    try:
        env.reset(seed=0)
        assert env.step("submit").reward == 0.0
    finally:
        env.close()
