"""A terminal task's network policy: what its task.toml declares (`network_policy`), and a
``registries`` task's episode reaching only its allowed hosts, every request in the step's info.
Every server here listens on 127.0.0.1."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tasks.sandbox import SandboxError, sandbox_available
from tasks.terminal.taskdir import Unsupported, load_task, network_policy


@pytest.mark.parametrize("environment, policy", [
    ({}, "none"),
    ({"allow_internet": False}, "none"),
    ({"network": "none"}, "none"),
    ({"network": False}, "none"),
    ({"network": "registries"}, "registries"),
    ({"network": "registries", "allow_internet": True}, "registries"),  # Harbor needs the flag
    ({"allow_internet": True}, "registries"),  # Harbor's default, public: registries here
])
def test_declared_network_needs_map_to_a_policy(environment, policy):
    assert network_policy(environment) == policy


@pytest.mark.parametrize("environment, reason", [
    ({"network_mode": "internet"}, "the task declares network_mode = 'internet'"),
    ({"network": True}, "the task declares network = True; supported: 'none' or 'registries'"),
    ({"network": "internet", "allow_internet": True}, "network = 'internet'"),
])
def test_any_other_network_need_is_unsupported_with_the_reason(environment, reason):
    with pytest.raises(Unsupported, match=reason.replace("(", r"\(")):
        network_policy(environment)


def make_task(root: Path, environment: str) -> Path:
    """A TB2 task with a ``fetch.py`` helper in /app and the given ``[environment]`` lines."""
    task = root / "fetch-task"
    (task / "environment").mkdir(parents=True)
    (task / "tests").mkdir()
    (task / "task.toml").write_text(f'version = "1.0"\n[environment]\n{environment}')
    (task / "instruction.md").write_text("Fetch a file from the package index.\n")
    (task / "environment" / "Dockerfile").write_text(
        "FROM python:3.13\nWORKDIR /app\nCOPY fetch.py /app/fetch.py\n")
    (task / "environment" / "fetch.py").write_text(
        "import sys, urllib.error, urllib.request\n"
        "try:\n    print(urllib.request.urlopen(sys.argv[1], timeout=20).read().decode())\n"
        "except urllib.error.HTTPError as exc:\n    print(exc.code, exc.read().decode())\n")
    (task / "tests" / "test.sh").write_text("echo 1 > /logs/verifier/reward.txt\n")
    return task


def test_the_loader_keeps_the_policy_on_the_task(tmp_path):
    task = load_task(make_task(tmp_path / "a", 'network = "registries"\nallow_internet = true\n'))
    assert (task.unsupported, task.network) == (None, "registries")
    assert load_task(make_task(tmp_path / "b", 'network = "none"\n')).network == "none"
    refused = load_task(make_task(tmp_path / "c", 'network = "anything"\n'))
    assert refused.unsupported is not None and "network = 'anything'" in refused.unsupported


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def servers(tmp_path) -> Iterator[tuple[int, int]]:
    """Two HTTP servers on 127.0.0.1 (ports): the stand-in registry and one never allowed."""
    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "hello.txt").write_text("hello from the stand-in\n")
    started = [http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), lambda *a: _Quiet(*a, directory=str(tmp_path / "site")))
        for _ in range(2)]
    for server in started:
        threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
    yield started[0].server_address[1], started[1].server_address[1]
    for server in started:
        server.shutdown()
        server.server_close()


def test_a_registries_episode_reaches_only_allowed_hosts_and_records_each_request(
        tmp_path, servers):
    reason = sandbox_available()
    if reason is not None:
        pytest.skip(f"sandbox unavailable: {reason}")
    from tasks.terminal.env import TerminalEnv
    from tasks.terminal.environment import build_environment

    allowed, other = servers
    task = load_task(make_task(tmp_path, 'network = "registries"\n'))
    env = TerminalEnv(task, build_environment(task), egress_allow=[f"127.0.0.1:{allowed}"])
    fetch = "no_proxy= NO_PROXY= python3 /app/fetch.py http://127.0.0.1:{}/hello.txt"
    try:
        observation, info = env.reset(seed=0)
        proxy = env._egress
        got = env.step(fetch.format(allowed))
        refused = env.step(fetch.format(other))
        quiet = env.step("true")
    finally:
        env.close()
    assert "(network: package registries only)" in observation and "egress" not in info
    assert "hello from the stand-in" in got.observation
    assert got.info["egress"] == [{"method": "GET", "host": "127.0.0.1", "port": allowed,
                                   "verdict": "allowed", "reason": ""}]
    assert f"403 127.0.0.1:{other} is not on the egress allow-list" in refused.observation
    assert [(r["port"], r["verdict"]) for r in refused.info["egress"]] == [(other, "refused")]
    assert "egress" not in quiet.info
    with pytest.raises(SandboxError, match="not started"):  # close stopped the proxy
        assert proxy is not None and proxy.socket_dir
