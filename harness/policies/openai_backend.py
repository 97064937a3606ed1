"""The ``openai`` backend: any OpenAI-compatible server (vLLM, SGLang, OpenAI, `harness
serve`) through the official async client (or, with ``client=direct``, aiohttp; see
`harness.policies.openai_transport`).

A semaphore keeps at most `concurrency` requests in flight; the connection pool holds as many
connections. The request body is built and the reply read with orjson.

Retries: the client's own are off. 408/409/429, 5xx, timeouts and dropped connections are
retried up to `max_retries` times after ``uniform(0, min(backoff_max, backoff * 2**k))``
seconds (full jitter), never less than the server's ``Retry-After``, with the same
idempotency key; every retry is counted in the result (`Decision.retries`). Other errors
(400, 401, 404, ...) raise `ModelRequestError` at once.
"""

from __future__ import annotations

import asyncio
import email.utils
import itertools
import logging
import os
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import orjson

from harness.core import HarnessError, make_rng
from harness.policies.model import ChatResult, Completion, ModelPolicy, Sampling
from harness.policies.openai_transport import RequestFailed, make_transport
from harness.policies.scaffold import Messages, make_scaffold
from harness.policies.specs import DEFAULT_OPENAI_URL, ModelOptions, ModelSpec

log = logging.getLogger(__name__)

__all__ = ["OpenAIBackend", "ModelRequestError", "retry_after_seconds", "backoff_delay",
           "make_openai_policy"]

MAX_RETRY_AFTER_S = 120.0


_sleep = asyncio.sleep
"""The backoff sleep (tests replace it to record delays without waiting)."""


class ModelRequestError(HarnessError):
    """A model request failed for good (a client error, or retries exhausted)."""


def retry_after_seconds(headers: Any) -> float | None:
    """The ``Retry-After`` (or ``retry-after-ms``) delay in seconds, when given and sane."""
    if headers is None:
        return None
    value = headers.get("retry-after-ms")
    if value is not None:
        try:
            return min(max(float(value) / 1000, 0.0), MAX_RETRY_AFTER_S)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        seconds = float(value)
    except ValueError:
        try:
            seconds = email.utils.parsedate_to_datetime(value).timestamp() - time.time()
        except (TypeError, ValueError):
            return None
    return min(max(seconds, 0.0), MAX_RETRY_AFTER_S)


def backoff_delay(attempt: int, base: float, cap: float, rng: np.random.Generator,
                  retry_after: float | None = None) -> float:
    """Full-jitter exponential backoff for retry number `attempt` (0-based), at least the
    server's Retry-After."""
    delay = float(rng.uniform(0.0, min(cap, base * 2.0 ** attempt)))
    return max(delay, retry_after or 0.0)


def _completion(choice: dict[str, Any], want_logprobs: bool) -> Completion:
    """A `Completion` from one ``choices[i]`` object of a chat completion response."""
    text = (choice.get("message") or {}).get("content") or ""
    logprobs = top = None
    content = (choice.get("logprobs") or {}).get("content") if want_logprobs else None
    if content:
        logprobs = tuple(float(item["logprob"]) for item in content)
        top = tuple(tuple((t["token"], float(t["logprob"])) for t in item.get("top_logprobs")
                          or ()) for item in content)
    return Completion(text, choice.get("finish_reason") or "stop", None, logprobs, top)


