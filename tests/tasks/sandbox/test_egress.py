"""Registry-only egress: the allow-listing proxy over its Unix socket, then `pip download`
inside a sandbox through it. Every server here listens on 127.0.0.1; nothing else is reached."""

from __future__ import annotations

import base64
import hashlib
import http.server
import io
import os
import socket
import stat
import shutil
import subprocess
import threading
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tasks.sandbox import BASE_RECIPE, Sandbox, SandboxError, build_rootfs, sandbox_available
from tasks.sandbox_egress import (ALLOW_ENV, DEFAULT_ALLOWED, EGRESS_DIR, EGRESS_PORT,
                                  FORWARDER, EgressProxy, check_network_policy,
                                  configured_allow_list, egress_env, egress_prologue)
from tests.tasks.sandbox.conftest import assert_no_agent_processes

# ---- stand-in servers on 127.0.0.1 -------------------------------------------------------


class _Recorder(http.server.SimpleHTTPRequestHandler):
    """Serves a directory and records each request's path and headers."""

    seen: list[tuple[str, dict[str, str]]]

    def do_GET(self) -> None:  # noqa: N802 - http.server's naming
        self.seen.append((self.path, dict(self.headers)))
        super().do_GET()

    def log_message(self, *args: object) -> None:
        pass


class StandIn:
    """An HTTP server on 127.0.0.1 serving `root`; `seen` lists the requests it got."""

    def __init__(self, root: Path):
        self.seen: list[tuple[str, dict[str, str]]] = []
        handler = type("Handler", (_Recorder,), {"seen": self.seen})
        self.server = http.server.ThreadingHTTPServer(
            ("127.0.0.1", 0), lambda *a: handler(*a, directory=str(root)))
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.05,),
                                       daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def stand_in(tmp_path) -> Iterator[StandIn]:
    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "hello.txt").write_text("hello from the stand-in\n")
    server = StandIn(tmp_path / "site")
    yield server
    server.close()


@pytest.fixture
def unlisted(tmp_path) -> Iterator[StandIn]:
    """A second loopback server that is never on the allow-list."""
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "secret.txt").write_text("must not leak\n")
    server = StandIn(tmp_path / "other")
    yield server
    server.close()


@pytest.fixture
def echo_port() -> Iterator[int]:
    """A TCP echo server on 127.0.0.1."""
    listener = socket.create_server(("127.0.0.1", 0))

    def serve() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            with conn:
                while data := conn.recv(4096):
                    conn.sendall(data)

    threading.Thread(target=serve, daemon=True).start()
    yield listener.getsockname()[1]
    listener.close()


def exchange(proxy: EgressProxy, raw: bytes, *, half_close: bool = True) -> bytes:
    """Send `raw` to the proxy's socket and read its answer to the end."""
    with socket.socket(socket.AF_UNIX) as client:
        client.settimeout(10)
        client.connect(str(proxy.socket_path))
        client.sendall(raw)
        if half_close:
            client.shutdown(socket.SHUT_WR)
        chunks = []
        try:
            while chunk := client.recv(65536):
                chunks.append(chunk)
        except ConnectionResetError:  # the proxy closed with part of `raw` unread
            pass
    return b"".join(chunks)


# ---- the proxy ------------------------------------------------------------------------------


def test_connect_to_an_allowed_host_tunnels_bytes_both_ways(echo_port):
    with EgressProxy([f"127.0.0.1:{echo_port}"]) as proxy:
        with socket.socket(socket.AF_UNIX) as client:
            client.settimeout(10)
            client.connect(str(proxy.socket_path))
            client.sendall(f"CONNECT 127.0.0.1:{echo_port} HTTP/1.1\r\n\r\nfirst ".encode())
            reply = b""
            while b"first " not in reply:
                reply += client.recv(4096)
            client.sendall(b"second")
            client.shutdown(socket.SHUT_WR)
            while chunk := client.recv(4096):
                reply += chunk
        log = proxy.drain_log()
    assert reply == b"HTTP/1.1 200 Connection established\r\n\r\nfirst second"
    assert [(r.method, r.host, r.port, r.verdict) for r in log] == [
        ("CONNECT", "127.0.0.1", echo_port, "allowed")]
    assert proxy.log == ()  # drained


