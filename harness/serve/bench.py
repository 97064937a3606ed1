"""`harness bench llm`: model-call throughput of the harness against Little's law.

Server: a `harness serve --model echo --latency-ms 500` subprocess. The echo engine runs no
model (a reply is the last message, cut to max_tokens), so each request costs the server only
its HTTP, validation and JSON work before it waits the injected 500 ms.

Client: `harness.runner` plays 256 concurrent frozenlake@1 episodes (64 test tasks, 4x4 and
8x8 in turn, x 4 eval seeds) through the ``openai`` policy (the official client, one shared
pool of 256 connections, on uvloop when installed). Every episode makes exactly `steps` = 30
model calls: echo replies carry no ``<action>`` tag, so every action is invalid and no episode
ends early. Each of the C = 256 episodes always waits on one call of L = 0.5 s, so Little's law
bounds the throughput at C / L = 512 requests/s; the figure is the requests the server
answered during the run over the run's wall time, and its ratio to that bound. Same-run
baseline: C coroutines calling the same client back to back (no runner, scaffold, env or
store), after one call each to open the connections. The CPU each request cost the client and
the server is printed too: both share the machine's cores (and its other tenants), so the
bound is reached only while the machine gives the two processes that much CPU.
"""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

import orjson

from harness.config import RunConfig
from harness.core import HarnessError
from harness.runner import run_async
from harness.store import Store

__all__ = ["LLMBench", "bench_llm", "report_lines", "free_port",
           "serve_process"]


@dataclass(frozen=True)
class ClientRun:
    """The run of one client kind: `client` is the policy's ``client`` option; CPU per
    request in milliseconds, for the bench process (runner, scaffold, HTTP client) and the
    server."""

    client: str
    requests: int
    wall_s: float
    client_cpu_ms: float
    server_cpu_ms: float

    @property
    def rps(self) -> float:
        return self.requests / self.wall_s


@dataclass(frozen=True)
class LLMBench:
    concurrency: int
    latency_s: float
    episodes: int
    bare_rps: float
    """The same-run baseline: the official client called back to back, no harness."""
    runs: tuple[ClientRun, ...]
    load_average: float = float("nan")
    """The machine's 1-minute load average when the bench ended (other tenants included)."""

    @property
    def bound_rps(self) -> float:
        return self.concurrency / self.latency_s

    def ratio(self, run: ClientRun) -> float:
        return run.rps / self.bound_rps


def free_port() -> int:
    """A TCP port on 127.0.0.1 that is free right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _get_json(url: str, timeout: float = 2.0) -> Any:
    with urllib.request.urlopen(url, timeout=timeout) as response:
        return orjson.loads(response.read())


@contextmanager
def serve_process(args: list[str], port: int, *, ready_s: float = 120.0
                  ) -> Iterator[subprocess.Popen]:
    """``python -m harness.serve ARGS --port PORT`` until the block ends (then terminated)."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    process = subprocess.Popen([sys.executable, "-m", "harness.serve", *args, "--port",
                                str(port)], env=env, stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + ready_s
        while True:
            if process.poll() is not None:
                raise HarnessError(f"harness serve exited with {process.returncode}: "
                                   f"{process.stderr.read().decode()[-500:]}")
            try:
                _get_json(f"http://127.0.0.1:{port}/v1/models", timeout=0.5)
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise HarnessError(f"harness serve did not start within {ready_s}s")
                time.sleep(0.1)
        yield process
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _run_loop(coroutine: Any) -> Any:
    """Run on uvloop when it is installed (cheaper per request), else asyncio's loop."""
    try:
        import uvloop
    except ImportError:
        return asyncio.run(coroutine)
    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        return runner.run(coroutine)


async def _bare(policy: Any, concurrency: int, steps: int) -> float:
    from harness.policies.model import Sampling

    backend = policy.backend
    messages = [{"role": "system", "content": "rules"}, {"role": "user", "content": "obs"}]
    sampling = Sampling(max_tokens=16)

    async def episode(calls: int) -> None:
        for _ in range(calls):
            await backend.chat(messages, sampling)

    await asyncio.gather(*(episode(1) for _ in range(concurrency)))  # opens the connections
    started = time.perf_counter()
    await asyncio.gather(*(episode(steps) for _ in range(concurrency)))
    return concurrency * steps / (time.perf_counter() - started)


