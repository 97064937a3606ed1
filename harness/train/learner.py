"""The learner: PPO-style updates of a transformers causal LM on `TrainSample`s.

AdamW, a constant or cosine schedule with linear warm-up, global-norm gradient clipping,
``epochs`` passes of ``minibatches`` optimizer steps, gradient accumulation over micro-batches
whose loss denominators span the whole minibatch (so the loss and the gradient do not depend
on the micro-batch size), bf16 autocast on a GPU, an optional value head (PPO) and a frozen
reference for the KL term.

Two exact savings: a sample whose every loss term is zero (advantage 0 on every sampled
token, no KL, entropy or value term) is not forwarded at all, and token-identical samples in
a micro-batch are forwarded once (each keeps its own advantage and behaviour log-probs).
"""

from __future__ import annotations

import math
import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from harness.core import make_rng
from harness.train.config import AlgorithmConfig, OptimConfig
from harness.train.loss import Denominators, policy_loss, token_logprobs, value_loss

__all__ = ["TrainSample", "Learner", "forward_logprobs", "make_optimizer", "make_schedule",
           "sequence_groups"]


@dataclass(frozen=True)
class TrainSample:
    """One sequence to train on. ids: prompt + response ids; start: index of the first
    response id; mask, old_logprobs, advantages: one per response id; value_positions: the
    positions whose hidden state estimates each step's value (PPO), with old_values and
    value_targets of the same length; ref_logprobs: the reference's log-probs (KL);
    sequence: for a segment of a compacted episode, the id of the whole sequence (the
    episode) it belongs to, whose segments the loss normalises as one sequence, with
    sequence_tokens the sampled tokens of all of them (-1 and 0: the sample is a whole
    sequence)."""

    ids: tuple[int, ...]
    start: int
    mask: tuple[float, ...]
    old_logprobs: tuple[float, ...]
    advantages: tuple[float, ...]
    value_positions: tuple[int, ...] = ()
    old_values: tuple[float, ...] = ()
    value_targets: tuple[float, ...] = ()
    ref_logprobs: tuple[float, ...] | None = None
    sequence: int = -1
    sequence_tokens: int = 0

    @property
    def n_response(self) -> int:
        return len(self.ids) - self.start

    @property
    def normaliser(self) -> float:
        """The sampled tokens this sample's per-sequence mean divides by: its whole
        sequence's (all segments), else its own."""
        return float(self.sequence_tokens if self.sequence >= 0
                     else sum(1 for m in self.mask if m))


def sequence_groups(samples: Sequence[TrainSample]) -> list[list[int]]:
    """Indices of `samples` grouped by whole sequence (segments of one episode together),
    in order of first appearance; a sample without a sequence id is a group of its own."""
    groups: dict[Any, list[int]] = {}
    for i, s in enumerate(samples):
        groups.setdefault(s.sequence if s.sequence >= 0 else ("own", i), []).append(i)
    return list(groups.values())


def make_optimizer(parameters, config: OptimConfig | Any):
    """AdamW with the config's ``lr``, ``betas``, ``adam_eps`` and ``weight_decay``."""
    import torch

    betas = tuple(getattr(config, "betas", (0.9, 0.999)))
    return torch.optim.AdamW(parameters, lr=config.lr, betas=betas,
                             eps=getattr(config, "adam_eps", 1e-8),
                             weight_decay=getattr(config, "weight_decay", 0.0))


def make_schedule(optimizer, *, schedule: str, warmup_steps: int, total_steps: int):
    """LambdaLR: linear warm-up over `warmup_steps`, then constant or cosine decay to 0 at
    `total_steps`."""
    import torch

    def factor(step: int) -> float:
        if warmup_steps and step < warmup_steps:
            return (step + 1) / warmup_steps
        if schedule == "constant":
            return 1.0
        progress = (step - warmup_steps) / max(total_steps - warmup_steps, 1)
        return 0.5 * (1.0 + math.cos(math.pi * min(progress, 1.0)))

    return torch.optim.lr_scheduler.LambdaLR(optimizer, factor)


