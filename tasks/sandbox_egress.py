"""Registry-only egress for sandboxes: an allow-listing HTTP proxy on a Unix socket.

A sandbox command has a network namespace of its own with nothing but loopback. A task whose
network policy is ``registries`` reaches package registries through two pieces:

- `EgressProxy`, on the host: an HTTP proxy listening on a Unix socket in a private
  directory (a sandbox root of `tasks.sandbox_gc`, removed after a crash). It serves ``CONNECT host:port`` (a tunnel: HTTPS) and absolute-URI requests
  (``GET http://host:port/path``: pip with a plain-http index, apt) and permits only the
  hosts of its allow-list (by default the Python package index and Debian's archive). Every
  other destination gets ``403`` with the reason, before anything is resolved or connected.
  Every request, allowed or refused, is logged as an `EgressRecord` (`log`, `drain_log`), so
  the episode can store what its sandbox tried to reach.
- a forwarder inside the sandbox (`FORWARDER`, a python3 script run with the rootfs's own
  interpreter): it listens on the sandbox's ``127.0.0.1:<port>`` and copies each connection
  byte for byte to the proxy's socket, which is bound read-only at `EGRESS_DIR`. Every command
  gets a fresh network namespace, so `egress_prologue` starts the forwarder at the start of
  each command; it lives in the command's pid namespace and dies with it. `egress_env` points
  the usual proxy variables (pip, uv, curl, Python's urllib) and apt (``APT_CONFIG``, a file
  the proxy writes into its socket directory) at it.

A bare host in the allow-list permits ports 80 and 443; ``host:port`` permits that port only.
Names are matched exactly (case-insensitive, no wildcards). An allowed plain-http request is
sent to the host named in its URI with the ``Host`` header rewritten to match, so a request
cannot be routed to another site by its header; inside a CONNECT tunnel (TLS) the proxy sees
only the destination it connects to.
"""

from __future__ import annotations

import difflib
import logging
import os
import re
import selectors
import shlex
import shutil
import socket
import socketserver
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from tasks.sandbox_gc import make_sandbox_root
from tasks.sandbox_rootfs import SandboxError

__all__ = ["DEFAULT_ALLOWED", "EGRESS_DIR", "EGRESS_PORT", "EGRESS_SOCKET", "FORWARDER",
           "NETWORK_POLICIES", "ALLOW_ENV", "EgressProxy", "EgressRecord",
           "check_network_policy", "configured_allow_list", "egress_env", "egress_prologue"]

logger = logging.getLogger(__name__)

NETWORK_POLICIES = ("none", "registries")
"""``none``: loopback only. ``registries``: loopback plus the allow-listed hosts via the proxy."""
DEFAULT_ALLOWED = ("pypi.org", "files.pythonhosted.org", "deb.debian.org",
                   "security.debian.org")
"""The Python package index (index and files) and Debian's archive."""
ALLOW_ENV = "HARNESS_EGRESS_ALLOW"
"""Comma-separated ``host`` or ``host:port`` entries replacing `DEFAULT_ALLOWED` (e.g. a
company's package mirror)."""
EGRESS_DIR = "/run/harness-egress"
"""Where the proxy's socket directory is bound (read-only) inside the sandbox."""
EGRESS_SOCKET = f"{EGRESS_DIR}/proxy.sock"
EGRESS_PORT = 3128
"""The forwarder's port on the sandbox's loopback."""
_SOCKET_NAME, _APT_NAME = "proxy.sock", "apt.conf"
_HEAD_LIMIT = 64 << 10
_HOST = re.compile(r"^[A-Za-z0-9_]([A-Za-z0-9_.-]{0,252})$")


@dataclass(frozen=True)
class EgressRecord:
    """One request the proxy answered. `verdict`: ``allowed`` (connected), ``refused`` (not on
    the allow-list, or a method the plain-http form does not carry), ``failed`` (allowed but
    the destination could not be reached) or ``malformed`` (no destination could be read)."""

    time: float
    """Unix time the proxy began reading the request."""
    method: str
    host: str
    port: int
    verdict: str
    reason: str = ""


