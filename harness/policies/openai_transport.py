"""How the ``openai`` backend sends one chat-completion body: through the official client, or
straight through aiohttp.

- ``client=openai`` (the default): ``AsyncOpenAI.post(BASE_URL/chat/completions)``, the
  client's documented way to send a raw body (same base URL, auth, headers, timeouts and
  typed status errors), with an orjson body and the reply read as bytes. This skips the
  client's parameter transformation and response models, about half of its CPU per request.
  Its HTTP transport is aiohttp when installed (``http=auto``; about half the CPU of httpx
  again) or httpx, with one client per 32 connections because httpx's pool bookkeeping per
  request grows with the pool.
- ``client=direct``: one ``aiohttp.ClientSession`` posting the same body to the same URL,
  with the same auth header: about a quarter of the official client's CPU per request, for
  hundreds of concurrent episodes against a local server on a small machine.

Both raise `RequestFailed` (retryable or not, with the response headers for Retry-After) and
keep their connections per event loop (HTTP pools are bound to the loop that made them),
closing them when the loop's tasks are cancelled at its end (`asyncio.run`) or on `aclose`.
"""

from __future__ import annotations

import asyncio
import importlib.util
import logging
import os
from typing import Any

from harness.core import MissingDependencyError
from harness.policies.specs import ModelOptions

log = logging.getLogger(__name__)

__all__ = ["RequestFailed", "OpenAIClientTransport", "DirectTransport", "make_transport",
           "RETRY_STATUSES", "POOL_SHARD"]

RETRY_STATUSES = frozenset({408, 409, 429})
POOL_SHARD = 32
"""Connections per httpx-based client; more concurrency spreads over several clients."""


class RequestFailed(Exception):
    """One attempt failed; `retryable` for 408/409/429/5xx, timeouts, dropped connections."""

    def __init__(self, message: str, *, retryable: bool, status: int | None = None,
                 headers: Any = None):
        super().__init__(message)
        self.retryable, self.status, self.headers = retryable, status, headers


def _retryable_status(status: int) -> bool:
    return status in RETRY_STATUSES or status >= 500


class _PerLoop:
    """Connections made for the running event loop, remade for a new one."""

    def __init__(self, base_url: str, options: ModelOptions):
        self.base_url, self.options = base_url.rstrip("/"), options
        self.endpoint = f"{self.base_url}/chat/completions"  # absolute: parsed once
        self.api_key = os.environ.get(options.api_key_env) or "EMPTY"
        self._loop: asyncio.AbstractEventLoop | None = None
        self._clients: list[Any] = []
        self._closer: asyncio.Task | None = None
        self._turn = 0

    def _open(self) -> list[Any]:  # pragma: no cover - abstract
        raise NotImplementedError

    def client(self) -> Any:
        loop = asyncio.get_running_loop()
        if self._loop is not loop:
            self._clients = self._open()
            self._loop = loop
            self._closer = loop.create_task(self._close_at_loop_end(self._clients))
        self._turn = (self._turn + 1) % len(self._clients)
        return self._clients[self._turn]

    @staticmethod
    async def _close_at_loop_end(clients: list[Any]) -> None:
        try:
            await asyncio.Event().wait()
        finally:
            for client in clients:
                try:
                    await client.close()
                except Exception:  # noqa: BLE001 - closing is best effort at loop end
                    log.debug("closing an HTTP client failed", exc_info=True)

    @property
    def closed_at_loop_end(self) -> asyncio.Task | None:
        return self._closer

    async def aclose(self) -> None:
        """Close this loop's connections now."""
        if self._loop is asyncio.get_running_loop() and self._closer is not None:
            self._closer.cancel()
            await asyncio.gather(self._closer, return_exceptions=True)
            self._loop, self._clients = None, []


def _import_openai() -> Any:
    try:
        import openai
    except ImportError:
        raise MissingDependencyError("openai", "llm", "the openai backend") from None
    return openai


def _import_http() -> Any:
    """The openai client's HTTP library (httpx2 from openai 3, httpx before)."""
    try:
        import httpx2

        return httpx2
    except ImportError:
        import httpx

        return httpx