def _process_cpu_s(pid: int) -> float:
    """User + system CPU seconds of process `pid` (Linux /proc; NaN elsewhere)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return float("nan")


async def _harness_run(client: str, port: int, server_pid: int, concurrency: int,
                       steps: int, n_tasks: int, db: str) -> tuple[ClientRun, Any, float]:
    """One `harness.runner` run through the ``openai`` policy with ``client=CLIENT``; returns
    the run's figures, its summary and the policy's bare-loop rate (official client only)."""
    from harness.policies.backends import make_model_policy

    spec = (f"openai:echo@http://127.0.0.1:{port}/v1?concurrency={concurrency}"
            f"&max_tokens=16&timeout=30&client={client}")
    policy = make_model_policy(spec)
    config = RunConfig(policies=(spec,), suites=("frozenlake@1",), split="test",
                       n_tasks=n_tasks, eval_seeds=tuple(range(-(-concurrency // n_tasks))),
                       max_steps=steps, concurrency=concurrency, db=db,
                       run_id=f"bench-llm-{client}")
    stats_url = f"http://127.0.0.1:{port}/harness/stats"
    bare = await _bare(policy, concurrency, steps) if client == "openai" else float("nan")
    before = (await asyncio.to_thread(_get_json, stats_url))["completed"]
    cpu, server_cpu = time.process_time(), _process_cpu_s(server_pid)
    started = time.perf_counter()
    with Store(db) as store:
        summary = await run_async(config, store=store, policies=[policy])
        wall = time.perf_counter() - started
        cpu, server_cpu = time.process_time() - cpu, _process_cpu_s(server_pid) - server_cpu
        requests = (await asyncio.to_thread(_get_json, stats_url))["completed"] - before
        stored = store.count_steps(summary.run_id)
    await policy.aclose()
    if summary.errors or requests != stored:
        raise HarnessError(f"bench run had {summary.errors} errors; {requests} requests for "
                           f"{stored} steps")
    run = ClientRun(client, requests, wall, 1000 * cpu / requests,
                    1000 * server_cpu / requests)
    return run, summary, bare


def bench_llm(concurrency: int = 256, latency_ms: float = 500.0, steps: int = 30,
              n_tasks: int = 64, clients: tuple[str, ...] = ("openai", "direct")) -> LLMBench:
    """Run the bench (see the module docstring): for each client kind, `concurrency`
    episodes of `steps` calls each."""
    port = free_port()
    runs, bare, episodes = [], float("nan"), 0
    with tempfile.TemporaryDirectory() as tmp, \
            serve_process(["--model", "echo", "--latency-ms", str(latency_ms)], port) as server:
        for client in clients:
            run, summary, client_bare = _run_loop(_harness_run(
                client, port, server.pid, concurrency, steps, n_tasks,
                str(Path(tmp) / "bench.db")))
            runs.append(run)
            episodes = summary.played
            bare = client_bare if client == "openai" else bare
    return LLMBench(concurrency, latency_ms / 1000, episodes, bare, tuple(runs),
                    os.getloadavg()[0])


def report_lines(result: LLMBench) -> list[str]:
    names = {"openai": "official openai client", "direct": "client=direct (aiohttp)"}
    calls = result.runs[0].requests // max(result.episodes, 1) if result.runs else 0
    lines = [f"harness serve --model echo --latency-ms {result.latency_s * 1000:.0f}; "
             f"{result.episodes} frozenlake@1 episodes x {calls} calls, "
             f"{result.concurrency} concurrent",
             f"  Little's-law bound (C/L)               : {result.bound_rps:8.1f} requests/s",
             f"  bare official-client loop (baseline)   : {result.bare_rps:8.1f} requests/s"]
    for run in result.runs:
        label = f"harness run, {names.get(run.client, run.client)}"
        lines.append(f"  {label:39s}: {run.rps:8.1f} requests/s  ratio to bound "
                     f"{result.ratio(run):.2f} (target >= 0.80); CPU/request client "
                     f"{run.client_cpu_ms:.2f} ms, server {run.server_cpu_ms:.2f} ms")
    lines.append(f"  machine load average {result.load_average:.1f} on {os.cpu_count()} cores "
                 "(the cores are shared with other tenants)")
    return lines
