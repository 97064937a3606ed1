"""The ``hf`` backend: a transformers model and tokenizer from a local path, in-process.

`LocalModel` does the torch work: batched generation (left padding, a KV cache, greedy or
temperature/top-p sampling with one seeded ``torch.Generator`` per sequence, so a seeded
sample is the same whatever else shares its batch), stop strings and end-of-sequence, the
model's raw log-probabilities of each generated token (before temperature or top-p, as vLLM
reports them by default), and `score`: exact log-probabilities of given continuations from
one forward pass. `HFBackend` puts a `BatchQueue` in front of it so that concurrent episodes
decode together. Nothing is downloaded (``local_files_only``).
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import orjson

from harness.core import ConfigError, HarnessError, derive_seed, require
from harness.policies.batching import BatchQueue
from harness.policies.model import ChatResult, Completion, ModelPolicy, Sampling
from harness.policies.scaffold import Messages, make_scaffold
from harness.policies.specs import ModelOptions, ModelSpec

log = logging.getLogger(__name__)

__all__ = ["LocalModel", "HFBackend", "ContextOverflowError", "make_hf_policy", "load_torch",
           "weights_digest", "location_free_key"]

WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth")


class ContextOverflowError(HarnessError):
    """A prompt plus its completion budget exceeds the model's context length."""


def load_torch() -> tuple[Any, Any]:
    """``(torch, transformers)``, or MissingDependencyError naming the ``train`` extra."""
    return require("torch", "train", "local models"), require("transformers", "train",
                                                              "local models")


@dataclass
class _Row:
    """One sequence being decoded: request `index`, choice `choice`."""

    index: int
    choice: int
    sampling: Sampling
    generator: Any
    tokens: list[int]
    logprobs: list[float]
    top: list[tuple[tuple[int, float], ...]]
    finish: str | None = None
    text: str | None = None


class LocalTokenizer:
    """The tokenizer of the model directory `path` (Hugging Face layout) and the model's
    context length: the text side of a local model, whichever engine runs it."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        if not (self.path / "config.json").is_file():
            raise ConfigError(f"{self.path} is not a model directory (no config.json)")
        _, transformers = load_torch()
        self.tokenizer = transformers.AutoTokenizer.from_pretrained(self.path,
                                                                    local_files_only=True)
        config = orjson.loads((self.path / "config.json").read_bytes())
        self.context_tokens: int | None = (config.get("max_position_embeddings")
                                           or config.get("n_positions"))
        self._byte_decoder: dict[str, int] | None = None

    # ---- text and tokens --------------------------------------------------------------------

    def encode_chat(self, messages: Messages) -> list[int]:
        """Prompt ids of `messages` through the tokenizer's chat template."""
        text = self.tokenizer.apply_chat_template(list(messages), tokenize=False,
                                                  add_generation_prompt=True)
        return self.encode(text)

    def encode(self, text: str) -> list[int]:
        return list(self.tokenizer(text, add_special_tokens=False).input_ids)

    def decode(self, ids: Sequence[int]) -> str:
        return self.tokenizer.decode(list(ids), skip_special_tokens=True)

    def token_text(self, token_id: int) -> str:
        return self.tokenizer.decode([token_id], skip_special_tokens=False)

    def token_bytes(self, token_id: int) -> list[int]:
        """The raw bytes of one token (byte-level BPE pieces mapped back to bytes)."""
        from harness.policies.tiny import bytes_to_unicode

        if self._byte_decoder is None:
            self._byte_decoder = {char: byte for byte, char in bytes_to_unicode().items()}
        piece = self.tokenizer.convert_ids_to_tokens(int(token_id))
        if isinstance(piece, str) and piece and all(ch in self._byte_decoder for ch in piece):
            return [self._byte_decoder[ch] for ch in piece]
        return list(self.token_text(token_id).encode())

    def check_length(self, prompt_tokens: int, max_tokens: int) -> None:
        if self.context_tokens is not None and prompt_tokens + max_tokens > self.context_tokens:
            raise ContextOverflowError(
                f"prompt of {prompt_tokens} tokens plus max_tokens={max_tokens} exceeds the "
                f"model's context of {self.context_tokens} tokens")


