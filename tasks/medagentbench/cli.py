"""`harness serve-fhir` (the MedAgentBench FHIR server for manual use) and `harness bench
medagentbench` (oracle episodes/s over HTTP with 32 concurrent episodes).

    harness serve-fhir --port 8080                       # the base record of every patient
    harness serve-fhir --suite medagentbench-v3 --task task5_3 --eval-seed 0

The family's front-end (registered in ``tasks/__init__.py``; `harness.cli` loads it through
`tasks.plugins`): it may drive the engine (the bench plays episodes through
`harness.runner`), and nothing else in `tasks` imports it. Heavy imports happen inside the
handlers.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from harness.core import ConfigError, MissingDependencyError

__all__ = ["add_commands", "cmd_serve_fhir", "medagentbench_report", "bench_oracle"]

SUITES = ("medagentbench-v1", "medagentbench-v2", "medagentbench-v3")
"""Suites whose task records `serve-fhir --suite` can serve (from the suite registry)."""


def _serve_parser(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8080,
                        help="port (the official api_base is http://localhost:8080/fhir/)")
    parser.add_argument("--data", help="MedAgentBench data directory (else $MEDAGENTBENCH_DATA "
                        "or ../shared/data/medagentbench)")
    parser.add_argument("--suite", choices=sorted(SUITES),
                        help="serve the record of one task of this suite (with --task)")
    parser.add_argument("--task", help="task id whose chart replaces its patient's")
    parser.add_argument("--eval-seed", type=int, default=0, help="seed of that task's chart")


def _default_records(args: argparse.Namespace) -> tuple[list, str | None]:
    if not args.task:
        if args.suite:
            raise ConfigError("--suite needs --task (the task whose record to serve)")
        return [], None
    if not args.suite:
        raise ConfigError("--task needs --suite")
    from harness.core import make_rng
    from tasks.base import get_suite
    from tasks.medagentbench.branches import task_record

    suite = get_suite(args.suite)
    task = suite.task_def(args.task)
    if not task.mrn:
        return [], None
    seed_parts = (suite.id, task.id, args.eval_seed)
    return task_record(task.kind, task.branch, task.mrn, make_rng(*seed_parts)), task.mrn


def cmd_serve_fhir(args: argparse.Namespace) -> int:
    try:
        import uvicorn

        from tasks.medagentbench.backend import base_resources
        from tasks.medagentbench.data import load_patients
        from tasks.medagentbench.fhirstore import ResourceStore, build_database
        from tasks.medagentbench.server import EpisodeRegistry, build_app
    except ImportError as exc:
        raise MissingDependencyError(exc.name or "fastapi", "medagentbench",
                                     "harness serve-fhir") from None
    if not 1 <= args.port <= 65535:  # the OS would silently wrap a larger one
        raise ConfigError(f"--port must lie in 1-65535, got {args.port}")
    records, hidden = _default_records(args)
    with tempfile.TemporaryDirectory(prefix="serve-fhir-") as tmp:
        base = build_database(Path(tmp) / "base.sqlite", base_resources(load_patients(args.data)))
        registry = EpisodeRegistry()
        registry.default_id = registry.add(ResourceStore(base, records, hidden), "default")
        print(f"FHIR R4 server on http://{args.host}:{args.port}/fhir/ (Ctrl-C stops)",
              file=sys.stderr)
        uvicorn.run(build_app(registry), host=args.host, port=args.port, log_level="warning",
                    access_log=False, lifespan="off", timeout_graceful_shutdown=5)
        registry.drop("default")
    return 0


def add_commands(subparsers: argparse._SubParsersAction) -> None:
    """Add `harness serve-fhir` to the CLI."""
    parser = subparsers.add_parser("serve-fhir", help="the MedAgentBench FHIR R4 server "
                                   "(127.0.0.1 by default)")
    _serve_parser(parser)
    parser.set_defaults(func=cmd_serve_fhir)


# -- bench ------------------------------------------------------------------------------------
def _oracle_episode(suite: Any, task_id: str, seed: int) -> tuple[bool, int]:
    env = suite.make_env(task_id)
    env.reset(seed=seed)
    steps, done, won = 0, False, False
    while not done:
        result = env.step(env.oracle_action())
        steps, won = steps + 1, bool(result.info["won"])
        done = result.terminated or result.truncated
    env.close()
    return won, steps


def bench_oracle(suite_id: str = "medagentbench-v2", concurrency: int = 32,
                 eval_seeds: tuple[int, ...] = (0,)) -> dict[str, float]:
    """The oracle on every test task of `suite_id` x `eval_seeds`, (a) as a bare loop of
    `concurrency` worker threads calling reset/step, (b) through `harness.runner.run` with
    ``concurrency`` episodes in flight and every step stored. Returns the figures."""
    from harness.config import RunConfig
    from harness.episodes import env_seed
    from harness.runner import run
    from tasks.base import get_suite

    suite = get_suite(suite_id)
    tasks = [t.id for t in suite.tasks("test")]
    jobs = [(t, env_seed(suite.id, t, s)) for t in tasks for s in eval_seeds]
    _oracle_episode(suite, tasks[0], 0)  # start the server outside the timings
    started = time.perf_counter()
    with ThreadPoolExecutor(concurrency) as pool:
        outcomes = list(pool.map(lambda job: _oracle_episode(suite, *job), jobs))
    bare_s = time.perf_counter() - started
    with tempfile.TemporaryDirectory() as tmp:
        config = RunConfig(policies=("oracle",), suites=(suite.id,), split="test",
                           eval_seeds=tuple(eval_seeds), concurrency=concurrency,
                           db=str(Path(tmp) / "bench.db"), run_id="bench-medagentbench")
        started = time.perf_counter()
        summary = run(config)
        harness_s = time.perf_counter() - started
    steps = sum(s for _, s in outcomes)
    return {"episodes": len(jobs), "steps": steps, "bare_eps": len(jobs) / bare_s,
            "harness_eps": summary.played / harness_s, "bare_success": sum(
                w for w, _ in outcomes) / len(jobs), "harness_errors": summary.errors,
            "requests_per_s": (steps - len(jobs)) / bare_s}


def medagentbench_report(args: Any) -> list[str]:
    """Lines of `harness bench medagentbench`."""
    n_seeds = getattr(args, "eval_seeds", None) or 1
    if n_seeds < 1:
        raise ConfigError(f"--eval-seeds must be >= 1, got {n_seeds}")
    seeds = tuple(range(n_seeds))
    figures = bench_oracle("medagentbench-v2", 32, seeds)
    return [f"medagentbench-v2@1 oracle, {figures['episodes']:.0f} episodes "
            f"({figures['steps']:.0f} steps, {figures['requests_per_s']:.0f} HTTP requests/s "
            "in the bare loop), 32 concurrent episodes over HTTP",
            f"  bare loop, 32 threads : {figures['bare_eps']:8.1f} episodes/s "
            f"(oracle success {figures['bare_success']:.0%})",
            f"  harness runner+store  : {figures['harness_eps']:8.1f} episodes/s "
            f"({figures['harness_errors']:.0f} errors)",
            f"  ratio harness/bare    : {figures['harness_eps'] / figures['bare_eps']:8.2f}"]
