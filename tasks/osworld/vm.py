"""A stand-in for the OSWorld VM that the official getters talk to, backed by a `Sandbox`.

The official getters take an ``env`` with ``cache_dir``, ``vm_ip``, ``server_port``,
``vm_platform`` and a ``controller`` (``get_file``, ``execute_python_command``). The VM's
HTTP server (``POST /execute`` -> ``{"output", "error", "returncode"}``) is served here on
127.0.0.1 by a small HTTP server whose commands run inside the episode's sandbox, as the
task's user, so ``get_vm_command_line`` runs unchanged. Everything here lives on the host:
the cache directory (where getters put expected values) is never visible in the sandbox.
"""

from __future__ import annotations

import json
import logging
import shlex
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)

USER_HOME = "/home/user"
"""The VM user's home; task paths (``/home/user/Desktop/...``) and ``~`` point here."""

USER_ENV = {"HOME": USER_HOME, "USER": "user", "LOGNAME": "user",
            "GSETTINGS_BACKEND": "keyfile", "XDG_CONFIG_HOME": f"{USER_HOME}/.config"}
"""Environment of every command run as the task's user (``gsettings`` writes a key file)."""


@dataclass(frozen=True)
class ExecResult:
    """One command's separate stdout and stderr, as the VM server returns them."""

    output: str
    error: str
    returncode: int | None


def shell_line(command: Any, shell: bool) -> str:
    """The bash line that runs `command` as upstream's server does: a string with ``shell``
    through the shell; otherwise an argv (a string is split with `shlex`), ``~/`` expanded."""
    if shell and isinstance(command, str):
        return command
    argv = shlex.split(command) if isinstance(command, str) else [str(a) for a in command]
    argv = [USER_HOME + a[1:] if a.startswith("~/") else a for a in argv]
    return shlex.join(argv)


def run_as_user(sandbox: Any, command: Any, shell: bool, timeout_s: float = 120.0) -> ExecResult:
    """Run `command` in `sandbox` as the task's user; stdout and stderr kept apart."""
    line = shell_line(command, shell)
    script = (f"( {line}\n) >/tmp/.osworld-out 2>/tmp/.osworld-err </dev/null; "
              f"code=$?; cat /tmp/.osworld-out; printf '\\0%s\\0' $code; cat /tmp/.osworld-err; "
              f"rm -f /tmp/.osworld-out /tmp/.osworld-err")
    result = sandbox.run(script, timeout_s=timeout_s, cwd=USER_HOME, env=USER_ENV)
    out, _, rest = result.output.partition("\0")
    code, _, err = rest.partition("\0")
    return ExecResult(out, err, int(code) if code.strip().lstrip("-").isdigit() else None)


class _Controller:
    """The parts of upstream's ``PythonController`` the file/config getters call."""

    def __init__(self, sandbox: Any):
        self.sandbox = sandbox

    def get_file(self, path: str) -> bytes | None:
        probe = self.sandbox.run(f"test -f {shlex.quote(path)}", user="root", cwd="/")
        if probe.exit_code != 0:
            return None
        return self.sandbox.read_file(path)

    def execute_python_command(self, command: str) -> dict[str, Any]:
        result = run_as_user(self.sandbox, ["python3", "-c", command], shell=False)
        return {"status": "success", "output": result.output, "error": result.error,
                "returncode": result.returncode}

    def get_terminal_output(self) -> None:
        return None  # no terminal window on a headless machine


class _ExecuteHandler(BaseHTTPRequestHandler):
    sandbox: Any = None

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        length = int(self.headers.get("Content-Length", "0"))
        payload = json.loads(self.rfile.read(length) or b"{}")
        if self.path != "/execute":
            self.send_error(404)
            return
        result = run_as_user(self.sandbox, payload.get("command", ""),
                             bool(payload.get("shell", False)))
        body = json.dumps({"status": "success", "output": result.output, "error": result.error,
                           "returncode": result.returncode}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        logger.debug("vm server: " + format, *args)


class SandboxVM:
    """The ``env`` object official getters receive (a context manager: starts the server)."""

    vm_platform = "Linux"
    vm_ip = "127.0.0.1"

    def __init__(self, sandbox: Any, cache_dir: Path):
        self.sandbox = sandbox
        self.cache_dir = str(cache_dir)
        self.controller = _Controller(sandbox)
        handler = type("Handler", (_ExecuteHandler,), {"sandbox": sandbox})
        self._server = HTTPServer(("127.0.0.1", 0), handler)
        self.server_port = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self) -> "SandboxVM":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def environment(self) -> Mapping[str, str]:
        return USER_ENV
