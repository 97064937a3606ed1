"""Adapters from the harness's model backends to `signals.model.LanguageModel`.

- `LocalLanguageModel` (``hf:PATH``, ``checkpoint:PATH``): a `harness.policies.hf.LocalModel`.
  Scoring is one teacher-forced forward pass per batch of full sequences (right padding),
  giving exact token log-probabilities and next-token entropies; generation is the model's
  own batched decoding. (Sharing the prompt's KV cache across candidates was measured slower
  on CPU than batching full sequences, so it is not done.)
- `ServedLanguageModel` (``openai:MODEL@URL``): any OpenAI-compatible server with the legacy
  ``/v1/completions`` endpoint (vLLM, ``harness serve``). A continuation is scored with
  ``echo=True, max_tokens=0, logprobs=k`` on prompt + continuation; the prompt's own token
  count comes from the same request on the prompt alone, so the continuation's tokens are
  those after it. Entropies come from the echoed top-k log-probabilities where the server
  reports them for prompt tokens (vLLM); otherwise (``harness serve``) from one
  ``max_tokens=1, logprobs=k`` request per continuation position. Either way they are
  entropies of the top-k distribution renormalised, a lower bound of the exact one.
  Chat messages become prompt text through a local tokenizer's chat template (the
  ``tokenizer`` option) or, without one, ChatML (Qwen's format, which the tiny models use).
  Generation goes through ``/v1/chat/completions``.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from harness.core import ConfigError, HarnessError, MissingDependencyError, make_rng
from harness.policies.model import Sampling
from harness.policies.openai_backend import (ModelRequestError, backoff_delay,
                                             retry_after_seconds)
from harness.policies.specs import DEFAULT_OPENAI_URL, ModelSpec, parse_model_spec
from signals.model import Messages, TokenScores

log = logging.getLogger(__name__)

__all__ = ["LocalLanguageModel", "ServedLanguageModel", "chatml", "load_language_model",
           "topk_entropy"]

SCORE_BATCH = 16
MEMO_SIZE = 100_000
"""Scored (prompt, continuation) pairs kept per adapter: signals of one family ask for the
same pairs (logprob sum and mean, entropy and its normalised form, the unhinted prompt of
both self-distillation methods), so each is computed once."""


def _memo_key(messages: Messages, text: str) -> str:
    return json.dumps([messages, text])


def chatml(messages: Messages) -> str:
    """ChatML text of `messages` with the assistant's turn opened (generation prompt)."""
    body = "".join(f"<|im_start|>{m['role']}\n{m['content']}<|im_end|>\n" for m in messages)
    return body + "<|im_start|>assistant\n"


def topk_entropy(top: dict[str, float] | None) -> float:
    """Entropy (nats) of the renormalised distribution over the given ``{token: logprob}``."""
    if not top:
        return float("nan")
    logp = np.array(list(top.values()), dtype=float)
    p = np.exp(logp - logp.max())
    p /= p.sum()
    return float(-(p * np.log(np.clip(p, 1e-300, None))).sum())


class LocalLanguageModel:
    """`LanguageModel` over a `harness.policies.hf.LocalModel`."""

    def __init__(self, model: Any, name: str, *, batch_size: int = SCORE_BATCH):
        self.model, self.name, self.batch_size = model, name, batch_size
        self._prompt_ids: dict[str, list[int]] = {}
        self._memo: dict[str, TokenScores] = {}

    def clear_cache(self) -> None:
        """Forget memoised scores (benches measure each method's own cost)."""
        self._memo.clear()

    def _encode_prompt(self, messages: Messages) -> list[int]:
        key = json.dumps(messages)
        if key not in self._prompt_ids:
            self._prompt_ids[key] = self.model.encode_chat(messages)
        return self._prompt_ids[key]

    def _score_batch(self, pairs: list[tuple[list[int], list[int]]]) -> list[TokenScores]:
        torch = self.model.torch
        rows = [p + c for p, c in pairs]
        width = max(map(len, rows))
        ids = torch.full((len(rows), width), self.model.pad_id, dtype=torch.long)
        mask = torch.zeros((len(rows), width), dtype=torch.long)
        for i, row in enumerate(rows):
            ids[i, :len(row)] = torch.tensor(row)
            mask[i, :len(row)] = 1
        with torch.no_grad():
            logits = self.model.model(input_ids=ids.to(self.model.device),
                                      attention_mask=mask.to(self.model.device)).logits
        out = []
        for i, (prompt, cont) in enumerate(pairs):
            positions = torch.arange(len(prompt) - 1, len(prompt) - 1 + len(cont))
            logp = torch.log_softmax(logits[i, positions].float(), dim=-1)
            targets = torch.tensor(cont, dtype=torch.long, device=logp.device)
            chosen = logp[torch.arange(len(cont)), targets]
            entropy = -(logp.exp() * logp).sum(dim=-1)
            out.append(TokenScores(chosen.cpu().numpy().astype(np.float64),
                                   entropy.cpu().numpy().astype(np.float64)))
        return out

    def _score_todo(self, todo: dict[str, tuple[list[int], list[int]]]) -> None:
        order = sorted(todo, key=lambda k: len(todo[k][0]) + len(todo[k][1]))
        for start in range(0, len(order), self.batch_size):
            chunk = order[start:start + self.batch_size]
            self._memo.update(zip(chunk, self._score_batch([todo[k] for k in chunk])))

    def score(self, prompts: Sequence[Messages], continuations: Sequence[str], *,
              with_entropy: bool = False) -> list[TokenScores]:
        keys = [_memo_key(m, t) for m, t in zip(prompts, continuations, strict=True)]
        todo: dict[str, tuple[list[int], list[int]]] = {}
        for key, messages, text in zip(keys, prompts, continuations):
            if key in self._memo or key in todo:
                continue
            prompt, cont = self._encode_prompt(messages), self.model.encode(text)
            if not cont:
                raise HarnessError("cannot score an empty continuation")
            self.model.check_length(len(prompt) + len(cont), 0)
            todo[key] = (prompt, cont)
        if len(self._memo) + len(todo) > MEMO_SIZE:
            self._memo.clear()
        self._score_todo(todo)
        return [self._memo[key] for key in keys]

    def generate(self, prompts: Sequence[Messages], *, max_tokens: int,
                 temperature: float = 0.0, seed: int = 0) -> list[str]:
        texts: list[str] = []
        for start in range(0, len(prompts), self.batch_size):
            requests = []
            for k, messages in enumerate(prompts[start:start + self.batch_size]):
                ids = self._encode_prompt(messages)
                self.model.check_length(len(ids), max_tokens)
                requests.append((ids, Sampling(temperature=temperature, max_tokens=max_tokens,
                                               seed=seed + start + k)))
            texts += [choices[0].text for choices in self.model.generate(requests)]
        return texts