class OpenAIClientTransport(_PerLoop):
    """The official ``AsyncOpenAI`` client (see the module docstring)."""

    def __init__(self, base_url: str, options: ModelOptions):
        super().__init__(base_url, options)
        self.openai = _import_openai()
        self.http = _import_http()
        self.kind = self._kind()

    def _kind(self) -> str:
        choice = self.options.http
        if choice == "auto":
            choice = "aiohttp" if importlib.util.find_spec("aiohttp") else "httpx"
        if choice == "aiohttp" and not hasattr(self.openai, "DefaultAioHttpClient"):
            raise MissingDependencyError("openai>=3 with aiohttp", "llm", "http=aiohttp")
        return choice

    def _open(self) -> list[Any]:
        concurrency = self.options.concurrency
        shards = 1 if self.kind == "aiohttp" else -(-concurrency // POOL_SHARD)
        return [self._make_client(-(-concurrency // shards)) for _ in range(shards)]

    def _make_client(self, connections: int) -> Any:
        openai, timeout = self.openai, self.options.timeout
        limits = self.http.Limits(max_connections=connections,
                                  max_keepalive_connections=connections)
        factory = openai.DefaultAioHttpClient if self.kind == "aiohttp" else (
            getattr(openai, "DefaultAsyncHttpx2Client", None) or openai.DefaultAsyncHttpxClient)
        return openai.AsyncOpenAI(base_url=self.base_url, api_key=self.api_key, max_retries=0,
                                  timeout=timeout, http_client=factory(limits=limits,
                                                                       timeout=timeout))

    async def send(self, body: bytes, key: str) -> bytes:
        openai = self.openai
        try:
            response = await self.client().post(self.endpoint, content=body,
                                                options={"idempotency_key": key},
                                                cast_to=self.http.Response)
        except (openai.APITimeoutError, openai.APIConnectionError) as exc:
            raise RequestFailed(f"{type(exc).__name__}: {exc}", retryable=True) from exc
        except openai.APIStatusError as exc:
            message = _error_message(exc.response.content)
            raise RequestFailed(f"HTTP {exc.status_code}: {message}",
                                retryable=_retryable_status(exc.status_code),
                                status=exc.status_code, headers=exc.response.headers) from exc
        return response.content


class DirectTransport(_PerLoop):
    """aiohttp straight to the endpoint (see the module docstring)."""

    def __init__(self, base_url: str, options: ModelOptions):
        super().__init__(base_url, options)
        try:
            import aiohttp
        except ImportError:
            raise MissingDependencyError("aiohttp", "llm", "client=direct") from None
        self.aiohttp = aiohttp
        self.headers = {"Content-Type": "application/json", "Accept": "application/json",
                        "Authorization": f"Bearer {self.api_key}"}

    def _open(self) -> list[Any]:
        aiohttp = self.aiohttp
        connector = aiohttp.TCPConnector(limit=self.options.concurrency)
        return [aiohttp.ClientSession(connector=connector, headers=self.headers,
                                      timeout=aiohttp.ClientTimeout(total=self.options.timeout))]

    async def send(self, body: bytes, key: str) -> bytes:
        try:
            async with self.client().post(self.endpoint, data=body) as response:
                payload = await response.read()
                status = response.status
                headers = response.headers
        except (self.aiohttp.ClientError, asyncio.TimeoutError) as exc:
            raise RequestFailed(f"{type(exc).__name__}: {exc}", retryable=True) from exc
        if status >= 400:
            raise RequestFailed(f"HTTP {status}: {_error_message(payload)}",
                                retryable=_retryable_status(status), status=status,
                                headers=headers)
        return payload


def _error_message(payload: bytes) -> str:
    import orjson

    try:
        return str(orjson.loads(payload)["error"]["message"])
    except (orjson.JSONDecodeError, KeyError, TypeError):
        return payload[:200].decode(errors="replace")


def make_transport(base_url: str, options: ModelOptions) -> OpenAIClientTransport | \
        DirectTransport:
    """The transport the ``client`` option names."""
    if options.client == "direct":
        return DirectTransport(base_url, options)
    return OpenAIClientTransport(base_url, options)