def forward_logprobs(model: Any, samples: Sequence[TrainSample], *, pad_id: int,
                     temperature: float = 1.0, with_entropy: bool = False,
                     value_head: Any = None, autocast: bool = False):
    """Log-probs of each sample's response ids, padded to ``(n_samples, max_response)``.

    Token-identical samples are forwarded once. Returns ``(logprobs, entropy, values)``:
    entropy like logprobs (or None); values ``(n_samples, max_steps)`` at the samples'
    value positions (or None).
    """
    import torch

    device = next(model.parameters()).device
    unique: dict[tuple, int] = {}
    owner = [unique.setdefault((s.ids, s.start), len(unique)) for s in samples]
    rows = list(unique)
    width = max(len(ids) for ids, _ in rows)
    ids = torch.full((len(rows), width), pad_id, dtype=torch.long)
    attention = torch.zeros((len(rows), width), dtype=torch.long)
    for r, (row_ids, _) in enumerate(rows):
        ids[r, :len(row_ids)] = torch.tensor(row_ids)
        attention[r, :len(row_ids)] = 1
    low = min(start for _, start in rows) - 1
    high = max(len(row_ids) for row_ids, _ in rows) - 1
    ids, attention = ids.to(device), attention.to(device)
    shared = shared_prefix_length([row_ids for row_ids, _ in rows], limit=low)
    with torch.autocast(device_type="cuda", dtype=torch.bfloat16, enabled=autocast):
        out = _forward(model, ids, attention, shared, torch.arange(low, high, device=device),
                       value_head is not None)
    targets = ids[:, low + 1:high + 1]
    logprobs, entropy = token_logprobs(out.logits, targets, temperature=temperature,
                                       with_entropy=with_entropy)
    longest = max(s.n_response for s in samples)
    index = torch.zeros((len(samples), longest), dtype=torch.long)
    valid = torch.zeros((len(samples), longest), dtype=torch.bool)
    span = high - low
    for i, (s, u) in enumerate(zip(samples, owner)):
        n = s.n_response
        index[i, :n] = u * span + torch.arange(s.start - 1 - low, s.start - 1 - low + n)
        valid[i, :n] = True
    index, valid = index.to(device), valid.to(device)

    def gather(values):
        return torch.where(valid, values.reshape(-1)[index], 0.0)

    values = None
    if value_head is not None:
        hidden = out.hidden_states[-1].float()
        steps = max(len(s.value_positions) for s in samples)
        positions = torch.zeros((len(samples), steps), dtype=torch.long)
        for i, (s, u) in enumerate(zip(samples, owner)):
            positions[i, :len(s.value_positions)] = (u * (width - shared)
                                                     + torch.tensor(s.value_positions) - shared)
        flat = value_head(hidden.reshape(-1, hidden.shape[-1])).squeeze(-1)
        values = flat[positions.to(device)]
    return gather(logprobs), gather(entropy) if entropy is not None else None, values


MIN_SHARED_PREFIX = 8
"""Rows sharing at least this many leading ids have them forwarded once (`_forward`)."""


def shared_prefix_length(rows: Sequence[Sequence[int]], *, limit: int) -> int:
    """Length of the common leading ids of `rows`, at most `limit`; 0 when it is shorter
    than `MIN_SHARED_PREFIX` or there is a single row."""
    if len(rows) < 2:
        return 0
    first, n = rows[0], min(limit, min(len(r) for r in rows))
    for length in range(n):
        token = first[length]
        if any(r[length] != token for r in rows):
            n = length
            break
    return n if n >= MIN_SHARED_PREFIX else 0


def _forward(model: Any, ids: Any, attention: Any, shared: int, keep: Any, hidden: bool):
    """The model on ``ids`` (rows, width). With ``shared > 0`` the first `shared` ids, equal in
    every row, are forwarded once and their KV cache is repeated for every row (exact; the
    gradient flows through the repeat). Logits at positions `keep`; hidden states, when
    asked, cover positions ``shared..width-1``."""
    import torch

    if not shared:
        return model(input_ids=ids, attention_mask=attention, logits_to_keep=keep,
                     use_cache=False, output_hidden_states=hidden)
    from transformers import DynamicCache

    from harness.train.model import model_kwargs

    kw = model_kwargs(model)
    cache = DynamicCache()
    model(input_ids=ids[:1, :shared], use_cache=True, logits_to_keep=1, **{kw: cache})
    cache.batch_repeat_interleave(ids.shape[0])
    positions = torch.arange(shared, ids.shape[1], device=ids.device).expand(ids.shape[0], -1)
    return model(input_ids=ids[:, shared:], attention_mask=attention, position_ids=positions,
                 logits_to_keep=keep - shared, use_cache=True, output_hidden_states=hidden,
                 **{kw: cache})


def _padded(samples: Sequence[TrainSample], name: str, width: int, device: Any):
    import torch

    out = torch.zeros((len(samples), width))
    for i, s in enumerate(samples):
        values = getattr(s, name)
        out[i, :len(values)] = torch.tensor(values, dtype=torch.float32)
    return out.to(device)