def _status(exc: Exception) -> int | None:
    return getattr(exc, "status_code", None)


class ServedLanguageModel:
    """`LanguageModel` over an OpenAI-compatible server (see the module docstring)."""

    def __init__(self, model: str, base_url: str, *, concurrency: int = 16, top_k: int = 20,
                 timeout: float = 60.0, max_retries: int = 8, backoff: float = 0.25,
                 backoff_max: float = 20.0, api_key_env: str = "OPENAI_API_KEY",
                 template: Callable[[Messages], str] = chatml):
        try:
            import openai
        except ImportError:
            raise MissingDependencyError("openai", "llm", "served models") from None
        self.openai = openai
        self.name, self.base_url, self.template = model, base_url.rstrip("/"), template
        self.concurrency, self.top_k, self.timeout = concurrency, top_k, timeout
        self.max_retries, self.backoff, self.backoff_max = max_retries, backoff, backoff_max
        self.api_key = os.environ.get(api_key_env) or "EMPTY"
        self._rng = make_rng("signals/served-backoff", base_url, model)
        self._prompt_tokens: dict[str, int] = {}
        self._memo: dict[str, TokenScores] = {}

    def clear_cache(self) -> None:
        """Forget memoised scores (benches measure each method's own cost)."""
        self._memo.clear()

    # -- requests -----------------------------------------------------------------------------
    async def _call(self, slots: asyncio.Semaphore, create: Callable[[], Any]) -> Any:
        retries = 0
        async with slots:
            while True:
                try:
                    return await create()
                except (self.openai.APITimeoutError, self.openai.APIConnectionError,
                        self.openai.APIStatusError) as exc:
                    status = _status(exc)
                    retryable = status is None or status in (408, 409, 429) or status >= 500
                    if not retryable or retries >= self.max_retries:
                        raise ModelRequestError(f"{self.base_url} (model {self.name!r}): "
                                                f"{exc}") from exc
                    headers = getattr(getattr(exc, "response", None), "headers", None)
                    await asyncio.sleep(backoff_delay(retries, self.backoff, self.backoff_max,
                                                      self._rng, retry_after_seconds(headers)))
                    retries += 1

    def _run(self, jobs: Callable[[Any, asyncio.Semaphore], list]) -> list:
        async def main() -> list:
            client = self.openai.AsyncOpenAI(base_url=self.base_url, api_key=self.api_key,
                                             max_retries=0, timeout=self.timeout)
            slots = asyncio.Semaphore(self.concurrency)
            try:
                return await asyncio.gather(*jobs(client, slots))
            finally:
                await client.close()
        return asyncio.run(main())

    def _echo(self, client: Any, slots: asyncio.Semaphore, text: str, *, top: int = 1):
        return self._call(slots, lambda: client.completions.create(
            model=self.name, prompt=text, max_tokens=0, echo=True, logprobs=top,
            temperature=0.0))

    def _next_token(self, client: Any, slots: asyncio.Semaphore, text: str):
        return self._call(slots, lambda: client.completions.create(
            model=self.name, prompt=text, max_tokens=1, logprobs=self.top_k, temperature=0.0))

    # -- LanguageModel ------------------------------------------------------------------------
    def _count_prompts(self, texts: list[str]) -> None:
        todo = sorted({t for t in texts if t not in self._prompt_tokens})
        if not todo:
            return
        responses = self._run(lambda c, s: [self._echo(c, s, t) for t in todo])
        for text, response in zip(todo, responses):
            self._prompt_tokens[text] = len(response.choices[0].logprobs.tokens)

    def score(self, prompts: Sequence[Messages], continuations: Sequence[str], *,
              with_entropy: bool = False) -> list[TokenScores]:
        keys = [_memo_key(m, t) for m, t in zip(prompts, continuations, strict=True)]
        todo: dict[str, tuple[Messages, str]] = {}
        for key, messages, text in zip(keys, prompts, continuations):
            known = self._memo.get(key)
            if (known is None or (with_entropy and known.entropies is None)) and key not in todo:
                todo[key] = (list(messages), text)
        if todo:
            if len(self._memo) + len(todo) > MEMO_SIZE:
                self._memo.clear()
            fresh = self._score([m for m, _ in todo.values()], [t for _, t in todo.values()],
                                with_entropy)
            self._memo.update(zip(todo, fresh))
        return [self._memo[key] for key in keys]

    def _score(self, prompts: list[Messages], continuations: list[str],
               with_entropy: bool) -> list[TokenScores]:
        texts = [self.template(m) for m in prompts]
        self._count_prompts(texts)
        top = self.top_k if with_entropy else 1
        responses = self._run(lambda c, s: [self._echo(c, s, t + x, top=top)
                                            for t, x in zip(texts, continuations)])
        out, pending = [], []
        for k, (text, response) in enumerate(zip(texts, responses)):
            logprobs = response.choices[0].logprobs
            start = self._prompt_tokens[text]
            values = np.array([float(v) for v in logprobs.token_logprobs[start:]])
            if values.size == 0:
                raise HarnessError("the server returned no tokens for a continuation")
            entropies = None
            if with_entropy:
                tops = (logprobs.top_logprobs or [])[start:]
                if len(tops) == values.size and all(tops):
                    entropies = np.array([topk_entropy(t) for t in tops])
                else:
                    tokens = logprobs.tokens[start:]
                    pending += [(k, j, text + "".join(tokens[:j])) for j in range(len(tokens))]
            out.append(TokenScores(values, entropies))
        if pending:
            replies = self._run(lambda c, s: [self._next_token(c, s, p) for _, _, p in pending])
            by_point: dict[int, list[float]] = {}
            for (k, _, _), reply in zip(pending, replies):
                tops = reply.choices[0].logprobs.top_logprobs or [None]
                by_point.setdefault(k, []).append(topk_entropy(tops[0]))
            out = [TokenScores(s.logprobs, np.array(by_point[k])) if k in by_point else s
                   for k, s in enumerate(out)]
        return out

    def generate(self, prompts: Sequence[Messages], *, max_tokens: int,
                 temperature: float = 0.0, seed: int = 0) -> list[str]:
        def jobs(client: Any, slots: asyncio.Semaphore) -> list:
            return [self._call(slots, lambda m=list(m), k=k: client.chat.completions.create(
                model=self.name, messages=m, max_tokens=max_tokens, temperature=temperature,
                seed=seed + k)) for k, m in enumerate(prompts)]
        return [r.choices[0].message.content or "" for r in self._run(jobs)]


