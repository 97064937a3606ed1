"""The HF generation engine: batched sampling with a KV cache, returning the sampled token ids
and their behaviour log-probabilities (under the tempered sampling distribution).

Prompts that are token-for-token identical (G episodes of a group start from the same state)
are prefilled once and their cache rows copied, which is exact: a row's logits depend only on
its own tokens. Sampling draws from one `torch.Generator` seeded by the caller, so the same
seed and the same prompts give the same samples.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from harness.train.model import model_kwargs

__all__ = ["Sample", "Engine", "HFEngine"]


@dataclass(frozen=True)
class Sample:
    """One sampled reply. ids: the sampled token ids (ending with the end-of-turn token when
    `finished`); logprobs: the behaviour log-probability of each id, same length."""

    ids: tuple[int, ...]
    logprobs: tuple[float, ...]
    finished: bool


class Engine(Protocol):
    """Anything that samples replies to token-id prompts and follows the learner's weights."""

    def generate(self, prompts: Sequence[Sequence[int]], *, max_new_tokens: int,
                 temperature: float, greedy: bool, seed: int) -> list[Sample]: ...

    def sync(self, model: Any) -> None: ...


class HFEngine:
    """Sampling with a transformers causal LM (the learner's own module: `sync` is free)."""

    def __init__(self, model: Any, *, eos_id: int, pad_id: int, batch: int = 1024):
        self.model, self.eos_id, self.pad_id, self.batch = model, eos_id, pad_id, batch
        self._cache_kw = model_kwargs(model)

    def sync(self, model: Any) -> None:
        self.model = model

    def generate(self, prompts: Sequence[Sequence[int]], *, max_new_tokens: int,
                 temperature: float = 1.0, greedy: bool = False, seed: int = 0) -> list[Sample]:
        """Sample one reply per prompt (greedy: argmax). Returns one `Sample` per prompt."""
        import torch

        generator = torch.Generator(device="cpu").manual_seed(int(seed))
        unique: dict[tuple[int, ...], int] = {}
        rows = [unique.setdefault(tuple(p), len(unique)) for p in prompts]
        keys = list(unique)
        results: list[Sample | None] = [None] * len(prompts)
        by_unique: dict[int, list[int]] = {}
        for i, u in enumerate(rows):
            by_unique.setdefault(u, []).append(i)
        order = sorted(range(len(keys)), key=lambda u: len(keys[u]))
        start = 0
        while start < len(order):
            chunk, n_rows = [], 0
            while start < len(order) and (not chunk or n_rows + len(by_unique[order[start]])
                                          <= self.batch):
                chunk.append(order[start])
                n_rows += len(by_unique[order[start]])
                start += 1
            members = [i for u in chunk for i in by_unique[u]]
            expand = [k for k, u in enumerate(chunk) for _ in by_unique[u]]
            samples = self._generate_chunk([keys[u] for u in chunk], expand, max_new_tokens,
                                           temperature, greedy, generator)
            for i, sample in zip(members, samples):
                results[i] = sample
        return results  # type: ignore[return-value]

    def _generate_chunk(self, prompts: list[tuple[int, ...]], expand: list[int],
                        max_new_tokens: int, temperature: float, greedy: bool,
                        generator: Any) -> list[Sample]:
        import torch
        from transformers import DynamicCache

        from harness.train.learner import shared_prefix_length

        model = self.model
        device = next(model.parameters()).device
        shared = shared_prefix_length(prompts, limit=min(len(p) for p in prompts) - 1)
        width = max(len(p) for p in prompts) - shared
        ids = torch.full((len(prompts), width), self.pad_id, dtype=torch.long)
        mask = torch.zeros((len(prompts), shared + width), dtype=torch.long)
        mask[:, :shared] = 1
        for row, prompt in enumerate(prompts):
            ids[row, width - len(prompt) + shared:] = torch.tensor(prompt[shared:])
            mask[row, shared + width - len(prompt) + shared:] = 1
        positions = (mask.cumsum(-1) - 1).clamp(min=0)[:, shared:]
        ids, mask, positions = ids.to(device), mask.to(device), positions.to(device)
        cache = DynamicCache()
        was_training = model.training
        model.eval()
        try:
            with torch.no_grad():
                if shared:
                    prefix = torch.tensor([prompts[0][:shared]], device=device)
                    model(input_ids=prefix, use_cache=True, logits_to_keep=1,
                          **{self._cache_kw: cache})
                    cache.batch_repeat_interleave(len(prompts))
                out = model(input_ids=ids, attention_mask=mask, position_ids=positions,
                            use_cache=True, logits_to_keep=1, **{self._cache_kw: cache})
                index = torch.tensor(expand, device=device)
                cache.reorder_cache(index)
                logits = out.logits[:, -1].float()[index]
                mask, last = mask[index], positions[index, -1]
                tokens, logps = self._decode(model, cache, logits, mask, last, max_new_tokens,
                                             temperature, greedy, generator)
        finally:
            model.train(was_training)
        return self._samples(tokens, logps)

    def _decode(self, model: Any, cache: Any, logits: Any, mask: Any, last: Any,
                max_new_tokens: int, temperature: float, greedy: bool, generator: Any):
        import torch

        n = logits.shape[0]
        tokens = torch.full((n, max_new_tokens), -1, dtype=torch.long)
        logps = torch.zeros((n, max_new_tokens))
        finished = torch.zeros(n, dtype=torch.bool)
        for t in range(max_new_tokens):
            logp_all = torch.log_softmax(logits / temperature, dim=-1).cpu()
            if greedy:
                token = logp_all.argmax(-1)
            else:
                token = torch.multinomial(logp_all.exp(), 1, generator=generator).squeeze(-1)
            token = torch.where(finished, torch.full_like(token, -1), token)
            tokens[:, t] = token
            logps[:, t] = torch.where(finished, 0.0,
                                      logp_all.gather(-1, token.clamp(min=0)[:, None])[:, 0])
            finished |= token == self.eos_id
            if bool(finished.all()) or t == max_new_tokens - 1:
                break
            feed = torch.where(token < 0, self.pad_id, token).to(logits.device)
            mask = torch.cat([mask, torch.ones_like(mask[:, :1])], dim=1)
            last = last + 1
            out = model(input_ids=feed[:, None], attention_mask=mask, position_ids=last[:, None],
                        use_cache=True, **{self._cache_kw: cache})
            logits = out.logits[:, -1].float()
        return tokens, logps

    def _samples(self, tokens: Any, logps: Any) -> list[Sample]:
        out = []
        for row_tokens, row_logps in zip(tokens.tolist(), logps.tolist()):
            length = next((k for k, tok in enumerate(row_tokens) if tok < 0), len(row_tokens))
            ids = tuple(row_tokens[:length])
            out.append(Sample(ids, tuple(row_logps[:length]),
                              bool(ids) and ids[-1] == self.eos_id))
        return out
