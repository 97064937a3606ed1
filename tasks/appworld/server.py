"""The API server of ``appworld-lite``: the world's database stays on the host.

AppWorld runs agent code in one process and serves the apps from another, so code can only
change the world through the APIs. Here the apps run in the harness process behind a Unix
socket in a host directory that is bound into the sandbox; the agent's Python cells run in the
sandbox as the unprivileged user with a small client (`CLIENT_SOURCE`) whose ``apis`` object
turns ``apis.app.api(**kwargs)`` into one JSON request. Neither the database nor the task's
expectation is ever inside the sandbox.
"""

from __future__ import annotations

import json
import os
import socketserver
import sqlite3
import tempfile
import threading
from pathlib import Path
from typing import Any

import numpy as np

from tasks.appworld.apps import ApiError, Apps

SOCKET_DIR = "/run/appworld"
SOCKET_NAME = "apis.sock"
CLIENT_DIR = "/opt/appworld-lite"


class _Handler(socketserver.StreamRequestHandler):
    def handle(self) -> None:
        server: ApiServer = self.server.owner  # type: ignore[attr-defined]
        try:
            request = json.loads(self.rfile.readline())
            with server.lock:
                result = server.apps.call(str(request["app"]), str(request["api"]),
                                          dict(request.get("kwargs") or {}))
            reply = {"ok": True, "result": result}
        except ApiError as exc:
            reply = {"ok": False, "error": str(exc)}
        except (ValueError, KeyError, TypeError) as exc:
            reply = {"ok": False, "error": f"Bad request: {exc}"}
        self.wfile.write(json.dumps(reply, default=str).encode() + b"\n")


class ApiServer:
    """Serves `Apps` over a Unix socket in a fresh host directory (`socket_dir`)."""

    def __init__(self, db: sqlite3.Connection, now: str, rng: np.random.Generator):
        self.db, self.lock = db, threading.Lock()
        self.apps = Apps(db, now, rng)
        self.socket_dir = Path(tempfile.mkdtemp(prefix="appworld-lite-"))
        os.chmod(self.socket_dir, 0o755)
        path = self.socket_dir / SOCKET_NAME
        self._server = socketserver.ThreadingUnixStreamServer(str(path), _Handler)
        self._server.owner = self  # type: ignore[attr-defined]
        self._server.daemon_threads = True
        os.chmod(path, 0o777)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        for child in self.socket_dir.iterdir():
            child.unlink()
        self.socket_dir.rmdir()


CLIENT_SOURCE = r'''"""appworld-lite client: `apis.<app>.<api>(**kwargs)` over the API socket."""
import json
import socket

SOCKET = "/run/appworld/apis.sock"


class _Api:
    def __init__(self, app, api):
        self._app, self._api = app, api

    def __call__(self, **kwargs):
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
            conn.connect(SOCKET)
            conn.sendall(json.dumps({"app": self._app, "api": self._api,
                                     "kwargs": kwargs}).encode() + b"\n")
            data = b""
            while not data.endswith(b"\n"):
                chunk = conn.recv(65536)
                if not chunk:
                    break
                data += chunk
        reply = json.loads(data)
        if not reply["ok"]:
            raise Exception(reply["error"])
        return reply["result"]


class _App:
    def __init__(self, app):
        self._app = app

    def __getattr__(self, api):
        if api.startswith("_"):
            raise AttributeError(api)
        return _Api(self._app, api)


class _Apis:
    def __getattr__(self, app):
        if app.startswith("_"):
            raise AttributeError(app)
        return _App(app)


apis = _Apis()
'''

RUNNER_SOURCE = r'''"""Run one code cell with `apis`; keep definitions and picklable variables for the next."""
import ast
import os
import pickle
import sys
import traceback

sys.path.insert(0, "/opt/appworld-lite")
from client import apis  # noqa: E402

STATE = os.path.expanduser("~/.cells")
os.makedirs(STATE, exist_ok=True)
env = {"__name__": "__main__", "apis": apis}
if os.path.exists(f"{STATE}/defs.py"):
    exec(compile(open(f"{STATE}/defs.py").read(), "<previous cells>", "exec"), env)
if os.path.exists(f"{STATE}/vars.pkl"):
    env.update(pickle.load(open(f"{STATE}/vars.pkl", "rb")))
code = sys.stdin.read()
ok = True
try:
    exec(compile(code, "<cell>", "exec"), env)
except Exception:
    ok = False
    lines = traceback.format_exc().splitlines()
    print("Execution failed. Traceback:\n" + "\n".join(lines[-6:]))
if ok:
    defs = [n for n in ast.parse(code).body
            if isinstance(n, (ast.FunctionDef, ast.ClassDef, ast.Import, ast.ImportFrom))]
    with open(f"{STATE}/defs.py", "a") as f:
        f.write("\n".join(ast.unparse(n) for n in defs) + "\n")
keep = {}
for name, value in env.items():
    if name.startswith("__") or name == "apis" or callable(value) or \
            type(value).__name__ == "module":
        continue
    try:
        pickle.dumps(value)
        keep[name] = value
    except Exception:
        pass
pickle.dump(keep, open(f"{STATE}/vars.pkl", "wb"))
'''


def client_files() -> dict[str, str]:
    """Files written into the sandbox: the client and the cell runner (no world data)."""
    return {f"{CLIENT_DIR}/client.py": CLIENT_SOURCE, f"{CLIENT_DIR}/run_cell.py": RUNNER_SOURCE}


def call_direct(server: ApiServer, app: str, api: str, **kwargs: Any) -> Any:
    """An API call from the host (tests and graders), as the socket would make it."""
    with server.lock:
        return server.apps.call(app, api, kwargs)
