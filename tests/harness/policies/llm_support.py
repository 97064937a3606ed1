"""Shared helpers of the LLM backend and `harness serve` tests: tiny models made locally,
an in-thread uvicorn server, the `harness` CLI in a subprocess with the model backends and
`harness serve` wired in, and store queries."""

from __future__ import annotations

import os
import socket
import sqlite3
import subprocess
import sys
import threading
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

import numpy as np
import orjson

from harness.policies.base import EpisodeContext
from harness.policies.scaffold import Scaffold, TaggedScaffold
from harness.policies.tiny import TinyConfig, imprint, make_tiny_model
from tasks import get_suite

ROOT = Path(__file__).resolve().parents[3]

SMALL = TinyConfig(hidden=64, layers=2, heads=4, kv_heads=2, intermediate=128, context=4096)
"""A ~0.1M-parameter Qwen2 for the fixtures that are fine-tuned (imprinted)."""

IMPRINT_SCAFFOLD = TaggedScaffold("react", history=0)
"""The scaffold of the imprinted model's prompts (policy options ``format=react&history=0``;
a ReAct ``Action: MOVE`` line is learnt in a few dozen steps, <action> tags take longer)."""
IMPRINT_OPTIONS = "format=react&history=0"

BOOT = ("import sys, harness.cli as cli\n"
        "from harness.policies import register_model_backends\n"
        "register_model_backends()\n"
        "cli.COMMAND_MODULES = tuple(dict.fromkeys(cli.COMMAND_MODULES + ('harness.serve',)))\n"
        "sys.exit(cli.main(sys.argv[1:]))\n")
"""`harness` with the model backends and `harness serve` registered (until the lead wires
them into harness.policies and harness.cli.COMMAND_MODULES)."""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def subprocess_env() -> dict[str, str]:
    return {**os.environ, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1",
            "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}


def harness_command(*args: str) -> list[str]:
    return [sys.executable, "-c", BOOT, *args]


def frozenlake_prompts(n: int, scaffold: Scaffold) -> list[list[dict[str, str]]]:
    """Prompts of the first step of `n` frozenlake@1 test tasks (4x4 and 8x8 in turn), with
    their oracle moves."""
    from harness.episodes import balanced_prefix

    suite = get_suite("frozenlake@1")
    prompts = []
    for task in balanced_prefix(suite.tasks("test"), n):  # the tasks `harness run --tasks n` plays
        env = suite.make_env(task.id)
        obs, info = env.reset(seed=0)
        context = EpisodeContext(suite.id, task, suite.trivial_actions, env,
                                 np.random.default_rng(0), obs, info,
                                 instructions=suite.instructions)
        prompts.append((scaffold.messages(context), env.oracle_action()))
    return prompts


def make_imprinted_model(path: Path) -> Path:
    """A small Qwen2 fine-tuned (about 5 s of CPU) to answer frozenlake prompts (scaffold
    `IMPRINT_SCAFFOLD`) with ``Action: MOVE``, so that episodes contain parsed actions."""
    make_tiny_model(path, SMALL, seed=0)
    examples = [(messages, f"Action: {move}")
                for messages, move in frozenlake_prompts(2, IMPRINT_SCAFFOLD)]
    return imprint(path, examples, steps=60, lr=1e-2, seed=0)


def get_json(url: str, timeout: float = 5.0) -> Any:
    with urllib.request.urlopen(url, timeout=timeout) as response:
        return orjson.loads(response.read())


def wait_ready(port: int, process: subprocess.Popen | None = None, timeout: float = 120.0
               ) -> None:
    deadline = time.monotonic() + timeout
    while True:
        if process is not None and process.poll() is not None:
            raise RuntimeError(f"server exited with {process.returncode}: "
                               f"{process.stderr.read().decode()[-2000:]}")
        try:
            get_json(f"http://127.0.0.1:{port}/health", timeout=1.0)
            return
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


@contextmanager
def serve_subprocess(*args: str, port: int) -> Iterator[subprocess.Popen]:
    """`harness serve ARGS --port PORT` as a subprocess of the real CLI."""
    process = subprocess.Popen(harness_command("serve", *args, "--port", str(port)),
                               env=subprocess_env(), stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE)
    try:
        wait_ready(port, process)
        yield process
    finally:
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


@contextmanager
def thread_server(app: Any, port: int) -> Iterator[Any]:
    """Serve an ASGI app with uvicorn in a background thread of this process."""
    import uvicorn

    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning",
                            access_log=False, loop="asyncio")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 30
        while not server.started:
            if time.monotonic() > deadline or not thread.is_alive():
                raise RuntimeError("the in-thread server did not start")
            time.sleep(0.02)
        yield server
    finally:
        server.should_exit = True
        thread.join(timeout=10)


def stored_episodes(db: Path, run_id: str | None = None) -> list[dict[str, Any]]:
    with sqlite3.connect(db) as connection:
        connection.row_factory = sqlite3.Row
        sql, params = "SELECT * FROM episodes", ()
        if run_id:
            sql, params = sql + " WHERE run_id = ?", (run_id,)
        return [dict(row) for row in connection.execute(sql, params)]


def session_model(tmp_path_factory: Any, name: str, build: Any) -> Path:
    """A model built once per test session, shared by the conftests of tests/harness/policies
    and tests/harness/serve (both look in the session's base temporary directory)."""
    path = tmp_path_factory.getbasetemp() / "llm-models" / name
    if not (path / "BUILT").exists():
        path.mkdir(parents=True, exist_ok=True)
        build(path)
        (path / "BUILT").write_text("ok")
    return path


def direct_logprobs(model: Any, prompt, continuation) -> np.ndarray:
    """Log-probabilities of `continuation` from one unbatched, uncached forward pass."""
    import torch

    ids = torch.tensor([list(prompt) + list(continuation)])
    with torch.no_grad():
        logits = model.model(input_ids=ids).logits[0].double()
    logprobs = torch.log_softmax(logits, dim=-1)
    positions = torch.arange(len(prompt) - 1, len(prompt) + len(continuation) - 1)
    return logprobs[positions, torch.tensor(list(continuation))].numpy()
