"""The policy loss: PPO-clip with separate low/high clip and dual clip, KL to a reference
(k1, k3), an entropy bonus, a clipped value loss, and the four aggregation modes.

Every function is pure (torch tensors in, tensors out). Per-token tensors have shape
``(batch, length)``; ``mask`` is 1 on the tokens the policy produced and is trained on and 0
elsewhere (prompt, environment observations, padding), and nothing outside the mask reaches
the loss. Aggregation denominators are computed once over the whole accumulated batch
(`Denominators`), so splitting a batch into micro-batches and summing their losses gives the
loss of the whole batch, and the same gradient.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["Denominators", "token_logprobs", "ppo_clip", "kl_penalty", "aggregate",
           "value_loss", "policy_loss"]


@dataclass(frozen=True)
class Denominators:
    """Normalisers of the whole accumulated batch (not of one micro-batch).

    n_tokens: masked tokens in the batch; n_sequences: samples in the batch; max_tokens: the
    constant length of Dr. GRPO's ``seq-mean-token-sum-norm`` (the generation budget).
    """

    n_tokens: int
    n_sequences: int
    max_tokens: int


def token_logprobs(logits, targets, *, temperature: float = 1.0, with_entropy: bool = False):
    """Log-probabilities of `targets` under ``softmax(logits / temperature)``.

    logits: ``(batch, length, vocab)``; targets: ``(batch, length)`` int. Returns
    ``(logprobs, entropy)``, each ``(batch, length)`` (entropy None unless asked for).
    """
    import torch

    scaled = logits.float() / temperature
    logp_all = torch.log_softmax(scaled, dim=-1)
    logprobs = logp_all.gather(-1, targets.unsqueeze(-1)).squeeze(-1)
    entropy = None
    if with_entropy:
        entropy = -(logp_all.exp() * logp_all).sum(-1)
    return logprobs, entropy


def ppo_clip(logprobs, old_logprobs, advantages, *, clip_low: float, clip_high: float,
             dual_clip: float | None = None):
    """Per-token PPO-clip loss ``-min(r A, clip(r, 1 - clip_low, 1 + clip_high) A)``.

    Separate low/high bounds are DAPO's clip-higher (Yu et al. 2025). With `dual_clip` c > 1,
    the loss of a negative advantage is bounded by ``-c A`` (Ye et al. 2020, dual-clip PPO).
    All inputs ``(batch, length)``. Returns ``(loss, ratio, clipped)``, each ``(batch,
    length)``; `clipped` is 1.0 where the clipped term was the one used.
    """
    import torch

    ratio = torch.exp(logprobs - old_logprobs)
    unclipped = -advantages * ratio
    clipped_ratio = torch.clamp(ratio, 1.0 - clip_low, 1.0 + clip_high)
    clipped = -advantages * clipped_ratio
    loss = torch.maximum(unclipped, clipped)
    was_clipped = (clipped > unclipped).to(loss.dtype)
    if dual_clip is not None:
        bound = -advantages * dual_clip
        use_bound = (advantages < 0) & (bound < loss)
        loss = torch.where(use_bound, bound, loss)
        was_clipped = torch.where(use_bound, torch.ones_like(was_clipped), was_clipped)
    return loss, ratio, was_clipped


def kl_penalty(logprobs, ref_logprobs, *, estimator: str = "k3"):
    """Per-token estimate of KL(policy || reference) from sampled tokens.

    k1: ``log p - log p_ref``; k3: ``exp(log p_ref - log p) - (log p_ref - log p) - 1``
    (unbiased, always >= 0; Schulman 2020, "Approximating KL Divergence"; GRPO's KL term).
    Inputs and output ``(batch, length)``.
    """
    import torch

    if estimator == "k1":
        return logprobs - ref_logprobs
    if estimator == "k3":
        log_ratio = ref_logprobs - logprobs
        return torch.exp(log_ratio) - log_ratio - 1.0
    raise ValueError(f"unknown KL estimator {estimator!r}")


def aggregate(values, mask, mode: str, denominators: Denominators, sequence_tokens=None):
    """Reduce per-token `values` ``(batch, length)`` over `mask` to this micro-batch's share
    of the batch loss.

    token-mean: ``sum(v m) / n_tokens`` (DAPO). seq-mean-token-mean: ``sum_i (sum_t v m /
    sum_t m) / n_sequences`` (GRPO). seq-mean-token-sum: ``sum(v m) / n_sequences``.
    seq-mean-token-sum-norm: ``sum(v m) / (n_sequences * max_tokens)`` (Dr. GRPO).

    Segments of a compacted episode are rows of their own but one sequence: `sequence_tokens`
    ``(batch,)`` gives each row the masked-token count of its whole sequence (all its
    segments), which seq-mean-token-mean divides by in place of the row's own count, and
    ``n_sequences`` counts the sequence once, so the segments' loss is that of the episode
    as one sequence (token-level normalisation across segments).
    """
    masked = values * mask
    if mode == "token-mean":
        return masked.sum() / max(denominators.n_tokens, 1)
    if mode == "seq-mean-token-mean":
        counts = mask.sum(-1) if sequence_tokens is None else sequence_tokens.to(mask.dtype)
        per_sequence = masked.sum(-1) / counts.clamp(min=1)
        return per_sequence.sum() / max(denominators.n_sequences, 1)
    if mode == "seq-mean-token-sum":
        return masked.sum() / max(denominators.n_sequences, 1)
    if mode == "seq-mean-token-sum-norm":
        return masked.sum() / max(denominators.n_sequences * denominators.max_tokens, 1)
    raise ValueError(f"unknown aggregation {mode!r}")


def value_loss(values, old_values, targets, *, clip: float):
    """Clipped value loss ``0.5 max((V - R)^2, (V_old + clip(V - V_old, +-clip) - R)^2)``
    (PPO2 of OpenAI baselines). Inputs and output ``(batch,)`` or ``(batch, length)``."""
    import torch

    clipped = old_values + torch.clamp(values - old_values, -clip, clip)
    return 0.5 * torch.maximum((values - targets) ** 2, (clipped - targets) ** 2)


def policy_loss(logprobs, old_logprobs, advantages, mask, denominators: Denominators, *,
                algorithm: Any, ref_logprobs=None, entropy=None, sequence_tokens=None):
    """The total policy loss of one micro-batch and its summed diagnostics.

    `algorithm` is an `AlgorithmConfig` (clip, dual clip, aggregation, KL and entropy
    weights). Per-token inputs ``(batch, length)``; `sequence_tokens` ``(batch,)`` as in
    `aggregate` (segments of compacted episodes). Returns ``(loss, stats)``: `loss` a scalar
    tensor; `stats` maps names to floats already divided by the batch's token count, so the
    stats of all micro-batches sum to the batch's.
    """
    import torch

    pg, ratio, clipped = ppo_clip(logprobs, old_logprobs, advantages,
                                  clip_low=algorithm.clip_low, clip_high=algorithm.clip_high,
                                  dual_clip=algorithm.dual_clip)
    mode = algorithm.aggregation
    loss = aggregate(pg, mask, mode, denominators, sequence_tokens)
    per_token = max(denominators.n_tokens, 1)
    stats = {"pg_loss": float(loss.detach()),
             "clip_fraction": float((clipped * mask).sum() / per_token),
             "ratio_mean": float((ratio.detach() * mask).sum() / per_token)}
    if ref_logprobs is not None:
        kl = kl_penalty(logprobs, ref_logprobs, estimator=algorithm.kl_estimator)
        if algorithm.kl_coef:
            loss = loss + algorithm.kl_coef * aggregate(kl, mask, mode, denominators,
                                                        sequence_tokens)
        stats["kl"] = float((kl.detach() * mask).sum() / per_token)
    else:
        with torch.no_grad():
            stats["kl_behaviour"] = float(((old_logprobs - logprobs) * mask).sum() / per_token)
    if entropy is not None:
        if algorithm.entropy_coef:
            loss = loss - algorithm.entropy_coef * aggregate(entropy, mask, mode, denominators,
                                                             sequence_tokens)
        stats["entropy"] = float((entropy.detach() * mask).sum() / per_token)
    return loss, stats