def check_network_policy(policy: str, proxy: "EgressProxy | None" = None) -> str:
    """`policy` if it is a known network policy usable with `proxy`, else `SandboxError`."""
    if policy not in NETWORK_POLICIES:
        close = difflib.get_close_matches(policy, NETWORK_POLICIES, n=1, cutoff=0.4)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise SandboxError(f"unknown network policy {policy!r}{hint} (known: "
                           f"{', '.join(NETWORK_POLICIES)})")
    if policy == "registries" and proxy is None:
        raise SandboxError("network='registries' needs an egress proxy: pass "
                           "egress=EgressProxy(...).start() (tasks.sandbox_egress)")
    return policy


def _authority(text: str, default_port: int | None) -> tuple[str, int | None]:
    """(host, port) of ``host``, ``host:port`` or ``[v6]:port``; ValueError if malformed."""
    if text.startswith("["):
        host, _, rest = text[1:].partition("]")
        port_text = rest[1:] if rest.startswith(":") else ("" if not rest else "x")
        try:
            socket.inet_pton(socket.AF_INET6, host)
        except OSError:
            raise ValueError(f"not an IPv6 address: {host!r}") from None
    else:
        host, _, port_text = text.rpartition(":") if ":" in text else (text, "", "")
        if not _HOST.match(host):
            raise ValueError(f"not a host name: {host!r}")
    if port_text == "":
        return host.lower().rstrip("."), default_port
    if not port_text.isdigit() or not 0 < int(port_text) < 65536:
        raise ValueError(f"not a port: {port_text!r}")
    return host.lower().rstrip("."), int(port_text)


def configured_allow_list() -> tuple[str, ...]:
    """The hosts ``registries`` sandboxes may reach: `ALLOW_ENV` when set, else
    `DEFAULT_ALLOWED`. A malformed entry is a `SandboxError` naming it."""
    text = os.environ.get(ALLOW_ENV, "").strip()
    if not text:
        return DEFAULT_ALLOWED
    entries = tuple(entry.strip() for entry in text.split(",") if entry.strip())
    for entry in entries:
        try:
            _authority(entry, None)
        except ValueError as exc:
            raise SandboxError(f"{ALLOW_ENV}: bad entry {entry!r}: {exc}") from None
    return entries