class LocalModel(LocalTokenizer):
    """A causal LM and its tokenizer, loaded from `path` (Hugging Face layout)."""

    def __init__(self, path: str | Path, *, device: str = "cpu", dtype: str = "float32",
                 threads: int | None = None):
        super().__init__(path)
        torch, transformers = load_torch()
        self.torch = torch
        if threads:
            torch.set_num_threads(threads)
        if not hasattr(torch, dtype):
            raise ConfigError(f"unknown torch dtype {dtype!r}")
        self.model = transformers.AutoModelForCausalLM.from_pretrained(
            self.path, dtype=getattr(torch, dtype), local_files_only=True).to(device).eval()
        self.device = device
        self._forward_args: set[str] | None = None
        self.eos_ids = self._eos_ids()
        self.pad_id = (self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None
                       else self.eos_ids[0])

    def _cache_kwargs(self, past: Any) -> dict[str, Any]:
        """The KV cache argument (``cache`` in newer transformers, ``past_key_values`` before)
        and, where supported, only the last position's logits."""
        if self._forward_args is None:
            import inspect

            self._forward_args = set(inspect.signature(self.model.forward).parameters)
        kwargs = {"cache" if "cache" in self._forward_args else "past_key_values": past}
        if "logits_to_keep" in self._forward_args:
            kwargs["logits_to_keep"] = 1
        return kwargs

    def _eos_ids(self) -> list[int]:
        ids = self.model.generation_config.eos_token_id
        ids = list(ids) if isinstance(ids, (list, tuple)) else ([ids] if ids is not None else [])
        if self.tokenizer.eos_token_id is not None and self.tokenizer.eos_token_id not in ids:
            ids.append(self.tokenizer.eos_token_id)
        return ids

    def describe(self) -> dict[str, Any]:
        config = self.model.config
        return {"model_path": str(self.path), "architecture": config.model_type,
                "parameters": sum(p.numel() for p in self.model.parameters()),
                "context": self.context_tokens}

    # ---- scoring ----------------------------------------------------------------------------

    def score(self, pairs: Sequence[tuple[Sequence[int], Sequence[int]]]) -> list[np.ndarray]:
        """Log-probabilities of each continuation given its prompt, one forward pass for the
        batch (right padding). Returns one array per pair, shape ``(len(continuation),)``."""
        torch = self.torch
        rows = [list(prompt) + list(cont) for prompt, cont in pairs]
        if any(not prompt for prompt, _ in pairs):
            raise ConfigError("scoring needs a non-empty prompt")
        width = max(map(len, rows))
        ids = torch.full((len(rows), width), self.pad_id, dtype=torch.long)
        mask = torch.zeros((len(rows), width), dtype=torch.long)
        for i, row in enumerate(rows):
            ids[i, :len(row)] = torch.tensor(row)
            mask[i, :len(row)] = 1
        with torch.no_grad():
            logits = self.model(input_ids=ids.to(self.device),
                                attention_mask=mask.to(self.device)).logits.float()
            logprobs = torch.log_softmax(logits, dim=-1)
        out = []
        for i, (prompt, cont) in enumerate(pairs):
            start = len(prompt) - 1
            positions = torch.arange(start, start + len(cont))
            targets = torch.tensor(list(cont), dtype=torch.long)
            out.append(logprobs[i, positions, targets].cpu().numpy().astype(np.float64))
        return out

    # ---- generation -------------------------------------------------------------------------

    def _rows(self, requests: Sequence[tuple[Sequence[int], Sampling]]) -> list[_Row]:
        rows = []
        for index, (_, sampling) in enumerate(requests):
            for choice in range(sampling.n):
                generator = None
                if sampling.temperature > 0:
                    generator = self.torch.Generator(device=self.device)
                    seed = sampling.seed if sampling.seed is not None else 0
                    generator.manual_seed(derive_seed(seed, choice))
                rows.append(_Row(index, choice, sampling, generator, [], [], []))
        return rows

    def _pick(self, row: _Row, logits: Any, logprobs: Any) -> int:
        torch = self.torch
        sampling = row.sampling
        if sampling.temperature <= 0:
            return int(torch.argmax(logits))
        probs = torch.softmax(logits / sampling.temperature, dim=-1)
        if sampling.top_p < 1.0:
            sorted_probs, order = torch.sort(probs, descending=True)
            keep = torch.cumsum(sorted_probs, dim=-1) - sorted_probs < sampling.top_p
            probs = torch.zeros_like(probs).scatter(0, order[keep], sorted_probs[keep])
        return int(torch.multinomial(probs, 1, generator=row.generator))

    def _advance(self, row: _Row, token: int, logprobs: Any) -> None:
        row.tokens.append(token)
        row.logprobs.append(float(logprobs[token]))
        if row.sampling.top_logprobs:
            values, ids = self.torch.topk(logprobs, row.sampling.top_logprobs)
            row.top.append(tuple((int(i), float(v)) for v, i in zip(values, ids)))
        if token in self.eos_ids:
            row.finish = "stop"
            row.text = self.decode(row.tokens[:-1])
            return
        if row.sampling.stop:
            text = self.decode(row.tokens)
            hits = [text.find(s) for s in row.sampling.stop if s and s in text]
            if hits:
                row.finish, row.text = "stop", text[:min(hits)]
                return
        if len(row.tokens) >= row.sampling.max_tokens:
            row.finish, row.text = "length", self.decode(row.tokens)

    def generate(self, requests: Sequence[tuple[Sequence[int], Sampling]]
                 ) -> list[list[Completion]]:
        """Complete every ``(prompt ids, sampling)`` request (``sampling.n`` choices each) in
        one batch. Returns the completions per request, in order."""
        torch = self.torch
        rows = self._rows(requests)
        prompts = [list(requests[row.index][0]) for row in rows]
        width = max(map(len, prompts))
        ids = torch.full((len(rows), width), self.pad_id, dtype=torch.long)
        mask = torch.zeros((len(rows), width), dtype=torch.long)
        for i, prompt in enumerate(prompts):
            ids[i, width - len(prompt):] = torch.tensor(prompt)
            mask[i, width - len(prompt):] = 1
        ids, mask = ids.to(self.device), mask.to(self.device)
        positions = (mask.cumsum(-1) - 1).clamp(min=0)
        past = None
        with torch.no_grad():
            while True:
                out = self.model(input_ids=ids, attention_mask=mask, position_ids=positions,
                                 use_cache=True, **self._cache_kwargs(past))
                past = out.get("cache" if "cache" in self._forward_args else "past_key_values")
                logits = out.logits[:, -1, :].float()
                logprobs = torch.log_softmax(logits, dim=-1)
                nxt = []
                for i, row in enumerate(rows):
                    if row.finish is None:
                        token = self._pick(row, logits[i], logprobs[i])
                        self._advance(row, token, logprobs[i])
                        nxt.append(token)
                    else:
                        nxt.append(self.pad_id)
                if all(row.finish is not None for row in rows):
                    break
                ids = torch.tensor(nxt, dtype=torch.long, device=self.device)[:, None]
                mask = torch.cat([mask, torch.ones_like(ids)], dim=1)
                positions = positions[:, -1:] + 1
        return self._completions(rows, len(requests))

    def _completions(self, rows: list[_Row], n_requests: int) -> list[list[Completion]]:
        result: list[list[Completion]] = [[] for _ in range(n_requests)]
        for row in rows:
            top = top_ids = None
            if row.sampling.top_logprobs:
                top = tuple(tuple((self.token_text(i), lp) for i, lp in step) for step in row.top)
                top_ids = tuple(tuple(i for i, _ in step) for step in row.top)
            result[row.index].append(Completion(
                text=row.text or "", finish_reason=row.finish or "length",
                token_ids=tuple(row.tokens), logprobs=tuple(row.logprobs),
                top_logprobs=top, top_ids=top_ids))
        return result


