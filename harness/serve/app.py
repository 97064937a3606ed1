"""The ASGI app of `harness serve` (Starlette): the OpenAI-compatible endpoints over an
`Engine`, request validation, and fault injection for tests.

Endpoints: ``GET /v1/models``, ``POST /v1/chat/completions`` (``n``, ``temperature``,
``top_p``, ``max_tokens``/``max_completion_tokens``, ``stop``, ``seed``, ``logprobs``,
``top_logprobs``), ``POST /v1/completions`` (the same plus ``echo`` and integer
``logprobs``; ``echo`` with ``max_tokens=0`` scores a given text), ``GET /health`` and
``GET /harness/stats`` (request and fault counters, for tests and benches).

Errors are JSON bodies (`harness.serve.protocol.error_body`), never a crash: malformed JSON
or invalid fields 400, unknown model 404, a body over ``max_request_bytes`` 413, prompt plus
``max_tokens`` beyond the context 400 (``context_length_exceeded``), unknown route 404,
wrong method 405, an engine failure 500.

Faults (`ServeSettings`): every valid request first waits ``latency_ms`` plus
``uniform(0, latency_jitter_ms)``, then fails with probability ``fail_rate`` (half 429 with a
``Retry-After`` header, half 500). Faults and delays come from two generators seeded by
``fault_seed``, so the n-th request to be answered meets the same fault draw in every run.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import orjson
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response
from starlette.routing import Route

from harness.core import HarnessError
from harness.policies.model import Sampling
from harness.serve.engines import Engine, Prompted
from harness.serve.protocol import (ChatRequest, CompletionRequest, ValidationError,
                                    describe_validation_error, error_body)

log = logging.getLogger(__name__)

__all__ = ["ServeSettings", "create_app"]


@dataclass(frozen=True)
class ServeSettings:
    """Limits and fault injection of one server."""

    fail_rate: float = 0.0
    """Probability that a valid request fails (half 429, half 500)."""
    latency_ms: float = 0.0
    """Added to every valid request before it is answered."""
    latency_jitter_ms: float = 0.0
    """Extra uniform random delay in [0, latency_jitter_ms]."""
    retry_after_s: int = 0
    """``Retry-After`` seconds sent with injected 429s."""
    fault_seed: int = 0
    seed: int = 0
    """Seeds the sampling seeds of requests that give none."""
    max_request_bytes: int = 1 << 20
    max_tokens_limit: int = 4096
    max_n: int = 16


class _ApiError(Exception):
    def __init__(self, status: int, message: str, kind: str = "invalid_request_error",
                 param: str | None = None, code: str | None = None,
                 headers: dict[str, str] | None = None, injected: bool = False):
        super().__init__(message)
        self.injected = injected
        self.status, self.body, self.headers = status, error_body(
            message, kind, param=param, code=code), headers


def _json(data: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    return Response(orjson.dumps(data), status_code=status, headers=headers,
                    media_type="application/json")


class _Server:
    def __init__(self, engine: Engine, settings: ServeSettings):
        self.engine, self.settings = engine, settings
        # separate streams: which requests fail does not depend on how their delays interleave
        self.fault_rng = np.random.default_rng([settings.fault_seed, 0])
        self.delay_rng = np.random.default_rng([settings.fault_seed, 1])
        self.seed_rng = np.random.default_rng(settings.seed)
        self.stats = {"requests": 0, "completed": 0, "injected_429": 0, "injected_500": 0,
                      "client_errors": 0, "server_errors": 0, "in_flight": 0,
                      "max_in_flight": 0}
        self.created = int(time.time())
        self._ids = itertools.count()
        self._prefix = uuid.uuid4().hex[:12]

    def next_id(self) -> str:
        """A response id unique to this server (cheaper than a uuid per request)."""
        return f"{self._prefix}-{next(self._ids)}"

    async def body(self, request: Request) -> Any:
        limit = self.settings.max_request_bytes
        declared = request.headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > limit:
            raise _ApiError(413, f"request body over {limit} bytes", code="request_too_large")
        chunks, size = [], 0
        async for chunk in request.stream():
            size += len(chunk)
            if size > limit:
                raise _ApiError(413, f"request body over {limit} bytes",
                                code="request_too_large")
            chunks.append(chunk)
        try:
            return orjson.loads(b"".join(chunks))
        except orjson.JSONDecodeError as exc:
            raise _ApiError(400, f"malformed JSON body: {exc}") from None

    def check_model(self, model: str) -> None:
        if model not in self.engine.aliases:
            raise _ApiError(404, f"the model {model!r} does not exist; this server serves "
                            f"{self.engine.name!r}", param="model", code="model_not_found")

    def sampling(self, request: ChatRequest | CompletionRequest, max_tokens: int | None,
                 logprobs: bool, top_logprobs: int) -> Sampling:
        settings = self.settings
        if request.n > settings.max_n:
            raise _ApiError(400, f"n must be <= {settings.max_n}", param="n")
        limit = settings.max_tokens_limit
        if max_tokens is None:
            max_tokens = limit
        if max_tokens > limit:
            raise _ApiError(400, f"max_tokens must be <= {limit}", param="max_tokens")
        if logprobs and not self.engine.offers_logprobs:
            logprobs = False
        seed = request.seed
        if seed is None and request.temperature > 0:
            seed = int(self.seed_rng.integers(2**31 - 1))
        return Sampling(temperature=request.temperature, top_p=request.top_p,
                        max_tokens=max_tokens, stop=tuple(request.stop or ()), seed=seed,
                        n=request.n, logprobs=logprobs, top_logprobs=top_logprobs)

    async def faults(self) -> None:
        settings = self.settings
        delay = settings.latency_ms
        if settings.latency_jitter_ms:
            delay += float(self.delay_rng.uniform(0, settings.latency_jitter_ms))
        if delay > 0:
            await asyncio.sleep(delay / 1000)
        if settings.fail_rate and self.fault_rng.random() < settings.fail_rate:
            if self.fault_rng.random() < 0.5:
                self.stats["injected_429"] += 1
                raise _ApiError(429, "injected rate limit (harness serve --fail-rate)",
                                "rate_limit_error", code="rate_limit_exceeded",
                                headers={"retry-after": str(settings.retry_after_s)},
                                injected=True)
            self.stats["injected_500"] += 1
            raise _ApiError(500, "injected server error (harness serve --fail-rate)",
                            "server_error", injected=True)

    def usage(self, prompted: Prompted) -> dict[str, int]:
        completion = sum(len(c.token_ids) if c.token_ids is not None else len(c.text)
                         for c in prompted.choices)
        return {"prompt_tokens": prompted.prompt_tokens, "completion_tokens": completion,
                "total_tokens": prompted.prompt_tokens + completion}


def _chat_logprobs(engine: Engine, choice: Any) -> dict[str, Any] | None:
    if choice.logprobs is None or choice.token_ids is None:
        return None
    content = []
    for k, (token, logprob) in enumerate(zip(choice.token_ids, choice.logprobs)):
        top = []
        if choice.top_ids is not None:
            top = [{"token": engine.token_text(i), "logprob": lp,
                    "bytes": engine.token_bytes(i)}
                   for i, (_, lp) in zip(choice.top_ids[k], choice.top_logprobs[k])]
        content.append({"token": engine.token_text(token), "logprob": logprob,
                        "bytes": engine.token_bytes(token), "top_logprobs": top})
    return {"content": content, "refusal": None}


async def _chat(server: _Server, data: Any) -> Response:
    request = ChatRequest.model_validate(data)
    server.check_model(request.model)
    sampling = server.sampling(request, request.completion_limit(), request.logprobs,
                               request.top_logprobs or 0)
    messages = [{"role": m.role, "content": m.text()} for m in request.messages]
    await server.faults()
    prompted = await server.engine.chat(messages, sampling,
                                        clamp=request.completion_limit() is None)
    choices = [{"index": i, "message": {"role": "assistant", "content": c.text},
                "logprobs": _chat_logprobs(server.engine, c) if sampling.logprobs else None,
                "finish_reason": c.finish_reason} for i, c in enumerate(prompted.choices)]
    return _json({"id": f"chatcmpl-{server.next_id()}", "object": "chat.completion",
                  "created": int(time.time()), "model": request.model, "choices": choices,
                  "usage": server.usage(prompted)})


def _completion_logprobs(engine: Engine, prompted: Prompted, choice: Any, echo: bool,
                         top: int) -> dict[str, Any]:
    ids = list(prompted.prompt_ids) if echo else []
    values: list[float | None] = list(prompted.prompt_logprobs or [None] * len(ids))
    tops: list[dict[str, float] | None] = [None] * len(ids)
    ids += list(choice.token_ids or ())
    values += list(choice.logprobs or ())
    for k in range(len(choice.token_ids or ())):
        tops.append({engine.token_text(i): lp for i, (_, lp) in
                     zip(choice.top_ids[k], choice.top_logprobs[k])} if choice.top_ids else {})
    tokens = [engine.token_text(i) for i in ids]
    offsets = np.cumsum([0] + [len(t) for t in tokens[:-1]]).tolist() if tokens else []
    return {"tokens": tokens, "token_logprobs": values,
            "top_logprobs": tops if top else None, "text_offset": offsets}


async def _completions(server: _Server, data: Any) -> Response:
    request = CompletionRequest.model_validate(data)
    server.check_model(request.model)
    want = request.logprobs is not None
    sampling = server.sampling(request, request.max_tokens, want, request.logprobs or 0)
    await server.faults()
    prompted = await server.engine.complete(request.prompt, sampling, echo=request.echo,
                                            prompt_logprobs=want)
    prefix = ""
    if request.echo and prompted.prompt_ids and hasattr(server.engine, "decode"):
        prefix = server.engine.decode(prompted.prompt_ids)
    choices = []
    for i, c in enumerate(prompted.choices):
        logprobs = _completion_logprobs(server.engine, prompted, c, request.echo,
                                        request.logprobs or 0) \
            if want and server.engine.offers_logprobs else None
        choices.append({"index": i, "text": prefix + c.text, "logprobs": logprobs,
                        "finish_reason": c.finish_reason})
    return _json({"id": f"cmpl-{server.next_id()}", "object": "text_completion",
                  "created": int(time.time()), "model": request.model, "choices": choices,
                  "usage": server.usage(prompted)})


def _endpoint(server: _Server, handler: Callable[[_Server, Any], Awaitable[Response]]
              ) -> Callable[[Request], Awaitable[Response]]:
    async def endpoint(request: Request) -> Response:
        stats = server.stats
        stats["requests"] += 1
        stats["in_flight"] += 1
        stats["max_in_flight"] = max(stats["max_in_flight"], stats["in_flight"])
        try:
            response = await handler(server, await server.body(request))
            stats["completed"] += 1
            return response
        except _ApiError as exc:
            if not exc.injected:
                stats["client_errors" if exc.status < 500 else "server_errors"] += 1
            return _json(exc.body, exc.status, exc.headers)
        except ValidationError as exc:
            stats["client_errors"] += 1
            message, param = describe_validation_error(exc)
            return _json(error_body(message, param=param), 400)
        except HarnessError as exc:  # the engine refused the request (context, token ids)
            stats["client_errors"] += 1
            code = "context_length_exceeded" if "context" in str(exc) else None
            return _json(error_body(str(exc), code=code), 400)
        except ClientDisconnect:  # the client went away mid-request: nothing to answer
            stats["client_errors"] += 1
            log.info("client disconnected before its request was read")
            return Response(status_code=499)
        except Exception as exc:  # noqa: BLE001 - a 500 body, never a dead server
            log.exception("request failed")
            stats["server_errors"] += 1
            return _json(error_body(f"internal error: {type(exc).__name__}: {exc}",
                                    "server_error"), 500)
        finally:
            stats["in_flight"] -= 1

    return endpoint


def create_app(engine: Engine, settings: ServeSettings = ServeSettings()) -> Starlette:
    """The Starlette app serving `engine` with `settings`."""
    server = _Server(engine, settings)

    async def models(request: Request) -> Response:
        return _json({"object": "list", "data": [
            {"id": engine.name, "object": "model", "created": server.created,
             "owned_by": "harness", **({"max_model_len": engine.context_tokens}
                                       if engine.context_tokens else {})}]})

    async def stats(request: Request) -> Response:
        return _json(server.stats)

    async def health(request: Request) -> Response:
        return _json({"status": "ok"})

    async def http_error(request: Request, exc: Exception) -> Response:
        status = getattr(exc, "status_code", 500)
        detail = getattr(exc, "detail", "") or "error"
        kind = "invalid_request_error" if status < 500 else "server_error"
        return _json(error_body(f"{request.method} {request.url.path}: {detail}", kind), status)

    routes = [Route("/v1/models", models, methods=["GET"]),
              Route("/v1/chat/completions", _endpoint(server, _chat), methods=["POST"]),
              Route("/v1/completions", _endpoint(server, _completions), methods=["POST"]),
              Route("/harness/stats", stats, methods=["GET"]),
              Route("/health", health, methods=["GET"])]
    app = Starlette(routes=routes, exception_handlers={HTTPException: http_error})
    app.state.server = server
    return app