class EgressProxy:
    """The allow-listing proxy (see the module docstring). Use as a context manager, or call
    `start()` and `stop()`; `socket_dir` is what a sandbox binds at `EGRESS_DIR`.

    `allow`: host names or ``host:port`` entries. `forward_port`: the forwarder's port inside
    the sandbox (written into the apt configuration). Thread-safe.
    """

    def __init__(self, allow: Iterable[str] = DEFAULT_ALLOWED, *,
                 forward_port: int = EGRESS_PORT, connect_timeout_s: float = 30.0,
                 idle_timeout_s: float = 300.0, max_connections: int = 64):
        try:
            self.allow = tuple(sorted({_authority(entry.strip(), None) for entry in allow},
                                      key=lambda p: (p[0], p[1] or 0)))
        except ValueError as exc:
            raise SandboxError(f"bad egress allow-list entry: {exc}") from None
        self.forward_port = forward_port
        self.connect_timeout_s, self.idle_timeout_s = connect_timeout_s, idle_timeout_s
        self.max_connections = max_connections
        self._lock = threading.Lock()
        self._log: list[EgressRecord] = []
        self._open: set[socket.socket] = set()
        self._closing = False
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self._private: Path | None = None

    # ---- lifecycle --------------------------------------------------------------------------
    @property
    def socket_dir(self) -> Path:
        """The directory holding the socket, which a sandbox binds at `EGRESS_DIR`."""
        if self._private is None:
            raise SandboxError("the egress proxy is not started")
        return self._private / "sock"

    @property
    def socket_path(self) -> Path:
        return self.socket_dir / _SOCKET_NAME

    def start(self) -> "EgressProxy":
        """Create the directories, write the apt configuration, listen, serve.

        The private directory is ``0700``: no other host user reaches the socket (a sandbox
        gets it through a bind made by root). Inside it the socket directory (``0755``) and
        the socket (``0777``) are open to every uid, since a sandbox's processes run as
        unprivileged host uids that own nothing here.
        """
        if self._server is not None:
            return self
        self._closing = False
        # A root with an owner record (tasks.sandbox_gc): if this process dies without
        # stopping the proxy, the next harness command removes the folder.
        private = make_sandbox_root(0)
        sock_dir = private / "sock"
        try:
            private.chmod(0o700)
            sock_dir.mkdir()
            sock_dir.chmod(0o755)
            apt = (f'Acquire::http::Proxy "http://127.0.0.1:{self.forward_port}/";\n'
                   f'Acquire::https::Proxy "http://127.0.0.1:{self.forward_port}/";\n')
            (sock_dir / _APT_NAME).write_text(apt)
            (sock_dir / _APT_NAME).chmod(0o644)
            server = _Server(str(sock_dir / _SOCKET_NAME), self)
            (sock_dir / _SOCKET_NAME).chmod(0o777)  # connecting needs write permission
        except BaseException:
            shutil.rmtree(private, ignore_errors=True)
            raise
        self._private, self._server = private, server
        self._thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05},
                                        name="egress-proxy", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop accepting, close every open connection, wait for the handlers, remove the
        directory. Idempotent."""
        server, self._server = self._server, None
        if server is not None:
            server.shutdown()
            with self._lock:
                self._closing = True
                for sock in self._open:
                    _close(sock, shutdown=True)
            server.server_close()  # joins the handler threads
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        if self._private is not None:
            shutil.rmtree(self._private, ignore_errors=True)
            self._private = None

    def __enter__(self) -> "EgressProxy":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ---- policy and log ---------------------------------------------------------------------
    def allows(self, host: str, port: int) -> bool:
        """Whether `host`:`port` is on the allow-list (a bare host: ports 80 and 443)."""
        host = host.lower().rstrip(".")
        return any(host == h and (port == p if p is not None else port in (80, 443))
                   for h, p in self.allow)

    @property
    def log(self) -> tuple[EgressRecord, ...]:
        """Every request since the start (or the last `drain_log`), oldest first."""
        with self._lock:
            return tuple(self._log)

    def drain_log(self) -> list[EgressRecord]:
        """The log so far, which is then emptied (an episode stores what it drains)."""
        with self._lock:
            drained, self._log = self._log, []
        return drained

    def _record(self, record: EgressRecord) -> None:
        logger.debug("egress %s %s:%s %s %s", record.method, record.host, record.port,
                     record.verdict, record.reason)
        with self._lock:
            self._log.append(record)

    def _track(self, sock: socket.socket, add: bool) -> bool:
        """Add (False when full or stopping) or forget an open socket, so `stop` can close
        it. Each connection holds two: the client's and upstream's."""
        with self._lock:
            if not add:
                self._open.discard(sock)
                return True
            if self._closing or len(self._open) >= 2 * self.max_connections:
                return False
            self._open.add(sock)
            return True


class _Server(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = False
    block_on_close = True

    def __init__(self, path: str, proxy: EgressProxy):
        self.proxy = proxy
        super().__init__(path, _Handler)


class _Handler(socketserver.BaseRequestHandler):
    """One client connection: read the request head, decide, tunnel or forward, close."""

    server: _Server

    def handle(self) -> None:
        proxy, client = self.server.proxy, self.request
        if not proxy._track(client, True):
            _reply(client, 503, "the egress proxy is full or stopping")
            return
        try:
            self._serve(proxy, client)
        except OSError as exc:  # the client went away: nothing to answer
            logger.debug("egress connection ended: %s", exc)
        finally:
            proxy._track(client, False)

    def _serve(self, proxy: EgressProxy, client: socket.socket) -> None:
        now = time.time()
        client.settimeout(proxy.connect_timeout_s)
        head, rest, complete = _read_head(client)
        try:
            if not complete:
                raise ValueError("no complete request head")
            method, host, port, request = _parse(head)
        except ValueError as exc:
            proxy._record(EgressRecord(now, _first_word(head), "", 0, "malformed", str(exc)))
            _reply(client, 400, f"malformed proxy request: {exc}")
            return
        if not proxy.allows(host, port):
            reason = f"{host}:{port} is not on the egress allow-list"
            proxy._record(EgressRecord(now, method, host, port, "refused", reason))
            _reply(client, 403, reason)
            return
        if request is not None and method not in ("GET", "HEAD"):
            reason = f"{method} is not carried by the registry proxy (GET and HEAD only)"
            proxy._record(EgressRecord(now, method, host, port, "refused", reason))
            _reply(client, 403, reason)
            return
        try:
            upstream = socket.create_connection((host, port), timeout=proxy.connect_timeout_s)
        except OSError as exc:
            proxy._record(EgressRecord(now, method, host, port, "failed", str(exc)))
            _reply(client, 502, f"cannot reach {host}:{port}: {exc}")
            return
        proxy._record(EgressRecord(now, method, host, port, "allowed"))
        if not proxy._track(upstream, True):
            _close(upstream)
            _reply(client, 503, "the egress proxy is full or stopping")
            return
        try:
            if request is None:
                client.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
                first = rest
            else:
                first = request + rest
            if first:
                upstream.sendall(first)
            _pipe(client, upstream, proxy.idle_timeout_s, tunnel=request is None)
        finally:
            proxy._track(upstream, False)
            _close(upstream)


def _read_head(client: socket.socket) -> tuple[bytes, bytes, bool]:
    """The request head (up to the blank line), whatever followed it, and whether the blank
    line came (within `_HEAD_LIMIT` bytes, before the client stopped sending or timed out)."""
    data = b""
    while b"\r\n\r\n" not in data and len(data) < _HEAD_LIMIT:
        try:
            chunk = client.recv(8192)
        except TimeoutError:
            break
        if not chunk:
            break
        data += chunk
    head, found, rest = data.partition(b"\r\n\r\n")
    return (head, rest, True) if found and len(head) < _HEAD_LIMIT else (data, b"", False)


def _first_word(head: bytes) -> str:
    word = head.split(b" ", 1)[0][:16].decode("ascii", "replace")
    return word if word.isalpha() else ""


def _parse(head: bytes) -> tuple[str, str, int, bytes | None]:
    """(method, host, port, request to send upstream or None for a tunnel) of a proxy
    request head; ValueError says what is wrong."""
    lines = head.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ")
    if len(parts) != 3 or not parts[2].startswith("HTTP/1.") or not parts[0].isalpha():
        raise ValueError(f"bad request line {lines[0][:80]!r}")
    method, target, version = parts[0].upper(), parts[1], parts[2]
    if method == "CONNECT":
        host, port = _authority(target, None)
        if port is None:
            raise ValueError("CONNECT needs host:port")
        return method, host, port, None
    url = urlsplit(target)
    if url.scheme != "http" or not url.netloc or "@" in url.netloc:
        raise ValueError(f"expected CONNECT or an absolute http:// URI, got {target[:80]!r}")
    host, port = _authority(url.netloc, 80)
    assert port is not None
    path = (url.path or "/") + (f"?{url.query}" if url.query else "")
    headers = [line for line in lines[1:] if line and line.split(":", 1)[0].strip().lower()
               not in ("host", "connection", "keep-alive", "proxy-connection",
                       "proxy-authorization")]
    authority = url.netloc.lower()
    request = "\r\n".join([f"{method} {path} {version}", f"Host: {authority}", *headers,
                           "Connection: close", "", ""])
    return method, host, port, request.encode("latin-1")


def _pipe(client: socket.socket, upstream: socket.socket, idle_s: float, tunnel: bool) -> None:
    """Copy bytes both ways. A tunnel ends when both sides have ended (each end is passed on
    as a half-close); a plain-http exchange ends when upstream ends (its reply is complete:
    the request said ``Connection: close``). Either ends after `idle_s` without traffic."""
    other = {client: upstream, upstream: client}
    for sock in other:
        sock.settimeout(idle_s)
    open_readers = set(other)
    with selectors.DefaultSelector() as selector:
        for sock in other:
            selector.register(sock, selectors.EVENT_READ)
        while open_readers:
            events = selector.select(timeout=idle_s)
            if not events:
                return
            for key, _ in events:
                source: socket.socket = key.fileobj  # type: ignore[assignment]
                data = source.recv(65536)  # readable: does not block
                if data:
                    other[source].sendall(data)
                    continue
                if source is upstream and not tunnel:
                    return
                selector.unregister(source)
                open_readers.discard(source)
                other[source].shutdown(socket.SHUT_WR)


def _reply(client: socket.socket, status: int, reason: str) -> None:
    titles = {400: "Bad Request", 403: "Forbidden", 502: "Bad Gateway",
              503: "Service Unavailable"}
    body = (reason + "\n").encode()
    head = (f"HTTP/1.1 {status} {titles[status]}\r\nContent-Type: text/plain; charset=utf-8\r\n"
            f"Content-Length: {len(body)}\r\nX-Harness-Egress: refused\r\n"
            "Connection: close\r\n\r\n").encode()
    try:
        client.sendall(head + body)
    except OSError:
        pass


def _close(sock: socket.socket, shutdown: bool = False) -> None:
    try:
        if shutdown:
            sock.shutdown(socket.SHUT_RDWR)
        else:
            sock.close()
    except OSError:
        pass


# ---- the in-sandbox side ------------------------------------------------------------------
FORWARDER = """\
import os, socket, sys, threading
port, path = int(sys.argv[1]), sys.argv[2]
server = socket.socket()
server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
server.bind(("127.0.0.1", port))
server.listen(64)
if os.fork():
    os._exit(0)