def _tokenizer_template(path: str) -> Callable[[Messages], str]:
    from harness.policies.hf import load_torch

    _, transformers = load_torch()
    tokenizer = transformers.AutoTokenizer.from_pretrained(path, local_files_only=True)
    return lambda messages: tokenizer.apply_chat_template(messages, tokenize=False,
                                                          add_generation_prompt=True)


def load_language_model(spec: str) -> Any:
    """A `signals.model.LanguageModel` for an ``hf:PATH``, ``checkpoint:PATH`` or
    ``openai:MODEL@URL`` spec (`harness.policies.specs`; sampling options are ignored)."""
    parsed: ModelSpec = parse_model_spec(spec)
    options = parsed.options
    if parsed.backend == "openai":
        url = parsed.url or os.environ.get("OPENAI_BASE_URL") or DEFAULT_OPENAI_URL
        template = _tokenizer_template(options.tokenizer) if options.tokenizer else chatml
        return ServedLanguageModel(parsed.target, url, concurrency=options.concurrency,
                                   top_k=max(options.top_logprobs, 0) or 20,
                                   timeout=options.timeout, max_retries=options.max_retries,
                                   backoff=options.backoff, backoff_max=options.backoff_max,
                                   api_key_env=options.api_key_env, template=template)
    from harness.policies.hf import LocalModel

    path = parsed.target
    if parsed.backend == "checkpoint":
        from harness.policies.checkpoint import read_checkpoint, resolve_checkpoint

        path = resolve_checkpoint(path)
        read_checkpoint(path)
    elif parsed.backend != "hf":
        raise ConfigError(f"signals run on hf, checkpoint or openai models, not "
                          f"{parsed.backend!r} (serve a vLLM model and use openai:MODEL@URL)")
    model = LocalModel(path, device=options.device, dtype=options.dtype,
                       threads=options.threads)
    return LocalLanguageModel(model, spec, batch_size=options.max_batch)