class OpenAIBackend:
    """`ChatBackend` over an OpenAI-compatible ``/v1/chat/completions`` endpoint."""

    def __init__(self, model: str, base_url: str, options: ModelOptions, *,
                 counter: Callable[[Messages], int] | None = None):
        self.transport = make_transport(base_url, options)
        self.model, self.base_url, self.options = model, base_url, options
        self.context_tokens = options.context
        self._counter = counter
        self._rng = make_rng("openai-backoff", base_url, model)
        self._keys = itertools.count()
        self._key_prefix = f"harness-{os.getpid()}-{id(self):x}"
        self._loop: asyncio.AbstractEventLoop | None = None
        self._slots: asyncio.Semaphore | None = None

    def describe(self) -> dict[str, Any]:
        return {"model": self.model, "base_url": self.base_url, "client": self.options.client}

    def count_tokens(self, messages: Messages) -> int:
        if self._counter is not None:
            return self._counter(messages)
        chars = sum(len(m["content"]) + len(m["role"]) + 8 for m in messages)
        return int(np.ceil(chars / self.options.chars_per_token))

    def slots(self) -> asyncio.Semaphore:
        loop = asyncio.get_running_loop()
        if self._loop is not loop or self._slots is None:
            self._loop, self._slots = loop, asyncio.Semaphore(self.options.concurrency)
        return self._slots

    async def aclose(self) -> None:
        """Close this event loop's connections now (they also close when the loop ends)."""
        await self.transport.aclose()

    def _arguments(self, messages: Messages, sampling: Sampling) -> dict[str, Any]:
        arguments: dict[str, Any] = {"model": self.model, "messages": messages,
                                     "max_tokens": sampling.max_tokens,
                                     "temperature": sampling.temperature}
        if sampling.top_p < 1:
            arguments["top_p"] = sampling.top_p
        if sampling.n > 1:
            arguments["n"] = sampling.n
        if sampling.stop:
            arguments["stop"] = list(sampling.stop)
        if sampling.seed is not None:
            arguments["seed"] = sampling.seed
        if sampling.logprobs:
            arguments["logprobs"] = True
            if sampling.top_logprobs:
                arguments["top_logprobs"] = sampling.top_logprobs
        return arguments

    async def chat(self, messages: Messages, sampling: Sampling) -> ChatResult:
        body = orjson.dumps(self._arguments(messages, sampling))
        key = f"{self._key_prefix}-{next(self._keys)}"  # the same on every retry
        options, retries = self.options, 0
        async with self.slots():
            while True:
                try:
                    payload = await self.transport.send(body, key)
                    break
                except RequestFailed as failure:
                    if not failure.retryable:
                        raise ModelRequestError(self._describe(failure)) from failure
                    if retries >= options.max_retries:
                        raise ModelRequestError(f"{self._describe(failure)} (gave up after "
                                                f"{retries} retries)") from failure
                    delay = backoff_delay(retries, options.backoff, options.backoff_max,
                                          self._rng, retry_after_seconds(failure.headers))
                    retries += 1
                    log.debug("retry %d in %.2fs after %s", retries, delay, failure)
                    await _sleep(delay)
        try:
            data = orjson.loads(payload)
        except orjson.JSONDecodeError:
            raise ModelRequestError(f"{self.base_url} sent a reply that is not JSON") from None
        return self._result(data, sampling, retries)

    def _result(self, data: Any, sampling: Sampling, retries: int) -> ChatResult:
        try:
            usage = data.get("usage") or {}
            choices = tuple(_completion(c, sampling.logprobs) for c in
                            sorted(data["choices"], key=lambda c: c.get("index", 0)))
        except (AttributeError, KeyError, TypeError, ValueError) as exc:
            raise ModelRequestError(f"{self.base_url} sent a malformed chat completion: "
                                    f"{type(exc).__name__}: {exc}") from None
        if not choices:
            raise ModelRequestError(f"{self.base_url} returned no choices")
        return ChatResult(choices, prompt_tokens=int(usage.get("prompt_tokens") or 0),
                          completion_tokens=int(usage.get("completion_tokens") or 0),
                          retries=retries)

    def _describe(self, failure: RequestFailed) -> str:
        return f"{self.base_url} (model {self.model!r}): {failure}"


def _tokenizer_counter(path: str) -> Callable[[Messages], int]:
    from harness.policies.hf import load_torch

    _, transformers = load_torch()
    tokenizer = transformers.AutoTokenizer.from_pretrained(path, local_files_only=True)

    def count(messages: Messages) -> int:
        text = tokenizer.apply_chat_template(list(messages), tokenize=False,
                                             add_generation_prompt=True)
        return len(tokenizer(text, add_special_tokens=False).input_ids)

    return count


def make_openai_policy(spec: ModelSpec) -> ModelPolicy:
    """The policy of an ``openai:MODEL@URL`` spec."""
    options = spec.options
    url = spec.url or os.environ.get("OPENAI_BASE_URL") or DEFAULT_OPENAI_URL
    counter = _tokenizer_counter(options.tokenizer) if options.tokenizer else None
    backend = OpenAIBackend(spec.target, url, options, counter=counter)
    return ModelPolicy(spec.spec, backend, options,
                       scaffold=make_scaffold(spec.scaffold_spec()))