def test_a_port_not_on_the_list_is_refused_with_403_and_logged(echo_port, unlisted):
    with EgressProxy([f"127.0.0.1:{echo_port}"]) as proxy:
        tunnel = exchange(proxy, f"CONNECT 127.0.0.1:{unlisted.port} HTTP/1.1\r\n\r\n".encode())
        plain = exchange(proxy, f"GET http://127.0.0.1:{unlisted.port}/secret.txt HTTP/1.1\r\n"
                         f"Host: 127.0.0.1:{unlisted.port}\r\n\r\n".encode())
    for reply in (tunnel, plain):
        assert reply.startswith(b"HTTP/1.1 403 Forbidden\r\n")
        assert f"127.0.0.1:{unlisted.port} is not on the egress allow-list".encode() in reply
        assert b"must not leak" not in reply
    assert unlisted.seen == []
    assert [(r.method, r.host, r.port, r.verdict) for r in proxy.log] == [
        ("CONNECT", "127.0.0.1", unlisted.port, "refused"),
        ("GET", "127.0.0.1", unlisted.port, "refused")]
    assert all(r.time > time.time() - 60 and "allow-list" in r.reason for r in proxy.log)


def test_a_name_not_on_the_list_is_neither_resolved_nor_connected(monkeypatch):
    calls: list[tuple] = []

    def forbidden(*args, **kwargs):
        calls.append(args)
        raise OSError("the test forbids name resolution and connections")

    with EgressProxy() as proxy:  # the default list: registries, no loopback
        for name in ("getaddrinfo", "gethostbyname", "gethostbyname_ex", "create_connection"):
            monkeypatch.setattr(socket, name, forbidden)
        replies = [exchange(proxy, b"CONNECT example.invalid:443 HTTP/1.1\r\n\r\n"),
                   exchange(proxy, b"GET http://example.invalid/simple/ HTTP/1.1\r\n\r\n"),
                   exchange(proxy, b"CONNECT pypi.org:22 HTTP/1.1\r\n\r\n")]
        monkeypatch.undo()
    assert calls == []
    assert all(reply.startswith(b"HTTP/1.1 403") for reply in replies)
    assert [(r.host, r.port, r.verdict) for r in proxy.log] == [
        ("example.invalid", 443, "refused"), ("example.invalid", 80, "refused"),
        ("pypi.org", 22, "refused")]


@pytest.mark.parametrize("raw", [
    b"garbage\r\n\r\n",
    b"\x00\xff\x1b[31m\r\n\r\n",
    b"CONNECT example.invalid HTTP/1.1\r\n\r\n",
    b"CONNECT 127.0.0.1:99999 HTTP/1.1\r\n\r\n",
    b"CONNECT [nonsense]:443 HTTP/1.1\r\n\r\n",
    b"GET /relative/path HTTP/1.1\r\nHost: pypi.org\r\n\r\n",
    b"GET https://pypi.org/simple/ HTTP/1.1\r\n\r\n",
    b"GET http://user@pypi.org/ HTTP/1.1\r\n\r\n",
    b"GET http://pypi.org/ SPDY/3\r\n\r\n",
    b"CONNECT pypi.org:443 HTTP/1.1\r\n",  # the head never ends
    b"X" * (70 << 10),  # nor here, and it is too long
    b"",
])
def test_malformed_requests_get_400_and_the_proxy_keeps_serving(raw, stand_in):
    with EgressProxy([f"127.0.0.1:{stand_in.port}"]) as proxy:
        reply = exchange(proxy, raw)
        after = exchange(proxy, f"GET http://127.0.0.1:{stand_in.port}/hello.txt HTTP/1.1\r\n"
                         "\r\n".encode())
    assert reply.startswith(b"HTTP/1.1 400 Bad Request\r\n") and b"malformed" in reply
    assert after.startswith(b"HTTP/1.0 200") and after.endswith(b"hello from the stand-in\n")
    assert [r.verdict for r in proxy.log] == ["malformed", "allowed"]
    assert stand_in.seen and all(path == "/hello.txt" for path, _ in stand_in.seen)


