"""`harness bench llm`, model servers: `harness serve` on vLLM against `harness serve` on
transformers, the same model and the same client work, in the same run.

Model: a tiny Qwen2 (`harness.policies.tiny`, float32) made in a temporary folder. Work:
`harness.runner` plays `concurrency` frozenlake@1 episodes of `steps` calls through the
``openai`` policy (greedy, ``max_tokens`` 16) against each server in turn. The figure is
completion tokens (as stored with the episodes) per second of the run's wall time; the
baseline is the transformers server (`harness serve --model hf:PATH`), so the ratio says what
vLLM's engine buys on this machine's device. On a CPU the absolute figures say little about a
GPU; the ratio is what to read.
"""

from __future__ import annotations

import sqlite3
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.config import RunConfig
from harness.core import HarnessError
from harness.runner import run_async
from harness.serve.bench import _run_loop, bench_llm, free_port, report_lines, serve_process
from harness.store import Store

__all__ = ["ServerRun", "bench_model_servers", "model_server_lines", "llm_report"]


@dataclass(frozen=True)
class ServerRun:
    engine: str
    requests: int
    completion_tokens: int
    wall_s: float

    @property
    def tokens_per_s(self) -> float:
        return self.completion_tokens / self.wall_s


async def _play(port: int, name: str, engine: str, concurrency: int, steps: int,
                db: str) -> ServerRun:
    from harness.policies.backends import make_model_policy

    spec = (f"openai:{name}@http://127.0.0.1:{port}/v1?concurrency={concurrency}"
            f"&max_tokens=16&temperature=0&timeout=300")
    policy = make_model_policy(spec)
    config = RunConfig(policies=(spec,), suites=("frozenlake@1",), split="test",
                       n_tasks=concurrency, eval_seeds=(0,), max_steps=steps,
                       concurrency=concurrency, db=db, run_id=f"bench-serve-{engine}")
    started = time.perf_counter()
    with Store(db) as store:
        summary = await run_async(config, store=store, policies=[policy])
        wall = time.perf_counter() - started
        requests = store.count_steps(summary.run_id)
    await policy.aclose()
    if summary.errors:
        raise HarnessError(f"bench run against {engine} had {summary.errors} errors")
    with sqlite3.connect(db) as conn:
        tokens = conn.execute("SELECT COALESCE(SUM(completion_tokens), 0) FROM episodes "
                              "WHERE run_id=?", (summary.run_id,)).fetchone()[0]
    return ServerRun(engine, requests, int(tokens), wall)


def bench_model_servers(concurrency: int = 32, steps: int = 8,
                        engines: tuple[str, ...] = ("hf", "vllm")) -> list[ServerRun]:
    """One run per engine (see the module docstring), transformers first."""
    from harness.policies.tiny import make_tiny_model

    runs = []
    with tempfile.TemporaryDirectory() as tmp:
        model = Path(tmp) / "tiny"
        make_tiny_model(model)
        for engine in engines:
            port = free_port()
            args = ["--model", f"{engine}:{model}", "--name", "tiny", "--max-batch",
                    str(concurrency)]
            with serve_process(args, port, ready_s=600.0):
                runs.append(_run_loop(_play(port, "tiny", engine, concurrency, steps,
                                            str(Path(tmp) / "bench.db"))))
    return runs


def model_server_lines(runs: list[ServerRun]) -> list[str]:
    base = next((r for r in runs if r.engine == "hf"), None)
    lines = ["harness serve on a tiny Qwen2 (float32): "
             f"{runs[0].requests} calls of frozenlake@1 episodes, greedy, max_tokens 16"]
    for run in runs:
        ratio = (f"  ratio to hf {run.tokens_per_s / base.tokens_per_s:.2f}"
                 if base is not None and run is not base else "  (baseline)")
        lines.append(f"  --model {run.engine}:PATH  {run.tokens_per_s:9.1f} completion tokens/s "
                     f"({run.requests} requests in {run.wall_s:.1f} s){ratio}")
    return lines


def llm_report(args: Any) -> list[str]:
    """Lines of `harness bench llm`: the echo server (`harness.serve.bench`: 256 concurrent
    episodes, 500 ms injected latency), then, where vLLM is installed, `harness serve` on vLLM
    against `harness serve` on transformers."""
    from harness.policies.vllm_client import VLLMUnavailableError, check_vllm

    lines = report_lines(bench_llm(concurrency=256, latency_ms=500.0))
    try:
        check_vllm()
    except VLLMUnavailableError as error:
        return [*lines, f"model servers: not measured ({error})"]
    return [*lines, *model_server_lines(bench_model_servers())]
