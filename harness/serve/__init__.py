"""`harness serve`: an OpenAI-compatible HTTP server over a local model (or ``echo``).

    harness serve --model hf:models/tiny --port 8000 [--fail-rate 0.3] [--latency-ms 500]

Binds 127.0.0.1 by default. See `harness.serve.app` for the endpoints, validation and fault
injection, `harness.serve.engines` for what can be served.
"""

from __future__ import annotations

import argparse
import math
import sys

from harness.core import ConfigError, MissingDependencyError

__all__ = ["add_commands", "cmd_serve", "serve_parser_arguments", "check_port"]


def check_port(port: int) -> int:
    """`port` if it is a TCP port, 1-65535 (the OS would silently wrap a larger one); a
    `ConfigError` otherwise."""
    if not 1 <= port <= 65535:
        raise ConfigError(f"--port must lie in 1-65535, got {port}")
    return port


def serve_parser_arguments(parser: argparse.ArgumentParser) -> None:
    """The flags of `harness serve`."""
    parser.add_argument("--model", required=True,
                        help="hf:PATH, checkpoint:PATH, vllm:PATH, a model directory, or echo "
                             "(no model)")
    parser.add_argument("--engine", choices=("hf", "vllm"), default="hf",
                        help="what runs a model directory given without a prefix: "
                             "transformers (hf) or vLLM (vllm: --model vllm:PATH)")
    parser.add_argument("--name", help="model id clients send (default: the directory name)")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--fail-rate", type=float, default=0.0,
                        help="fraction of requests answered 429 or 500 (half each)")
    parser.add_argument("--latency-ms", type=float, default=0.0,
                        help="delay added to every request")
    parser.add_argument("--latency-jitter-ms", type=float, default=0.0,
                        help="extra uniform random delay in [0, this]")
    parser.add_argument("--retry-after", type=int, default=0,
                        help="Retry-After seconds sent with injected 429s")
    parser.add_argument("--fault-seed", type=int, default=0)
    parser.add_argument("--seed", type=int, default=0,
                        help="seeds the sampling of requests that give no seed")
    parser.add_argument("--max-batch", type=int, default=16, help="requests decoded together")
    parser.add_argument("--batch-wait-ms", type=float, default=2.0)
    parser.add_argument("--threads", type=int, help="torch CPU threads")
    parser.add_argument("--max-request-bytes", type=int, default=1 << 20)
    parser.add_argument("--max-tokens-limit", type=int, default=4096)


def _settings(args: argparse.Namespace):
    from harness.serve.app import ServeSettings

    check_port(args.port)
    if not 0 <= args.fail_rate <= 1:
        raise ConfigError(f"--fail-rate must lie in [0, 1], got {args.fail_rate}")
    for flag in ("latency_ms", "latency_jitter_ms", "batch_wait_ms"):
        value = getattr(args, flag)
        if not (math.isfinite(value) and value >= 0):
            raise ConfigError(f"--{flag.replace('_', '-')} must be a finite number >= 0, "
                              f"got {value}")
    minimum = {"retry_after": 0, "max_batch": 1, "max_request_bytes": 1,
               "max_tokens_limit": 1, "threads": 1}
    for flag, low in minimum.items():
        value = getattr(args, flag)
        if value is not None and value < low:
            raise ConfigError(f"--{flag.replace('_', '-')} must be >= {low}, got {value}")
    return ServeSettings(fail_rate=args.fail_rate, latency_ms=args.latency_ms,
                         latency_jitter_ms=args.latency_jitter_ms,
                         retry_after_s=args.retry_after, fault_seed=args.fault_seed,
                         seed=args.seed, max_request_bytes=args.max_request_bytes,
                         max_tokens_limit=args.max_tokens_limit)


def cmd_serve(args: argparse.Namespace) -> int:
    try:
        import uvicorn

        from harness.serve.app import create_app
    except ImportError as exc:
        raise MissingDependencyError(exc.name or "uvicorn", "llm", "harness serve") from None
    from harness.serve.engines import build_engine

    settings = _settings(args)
    model = args.model
    if args.engine == "vllm" and model != "echo" and ":" not in model:
        model = f"vllm:{model}"
    engine = build_engine(model, name=args.name, max_batch=args.max_batch,
                          wait_s=args.batch_wait_ms / 1000, threads=args.threads)
    app = create_app(engine, settings)
    print(f"harness serve: {engine.name} on http://{args.host}:{args.port}/v1", file=sys.stderr,
          flush=True)
    # a bounded graceful shutdown: SIGTERM stops the server even with requests in flight
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning", access_log=False,
                backlog=4096, timeout_keep_alive=120, timeout_graceful_shutdown=5)
    return 0


def add_commands(subparsers: argparse._SubParsersAction) -> None:
    """Add `harness serve` to the CLI."""
    parser = subparsers.add_parser("serve", help="an OpenAI-compatible server over a local "
                                   "model (127.0.0.1 by default)")
    serve_parser_arguments(parser)
    parser.set_defaults(func=cmd_serve)