def test_plain_http_goes_to_the_uri_host_with_its_host_header_rewritten(stand_in):
    with EgressProxy([f"127.0.0.1:{stand_in.port}"]) as proxy:
        reply = exchange(proxy, (
            f"GET http://127.0.0.1:{stand_in.port}/hello.txt?x=1 HTTP/1.1\r\n"
            "Host: other-site.example\r\nProxy-Connection: keep-alive\r\n"
            "Proxy-Authorization: Basic eDp5\r\nUser-Agent: test\r\n\r\n").encode())
        post = exchange(proxy, f"POST http://127.0.0.1:{stand_in.port}/hello.txt HTTP/1.1\r\n"
                        "Content-Length: 0\r\n\r\n".encode())
    assert reply.endswith(b"hello from the stand-in\n")
    [(path, headers)] = stand_in.seen
    assert path == "/hello.txt?x=1"
    assert headers["Host"] == f"127.0.0.1:{stand_in.port}" and headers["User-Agent"] == "test"
    assert headers["Connection"] == "close"
    assert not {"Proxy-Connection", "Proxy-Authorization"} & set(headers)
    assert post.startswith(b"HTTP/1.1 403") and b"POST is not carried" in post
    assert [(r.method, r.verdict) for r in proxy.log] == [("GET", "allowed"), ("POST", "refused")]


def test_an_allowed_host_that_does_not_answer_is_502_and_logged_failed():
    with socket.create_server(("127.0.0.1", 0)) as closed:
        port = closed.getsockname()[1]
    with EgressProxy([f"127.0.0.1:{port}"]) as proxy:
        reply = exchange(proxy, f"CONNECT 127.0.0.1:{port} HTTP/1.1\r\n\r\n".encode())
    assert reply.startswith(b"HTTP/1.1 502 Bad Gateway")
    assert [(r.port, r.verdict) for r in proxy.log] == [(port, "failed")]


def test_allow_list_entries_hand_cases():
    proxy = EgressProxy(["PyPI.org", "127.0.0.1:8080", "mirror.example.:8443", "[::1]:9000"])
    assert proxy.allows("pypi.org", 443) and proxy.allows("PYPI.ORG.", 80)
    assert not proxy.allows("pypi.org", 8080) and not proxy.allows("files.pythonhosted.org", 443)
    assert proxy.allows("127.0.0.1", 8080) and not proxy.allows("127.0.0.1", 80)
    assert proxy.allows("mirror.example", 8443) and not proxy.allows("mirror.example", 443)
    assert proxy.allows("::1", 9000) and not proxy.allows("sub.pypi.org", 443)
    assert {h for h, _ in EgressProxy().allow} == set(DEFAULT_ALLOWED)
    for bad in ("a b", "pypi.org:0", "pypi.org:x", "[zz]:1", ""):
        with pytest.raises(SandboxError, match="bad egress allow-list entry"):
            EgressProxy([bad])


def test_the_user_configures_the_allow_list_by_environment(monkeypatch):
    monkeypatch.delenv(ALLOW_ENV, raising=False)
    assert configured_allow_list() == DEFAULT_ALLOWED
    monkeypatch.setenv(ALLOW_ENV, " mirror.example:8443, pypi.org ,")
    assert configured_allow_list() == ("mirror.example:8443", "pypi.org")
    monkeypatch.setenv(ALLOW_ENV, "pypi.org,a b")
    with pytest.raises(SandboxError, match=f"{ALLOW_ENV}: bad entry 'a b'"):
        configured_allow_list()


def test_network_policy_names_are_checked():
    assert check_network_policy("none") == "none"
    with pytest.raises(SandboxError, match="did you mean 'registries'"):
        check_network_policy("registry")
    with pytest.raises(SandboxError, match="needs an egress proxy"):
        check_network_policy("registries")


def test_the_socket_is_open_to_any_uid_inside_a_private_folder():
    proxy = EgressProxy().start()
    private = proxy.socket_dir.parent
    try:
        assert stat.S_IMODE(private.stat().st_mode) == 0o700
        assert stat.S_IMODE(proxy.socket_dir.stat().st_mode) == 0o755
        assert stat.S_ISSOCK(proxy.socket_path.stat().st_mode)
        assert stat.S_IMODE(proxy.socket_path.stat().st_mode) == 0o777
        apt = (proxy.socket_dir / "apt.conf").read_text()
        assert f'Acquire::http::Proxy "http://127.0.0.1:{EGRESS_PORT}/";' in apt
    finally:
        proxy.stop()
    assert not private.exists()
    with pytest.raises(SandboxError, match="not started"):
        proxy.socket_dir