class Learner:
    """Owns the model being trained, its optimizer, schedule, value head and reference."""

    def __init__(self, model: Any, *, algorithm: AlgorithmConfig, optim: OptimConfig,
                 total_updates: int, pad_id: int, temperature: float, max_tokens: int,
                 train_seed: int, value_head: Any = None, reference: Any = None,
                 reference_context: Any = None):
        self.model, self.algorithm, self.optim = model, algorithm, optim
        self.pad_id, self.temperature, self.max_tokens = pad_id, temperature, max_tokens
        self.train_seed, self.value_head = train_seed, value_head
        self.reference, self.reference_context = reference, reference_context
        parameters = [p for p in model.parameters() if p.requires_grad]
        if value_head is not None:
            parameters += list(value_head.parameters())
        self.parameters = parameters
        self.optimizer = make_optimizer(parameters, optim)
        steps = max(total_updates, 1) * algorithm.epochs * algorithm.minibatches
        self.scheduler = make_schedule(self.optimizer, schedule=optim.schedule,
                                       warmup_steps=optim.warmup_steps, total_steps=steps)
        self.autocast = next(model.parameters()).device.type == "cuda"

    # -- helpers ---------------------------------------------------------------------------
    def _contributes(self, sample: TrainSample) -> bool:
        a = self.algorithm
        if a.kl_coef or a.entropy_coef or self.value_head is not None:
            return True
        return any(m and adv for m, adv in zip(sample.mask, sample.advantages))

    def values(self, samples: Sequence[TrainSample]) -> list[tuple[float, ...]]:
        """The value head's estimate at each sample's value positions (no gradient)."""
        import torch

        out = []
        with torch.no_grad():
            for chunk in _chunks(list(samples), self.optim.micro_batch):
                _, _, values = forward_logprobs(self.model, chunk, pad_id=self.pad_id,
                                                temperature=self.temperature,
                                                value_head=self.value_head,
                                                autocast=self.autocast)
                for s, row in zip(chunk, values.tolist()):
                    out.append(tuple(row[:len(s.value_positions)]))
        return out

    def reference_logprobs(self, samples: Sequence[TrainSample]) -> list[tuple[float, ...]]:
        """The reference policy's log-probs of each sample's response ids (KL term)."""
        import torch

        out = []
        with torch.no_grad(), self.reference_context() as reference:
            for chunk in _chunks(list(samples), self.optim.micro_batch):
                logprobs, _, _ = forward_logprobs(reference, chunk, pad_id=self.pad_id,
                                                  temperature=self.temperature,
                                                  autocast=self.autocast)
                out += [tuple(row[:s.n_response]) for s, row in zip(chunk, logprobs.tolist())]
        return out

    def denominators(self, samples: Sequence[TrainSample]) -> Denominators:
        """Masked tokens, whole sequences (the segments of a compacted episode count once)
        and the constant length."""
        return Denominators(int(sum(sum(1 for m in s.mask if m) for s in samples)),
                            len(sequence_groups(samples)), self.max_tokens)

    # -- one micro-batch ------------------------------------------------------------------
    def micro_loss(self, samples: Sequence[TrainSample], denominators: Denominators,
                   n_value_steps: int = 0):
        """Loss of `samples` as their share of the batch loss, and summed stats."""
        import torch

        device = next(self.model.parameters()).device
        logprobs, entropy, values = forward_logprobs(
            self.model, samples, pad_id=self.pad_id, temperature=self.temperature,
            with_entropy=True, value_head=self.value_head, autocast=self.autocast)
        width = logprobs.shape[1]
        mask = _padded(samples, "mask", width, device)
        old = _padded(samples, "old_logprobs", width, device)
        advantages = _padded(samples, "advantages", width, device)
        ref = None
        if samples[0].ref_logprobs is not None:
            ref = _padded(samples, "ref_logprobs", width, device)
        normalisers = torch.tensor([s.normaliser for s in samples], device=device)
        loss, stats = policy_loss(logprobs, old, advantages, mask, denominators,
                                  algorithm=self.algorithm, ref_logprobs=ref, entropy=entropy,
                                  sequence_tokens=normalisers)
        if values is not None:
            steps = values.shape[1]
            value_mask = torch.zeros_like(values)
            for i, s in enumerate(samples):
                value_mask[i, :len(s.value_positions)] = 1.0
            old_values = _padded(samples, "old_values", steps, device)
            targets = _padded(samples, "value_targets", steps, device)
            v_loss = (value_loss(values, old_values, targets, clip=self.algorithm.value_clip)
                      * value_mask).sum() / max(n_value_steps, 1)
            loss = loss + self.algorithm.value_coef * v_loss
            stats["value_loss"] = float(v_loss.detach())
        stats["loss"] = float(loss.detach())
        return loss, stats

    # -- one update -----------------------------------------------------------------------
    def update(self, samples: Sequence[TrainSample], *, step: int) -> dict[str, float]:
        """``epochs`` x ``minibatches`` optimizer steps on `samples` (one rollout batch)."""
        samples = list(samples)
        if self.algorithm.kl_coef and samples and samples[0].ref_logprobs is None:
            refs = self.reference_logprobs(samples)
            samples = [_with(s, ref_logprobs=r) for s, r in zip(samples, refs)]
        started, totals, grad_norms, tokens = time.perf_counter(), {}, [], 0
        trained = 0
        groups = sequence_groups(samples)  # a compacted episode's segments stay together
        for epoch in range(self.algorithm.epochs):
            order = np.arange(len(groups))
            if self.algorithm.epochs > 1 or self.algorithm.minibatches > 1:
                order = make_rng(self.train_seed, "minibatch", step, epoch).permutation(order)
            for part in np.array_split(order, self.algorithm.minibatches):
                minibatch = [samples[i] for g in part for i in groups[g]]
                if not minibatch:
                    continue
                norm, stats, n_tokens, n_trained = self._optimizer_step(minibatch)
                grad_norms.append(norm)
                tokens += n_tokens
                trained += n_trained
                for key, value in stats.items():
                    totals[key] = totals.get(key, 0.0) + value
        n_steps = max(self.algorithm.epochs * self.algorithm.minibatches, 1)
        elapsed = time.perf_counter() - started
        metrics = {key: value / n_steps for key, value in totals.items()}
        metrics.update(grad_norm=float(np.mean(grad_norms)) if grad_norms else 0.0,
                       lr=float(self.scheduler.get_last_lr()[0]), train_tokens=float(tokens),
                       train_s=elapsed, train_tokens_per_s=tokens / max(elapsed, 1e-9),
                       trained_fraction=trained / max(len(samples) * n_steps, 1))
        return metrics

    def _optimizer_step(self, minibatch: list[TrainSample]):
        import torch

        denominators = self.denominators(minibatch)
        n_value_steps = sum(len(s.value_positions) for s in minibatch)
        active = [s for s in minibatch if self._contributes(s)]
        self.optimizer.zero_grad(set_to_none=True)
        stats: dict[str, float] = {}
        tokens = 0
        for chunk in _chunks(active, self.optim.micro_batch):
            loss, chunk_stats = self.micro_loss(chunk, denominators, n_value_steps)
            loss.backward()
            tokens += sum({(s.ids, s.start): len(s.ids) for s in chunk}.values())
            for key, value in chunk_stats.items():
                stats[key] = stats.get(key, 0.0) + value
        norm = 0.0
        if active:
            if self.optim.grad_clip:
                norm = float(torch.nn.utils.clip_grad_norm_(self.parameters,
                                                            self.optim.grad_clip))
            else:
                norm = float(torch.nn.utils.get_total_norm(
                    [p.grad for p in self.parameters if p.grad is not None]))
            self.optimizer.step()
        with warnings.catch_warnings():
            # with nothing to learn from (every advantage zero) the optimizer does not step
            # but the schedule stays on the update clock: the order torch warns about
            warnings.filterwarnings("ignore", message=r"Detected call of `lr_scheduler\.step")
            self.scheduler.step()
        return norm, stats, tokens, len(active)

    # -- state for checkpoints --------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        state = {"optimizer": self.optimizer.state_dict(),
                 "scheduler": self.scheduler.state_dict()}
        if self.value_head is not None:
            state["value_head"] = self.value_head.state_dict()
        return state

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.optimizer.load_state_dict(state["optimizer"])
        self.scheduler.load_state_dict(state["scheduler"])
        if self.value_head is not None and "value_head" in state:
            self.value_head.load_state_dict(state["value_head"])


def _chunks(items: list, size: int) -> list[list]:
    return [items[i:i + size] for i in range(0, len(items), size)]


def _with(sample: TrainSample, **changes: Any) -> TrainSample:
    from dataclasses import replace

    return replace(sample, **changes)