null = os.open(os.devnull, os.O_RDWR)
for fd in (0, 1, 2):
    os.dup2(null, fd)
def pump(source, target):
    try:
        while True:
            data = source.recv(65536)
            if not data:
                break
            target.sendall(data)
    except OSError:
        pass
    try:
        target.shutdown(socket.SHUT_WR)
    except OSError:
        pass
def serve(client):
    upstream = socket.socket(socket.AF_UNIX)
    try:
        upstream.connect(path)
    except OSError:
        client.close()
        upstream.close()
        return
    back = threading.Thread(target=pump, args=(upstream, client), daemon=True)
    back.start()
    pump(client, upstream)
    back.join()
    client.close()
    upstream.close()
while True:
    client, _ = server.accept()
    threading.Thread(target=serve, args=(client,), daemon=True).start()
"""
"""Listens on 127.0.0.1:argv[1], forks into the background once listening (so the command
that started it returns only then), and copies each connection to the Unix socket argv[2]."""


def egress_prologue(port: int = EGRESS_PORT, socket_path_inside: str = EGRESS_SOCKET) -> str:
    """Shell (bash) text to put before a command: start the forwarder with the rootfs's own
    python3 (isolated mode, so the task's PYTHON* variables do not reach it), or end the
    command with status 125 and a message. It is one line ending in ``; `` (the script in
    ANSI-C quotes), so the command's line numbers (``$LINENO``, bash's messages) stay."""
    script = FORWARDER.replace("\\", "\\\\").replace("'", "\\'").replace("\n", "\\n")
    return (f"/usr/bin/python3 -I -c $'{script}' {port} {shlex.quote(socket_path_inside)} || "
            "{ echo 'harness: the egress forwarder did not start' >&2; exit 125; }; ")


def egress_env(port: int = EGRESS_PORT) -> dict[str, str]:
    """The proxy variables for a command (pip, uv, curl, git, Python's urllib read them) and
    ``APT_CONFIG``: apt reads the file the proxy wrote into its socket directory
    (``Acquire::http::Proxy`` and ``Acquire::https::Proxy``), besides its own configuration.
    Loopback destinations bypass the proxy (``no_proxy``)."""
    url = f"http://127.0.0.1:{port}"
    env = {name: url for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy",
                                  "https_proxy", "all_proxy")}
    bypass = "localhost,127.0.0.1,::1"
    return {**env, "no_proxy": bypass, "NO_PROXY": bypass,
            "APT_CONFIG": f"{EGRESS_DIR}/{_APT_NAME}"}