_AS_OTHER_UID = """
import socket, sys
client = socket.socket(socket.AF_UNIX)
try:
    client.connect(sys.argv[1])
    print("connected")
except PermissionError:
    print("no access")
"""


def test_another_host_uid_cannot_reach_the_socket():
    python = shutil.which("python3", path="/usr/bin:/bin")  # one any uid can run
    if os.geteuid() != 0 or python is None:
        pytest.skip("needs root and a system python3 to run a probe as another uid")
    with EgressProxy() as proxy:
        probes = [subprocess.run([python, "-I", "-c", _AS_OTHER_UID, str(proxy.socket_path)],
                                 user=uid, group=uid, capture_output=True, text=True, timeout=30)
                  for uid in (0, 65534)]
    assert [p.stdout for p in probes] == ["connected\n", "no access\n"], probes


def test_stop_ends_open_tunnels_and_refuses_new_clients(echo_port):
    proxy = EgressProxy([f"127.0.0.1:{echo_port}"]).start()
    client = socket.socket(socket.AF_UNIX)
    client.settimeout(10)
    client.connect(str(proxy.socket_path))
    client.sendall(f"CONNECT 127.0.0.1:{echo_port} HTTP/1.1\r\n\r\n".encode())
    assert client.recv(4096).startswith(b"HTTP/1.1 200")
    path = proxy.socket_path
    started = time.perf_counter()
    proxy.stop()
    assert time.perf_counter() - started < 5
    assert client.recv(4096) == b""  # the tunnel was closed
    client.close()
    with socket.socket(socket.AF_UNIX) as late, pytest.raises(OSError):
        late.connect(str(path))
    proxy.stop()  # idempotent


def test_egress_env_and_prologue_point_at_the_forwarder():
    env = egress_env(4000)
    assert env["HTTPS_PROXY"] == env["http_proxy"] == env["ALL_PROXY"] == "http://127.0.0.1:4000"
    assert "127.0.0.1" in env["no_proxy"] and env["APT_CONFIG"] == f"{EGRESS_DIR}/apt.conf"
    prologue = egress_prologue(4000, "/run/x y.sock")
    assert "\n" not in prologue and prologue.endswith("; ")  # line numbers stay
    # bash reads back exactly the forwarder's script and the arguments
    shown = subprocess.run(["bash", "-c", prologue.replace("/usr/bin/python3 -I -c",
                                                           "printf '%s|' ") + "true"],
                           capture_output=True, text=True, timeout=30).stdout
    assert shown == f"{FORWARDER}|4000|/run/x y.sock|"


# ---- inside a sandbox -------------------------------------------------------------------


def probe_wheel() -> tuple[str, bytes]:
    """A minimal pure-Python wheel ``egress_probe-0.1``, written by hand."""
    files = {"egress_probe/__init__.py": b"VALUE = 1\n",
             "egress_probe-0.1.dist-info/METADATA":
                 b"Metadata-Version: 2.1\nName: egress-probe\nVersion: 0.1\n",
             "egress_probe-0.1.dist-info/WHEEL":
                 b"Wheel-Version: 1.0\nGenerator: hand\nRoot-Is-Purelib: true\nTag: py3-none-any\n"}
    def digest(data: bytes) -> str:
        return base64.urlsafe_b64encode(hashlib.sha256(data).digest()).decode().rstrip("=")

    record = "".join(f"{name},sha256={digest(data)},{len(data)}\n" for name, data in files.items())
    record += "egress_probe-0.1.dist-info/RECORD,,\n"
    files["egress_probe-0.1.dist-info/RECORD"] = record.encode()
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    return "egress_probe-0.1-py3-none-any.whl", buffer.getvalue()


@pytest.fixture(scope="module")
def pip_rootfs() -> Path:
    """The base rootfs plus Debian's pip (the base has python3 but no pip)."""
    reason = sandbox_available()
    if reason is not None:
        pytest.skip(f"sandbox unavailable: {reason}")
    return build_rootfs(BASE_RECIPE.extend("egress-test", packages=("python3-pip",)))


