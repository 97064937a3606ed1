"""`harness serve` flags and shutdown (issue 18, failure 9)."""

import signal
import socket
import subprocess
import sys
import time

import httpx
import pytest

from cli_support import child_env

BAD_FLAGS = [["--latency-ms", "inf"], ["--latency-ms", "nan"], ["--max-request-bytes", "-1"],
             ["--max-tokens-limit", "-5"], ["--retry-after", "-3"], ["--max-batch", "0"],
             ["--latency-jitter-ms", "-1"], ["--batch-wait-ms", "inf"]]


@pytest.mark.parametrize("flags", BAD_FLAGS, ids=lambda f: " ".join(f))
def test_bad_serve_flag_is_one_line_and_exit_2(flags, harness):
    harness("serve", "--model", "echo", "--port", "1", *flags, timeout=60).one_line_error()


def _free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _start(tmp_path, *flags):
    port = _free_port()
    proc = subprocess.Popen([sys.executable, "-m", "harness.cli", "serve", "--model", "echo",
                             "--port", str(port), *flags], cwd=tmp_path, env=child_env(),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            httpx.get(f"http://127.0.0.1:{port}/health", timeout=1)
            return proc, port
        except httpx.TransportError:
            time.sleep(0.2)
    proc.kill()
    raise AssertionError(proc.communicate()[1])


def test_sigterm_stops_a_server_with_a_request_hanging(tmp_path):
    """A slow request in flight no longer keeps the server alive after SIGTERM."""
    proc, port = _start(tmp_path, "--latency-ms", "600000")
    body = {"model": "echo", "messages": [{"role": "user", "content": "hi"}]}
    with socket.create_connection(("127.0.0.1", port)) as sock:
        payload = httpx.Request("POST", f"http://127.0.0.1:{port}/v1/chat/completions",
                                json=body)
        head = "".join(f"{k}: {v}\r\n" for k, v in payload.headers.items())
        sock.sendall(f"POST /v1/chat/completions HTTP/1.1\r\n{head}\r\n".encode()
                     + payload.read())
        time.sleep(1.0)
        started = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        finally:
            proc.kill()
    assert time.monotonic() - started < 15


def test_client_disconnect_is_not_a_server_error(tmp_path):
    proc, port = _start(tmp_path)
    try:
        with socket.create_connection(("127.0.0.1", port)) as sock:  # half a body, then gone
            sock.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n"
                         b"Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"mo")
            time.sleep(0.5)
        time.sleep(1.0)
        stats = httpx.get(f"http://127.0.0.1:{port}/harness/stats", timeout=10).json()
        assert stats["server_errors"] == 0, stats
    finally:
        proc.send_signal(signal.SIGTERM)
        _, stderr = proc.communicate(timeout=30)
    assert "request failed" not in stderr and "Traceback" not in stderr, stderr
