"""Fixtures of the signal-evaluation tests: a tiny local model (made here, nothing
downloaded), and the same model served by a real `harness serve` subprocess on a free
127.0.0.1 port."""

import os
import socket
import subprocess
import sys
import time
import urllib.request

import pytest


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="session")
def tiny_model_path(tmp_path_factory):
    from harness.policies.tiny import make_tiny_model

    return make_tiny_model(tmp_path_factory.mktemp("signal-model") / "tiny")


@pytest.fixture(scope="session")
def served_url(tiny_model_path):
    port = _free_port()
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    process = subprocess.Popen(
        [sys.executable, "-m", "harness.serve", "--model", f"hf:{tiny_model_path}", "--name",
         "tiny", "--port", str(port), "--threads", "1"],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    try:
        while True:
            try:
                urllib.request.urlopen(f"{url}/health", timeout=2).read()
                break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("harness serve did not start: "
                                       + process.stderr.read().decode()[-2000:])
                time.sleep(0.3)
        yield f"{url}/v1"
    finally:
        process.terminate()
        process.wait(timeout=30)


@pytest.fixture(scope="session")
def local_model(tiny_model_path):
    from harness.signal_eval.models import load_language_model

    return load_language_model(f"hf:{tiny_model_path}")