@pytest.fixture
def index(tmp_path) -> Iterator[tuple[StandIn, bytes]]:
    """A stand-in PyPI "simple" index on 127.0.0.1 holding the probe wheel."""
    name, wheel = probe_wheel()
    (tmp_path / "index" / "files").mkdir(parents=True)
    (tmp_path / "index" / "files" / name).write_bytes(wheel)
    (tmp_path / "index" / "simple" / "egress-probe").mkdir(parents=True)
    (tmp_path / "index" / "simple" / "egress-probe" / "index.html").write_text(
        f'<html><body><a href="/files/{name}#sha256={hashlib.sha256(wheel).hexdigest()}">'
        f"{name}</a></body></html>\n")
    server = StandIn(tmp_path / "index")
    yield server, wheel
    server.close()


_FETCH = """
import sys, urllib.error, urllib.request
try:
    print(urllib.request.urlopen(sys.argv[1], timeout=20).read().decode())
except urllib.error.HTTPError as exc:
    print(exc.code, exc.read().decode().strip())
"""
_DIRECT = """
import socket, sys
try:
    socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=5)
    print("connected")
except OSError as exc:
    print(type(exc).__name__)
"""
_NO_BYPASS = {"no_proxy": "", "NO_PROXY": ""}  # the stand-ins are on loopback, as is no_proxy


def test_pip_downloads_from_an_allowed_index_and_nothing_else_is_reached(
        pip_rootfs, index, unlisted):
    server, wheel = index
    with EgressProxy([f"127.0.0.1:{server.port}"]) as proxy, \
            Sandbox(pip_rootfs, network="registries", egress=proxy) as box:
        box.write_file("/tmp/fetch.py", _FETCH)
        box.write_file("/tmp/direct.py", _DIRECT)
        pip = box.run(f"python3 -m pip download --no-cache-dir --disable-pip-version-check "
                      f"--index-url http://127.0.0.1:{server.port}/simple/ -d /work/dl "
                      "egress-probe", env=_NO_BYPASS)
        refused = box.run(f"python3 /tmp/fetch.py http://127.0.0.1:{unlisted.port}/secret.txt",
                          env=_NO_BYPASS)
        direct = box.run(f"python3 /tmp/direct.py {server.port}")
        downloaded = box.read_file("/work/dl/egress_probe-0.1-py3-none-any.whl")
        again = box.run(f"python3 /tmp/fetch.py http://127.0.0.1:{server.port}/simple/"
                        "egress-probe/; echo $LINENO", env=_NO_BYPASS)
        assert_no_agent_processes(box)  # each forwarder ended with its command
        log = proxy.drain_log()
    assert pip.exit_code == 0, pip.output
    assert downloaded == wheel
    assert refused.exit_code == 0
    assert refused.output.startswith(f"403 127.0.0.1:{unlisted.port} is not on the egress "
                                     "allow-list")
    assert unlisted.seen == []
    assert direct.output == "ConnectionRefusedError\n", direct  # its own loopback: nothing
    assert again.exit_code == 0 and "egress_probe-0.1" in again.output  # a second forwarder
    assert again.output.endswith("\n2\n")  # the line after the limits, as without egress
    assert ("GET", "127.0.0.1", unlisted.port, "refused") in [
        (r.method, r.host, r.port, r.verdict) for r in log]
    allowed = {r.port for r in log if r.verdict == "allowed"}
    assert allowed == {server.port}
    assert {path for path, _ in server.seen} >= {"/simple/egress-probe/",
                                                 "/files/egress_probe-0.1-py3-none-any.whl"}


def test_network_none_has_no_proxy_socket_or_variables(pip_rootfs):
    with EgressProxy() as proxy, Sandbox(pip_rootfs, egress=proxy) as box:
        result = box.run(f"ls {EGRESS_DIR} 2>&1; echo \"[${{HTTPS_PROXY:-unset}}]\"; "
                         f"python3 -c 'import socket; socket.create_connection((\"127.0.0.1\", "
                         f"{EGRESS_PORT}))' 2>&1 | tail -1; echo $LINENO")
    lines = result.output.splitlines()
    assert "No such file or directory" in lines[0]
    assert lines[1] == "[unset]" and "ConnectionRefusedError" in lines[2] and lines[3] == "2"
    assert proxy.log == ()


def test_sandbox_network_arguments_are_checked(pip_rootfs):
    with pytest.raises(SandboxError, match="did you mean 'registries'"):
        Sandbox(pip_rootfs, network="registry")
    with pytest.raises(SandboxError, match="needs an egress proxy"):
        Sandbox(pip_rootfs, network="registries")
