"""What `harness serve` serves: a local model (``hf:PATH`` / ``checkpoint:PATH`` on
transformers, ``vllm:PATH`` on vLLM) or ``echo``.

``echo`` runs no model: a chat reply is the last message's text, a completion is the prompt,
both cut to ``max_tokens`` characters (one "token" per character) and at the first stop
string; it offers no log-probabilities. Its per-request cost is a few microseconds, so a
server in echo mode measures the harness's and the HTTP stack's overhead (`harness bench
llm` uses it).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from harness.core import ConfigError
from harness.policies.batching import BatchQueue
from harness.policies.model import Completion, Sampling
from harness.policies.scaffold import Messages

__all__ = ["Engine", "EchoEngine", "LocalEngine", "Prompted", "build_engine"]


@dataclass(frozen=True)
class Prompted:
    """A request's prompt token ids (when the engine tokenizes), their count, its choices and,
    for echo requests, the prompt's log-probabilities (first entry None)."""

    prompt_tokens: int
    choices: Sequence[Completion]
    prompt_ids: Sequence[int] = ()
    prompt_logprobs: Sequence[float | None] | None = None


class Engine(Protocol):
    name: str
    aliases: frozenset[str]
    context_tokens: int | None
    offers_logprobs: bool

    async def chat(self, messages: Messages, sampling: Sampling, *,
                   clamp: bool = False) -> Prompted:
        """`clamp`: lower ``max_tokens`` to what the context leaves (no max_tokens given)."""
        ...

    async def complete(self, prompt: str | list[int], sampling: Sampling, *, echo: bool,
                       prompt_logprobs: bool) -> Prompted: ...

    def token_text(self, token_id: int) -> str: ...

    def token_bytes(self, token_id: int) -> list[int]: ...

    def describe(self) -> dict[str, Any]: ...


def _cut(text: str, sampling: Sampling) -> Completion:
    cut, reason = text[:sampling.max_tokens], "length" if len(text) > sampling.max_tokens \
        else "stop"
    hits = [cut.find(s) for s in sampling.stop if s in cut]
    if hits:
        cut, reason = cut[:min(hits)], "stop"
    return Completion(cut, reason)


class EchoEngine:
    """Replies with the last message (chat) or the prompt (completions); no model."""

    offers_logprobs = False
    context_tokens = None

    def __init__(self, name: str = "echo"):
        self.name = name
        self.aliases = frozenset({name, "echo"})

    async def chat(self, messages: Messages, sampling: Sampling, *,
                   clamp: bool = False) -> Prompted:
        prompt_tokens = sum(len(m["content"]) for m in messages)
        choice = _cut(messages[-1]["content"], sampling)
        return Prompted(prompt_tokens, [choice] * sampling.n)

    async def complete(self, prompt: str | list[int], sampling: Sampling, *, echo: bool,
                       prompt_logprobs: bool) -> Prompted:
        if not isinstance(prompt, str):
            raise ConfigError("the echo engine takes text prompts only")
        choice = _cut(prompt, sampling)
        if echo:
            choice = Completion(prompt + choice.text, choice.finish_reason)
        return Prompted(len(prompt), [choice] * sampling.n)

    def token_text(self, token_id: int) -> str:
        return chr(token_id)

    def token_bytes(self, token_id: int) -> list[int]:
        return list(chr(token_id).encode())

    def describe(self) -> dict[str, Any]:
        return {"engine": "echo"}


class LocalEngine:
    """A `harness.policies.hf.LocalModel` with batched generation and scoring."""

    offers_logprobs = True

    def __init__(self, model: Any, *, name: str, aliases: Sequence[str] = (),
                 max_batch: int = 16, wait_s: float = 0.002):
        self.model = model
        self.name = name
        self.aliases = frozenset({name, *aliases})
        self.context_tokens = model.context_tokens
        self.generation: BatchQueue = BatchQueue(model.generate, max_batch=max_batch,
                                                 wait_s=wait_s, name="serve-generate")
        self.scoring: BatchQueue = BatchQueue(model.score, max_batch=max_batch, wait_s=wait_s,
                                              name="serve-score")

    async def chat(self, messages: Messages, sampling: Sampling, *,
                   clamp: bool = False) -> Prompted:
        ids = self.model.encode_chat(messages)
        if clamp and self.context_tokens is not None:
            room = max(1, self.context_tokens - len(ids))
            sampling = replace(sampling, max_tokens=min(sampling.max_tokens, room))
        self.model.check_length(len(ids), sampling.max_tokens)
        choices = await self.generation.submit((ids, sampling))
        return Prompted(len(ids), choices, ids)

    async def complete(self, prompt: str | list[int], sampling: Sampling, *, echo: bool,
                       prompt_logprobs: bool) -> Prompted:
        ids = list(prompt) if isinstance(prompt, list) else self.model.encode(prompt)
        vocab = len(self.model.tokenizer)
        if any(token >= vocab for token in ids):
            raise ConfigError(f"token ids must be below the vocabulary size {vocab}")
        self.model.check_length(len(ids), sampling.max_tokens)
        if sampling.max_tokens > 0:
            choices = await self.generation.submit((ids, sampling))
        else:
            choices = [Completion("", "length", (), (), None)] * sampling.n
        scores = None
        if echo and prompt_logprobs:
            scores = [None]
            if len(ids) > 1:
                values = await self.scoring.submit((ids[:1], ids[1:]))
                scores += [float(v) for v in np.asarray(values)]
        return Prompted(len(ids), choices, ids, scores)

    def token_text(self, token_id: int) -> str:
        return self.model.token_text(token_id)

    def token_bytes(self, token_id: int) -> list[int]:
        return self.model.token_bytes(token_id)

    def decode(self, ids: Sequence[int]) -> str:
        return self.model.decode(ids)

    def describe(self) -> dict[str, Any]:
        return self.model.describe()


def build_engine(spec: str, *, name: str | None = None, max_batch: int = 16,
                 wait_s: float = 0.002, threads: int | None = None) -> Engine:
    """``echo``, ``hf:PATH``, ``checkpoint:PATH``, ``vllm:PATH`` (vLLM's engine in its
    worker process) or a bare model directory."""
    if spec == "echo":
        return EchoEngine(name or "echo")
    backend, _, target = spec.partition(":")
    if backend == "vllm" and target:
        from harness.policies.specs import ModelOptions
        from harness.policies.vllm_backend import VLLMEngine

        engine = VLLMEngine(target, ModelOptions(max_batch=max_batch))
        return LocalEngine(engine, name=name or Path(target).name, aliases=(spec, target),
                           max_batch=max_batch, wait_s=wait_s)
    if backend not in ("hf", "checkpoint") or not target:
        backend, target = "hf", spec
    from harness.policies.hf import LocalModel

    path = Path(target)
    if backend == "checkpoint":
        from harness.policies.checkpoint import read_checkpoint, resolve_checkpoint

        path = resolve_checkpoint(path)
        read_checkpoint(path)
    model = LocalModel(path, threads=threads)
    return LocalEngine(model, name=name or path.name, aliases=(spec, target, str(path)),
                       max_batch=max_batch, wait_s=wait_s)