class HFBackend:
    """`ChatBackend` over a `LocalModel`, batching concurrent requests."""

    def __init__(self, model: LocalModel, *, max_batch: int = 16, wait_s: float = 0.002):
        self.model = model
        self.context_tokens = model.context_tokens
        self.queue: BatchQueue = BatchQueue(model.generate, max_batch=max_batch, wait_s=wait_s,
                                            name="hf")

    def count_tokens(self, messages: Messages) -> int:
        return len(self.model.encode_chat(messages))

    def describe(self) -> dict[str, Any]:
        return self.model.describe()

    async def chat(self, messages: Messages, sampling: Sampling) -> ChatResult:
        prompt = self.model.encode_chat(messages)
        self.model.check_length(len(prompt), sampling.max_tokens)
        choices = await self.queue.submit((prompt, sampling))
        if not sampling.logprobs:
            choices = [Completion(c.text, c.finish_reason, c.token_ids) for c in choices]
        return ChatResult(tuple(choices), prompt_tokens=len(prompt),
                          completion_tokens=sum(len(c.token_ids or ()) for c in choices))


def local_model(spec: ModelSpec) -> LocalModel:
    options = spec.options
    return LocalModel(spec.target, device=options.device, dtype=options.dtype,
                      threads=options.threads)


def make_hf_backend(model: LocalModel, options: ModelOptions) -> HFBackend:
    return HFBackend(model, max_batch=options.max_batch, wait_s=options.batch_wait_ms / 1000)


def weights_digest(path: str | Path) -> str:
    """SHA-256 (hex) over the weight files of the model directory `path` (names and
    contents, in name order); "" when `path` is not a directory with weight files."""
    path = Path(path)
    files = sorted(f for f in path.glob("*") if f.suffix in WEIGHT_SUFFIXES and f.is_file()) \
        if path.is_dir() else []
    if not files:
        return ""
    digest = hashlib.sha256()
    for file in files:
        digest.update(file.name.encode() + b"\0")
        with file.open("rb") as handle:
            while chunk := handle.read(1 << 20):
                digest.update(chunk)
    return digest.hexdigest()


def location_free_key(spec: ModelSpec, path: str | Path) -> str | None:
    """The spec string with the model's directory replaced by its weights' digest (None when
    `path` holds no weight files, e.g. a hub model name): the key a policy's sampling RNG
    derives from, so that the same weights sample the same wherever they are stored."""
    digest = weights_digest(path)
    if not digest or spec.target not in spec.spec:
        return None
    return spec.spec.replace(spec.target, f"sha256:{digest[:32]}", 1)


def make_hf_policy(spec: ModelSpec) -> ModelPolicy:
    """The policy of an ``hf:PATH`` spec."""
    model = local_model(spec)
    return ModelPolicy(spec.spec, make_hf_backend(model, spec.options), spec.options,
                       scaffold=make_scaffold(spec.scaffold_spec()),
                       rng_key=location_free_key(spec, spec.target))
