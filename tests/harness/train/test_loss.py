"""The policy loss against hand-computed values; masking; batch-wide denominators."""

from __future__ import annotations

import math

import pytest
import torch

from harness.train.config import GRPOConfig
from harness.train.loss import (Denominators, aggregate, kl_penalty, policy_loss, ppo_clip,
                                token_logprobs, value_loss)


def t(*rows):
    return torch.tensor(rows, dtype=torch.float64)


def test_ppo_clip_hand_table_with_separate_low_and_high_clip():
    ratios = torch.tensor([[0.5, 0.9, 1.0, 1.2, 1.5]], dtype=torch.float64)
    logp = torch.log(ratios)
    old = torch.zeros_like(logp)
    positive = torch.ones_like(logp)
    loss, ratio, clipped = ppo_clip(logp, old, positive, clip_low=0.2, clip_high=0.28)
    # A > 0: -min(r, clip(r, 0.8, 1.28)) -> the clip binds only above 1.28
    torch.testing.assert_close(loss, -t([0.5, 0.9, 1.0, 1.2, 1.28]))
    torch.testing.assert_close(clipped, t([0, 0, 0, 0, 1]))
    torch.testing.assert_close(ratio, ratios)
    loss, _, clipped = ppo_clip(logp, old, -positive, clip_low=0.2, clip_high=0.28)
    # A < 0: max(r, clip(r)) -> the clip binds only below 0.8
    torch.testing.assert_close(loss, t([0.8, 0.9, 1.0, 1.2, 1.5]))
    torch.testing.assert_close(clipped, t([1, 0, 0, 0, 0]))


def test_dual_clip_bounds_negative_advantages_only():
    ratios = torch.tensor([[0.5, 2.0, 5.0]], dtype=torch.float64)
    logp, old = torch.log(ratios), torch.zeros(1, 3, dtype=torch.float64)
    loss, _, clipped = ppo_clip(logp, old, -torch.ones_like(logp), clip_low=0.2,
                                clip_high=0.2, dual_clip=3.0)
    torch.testing.assert_close(loss, t([0.8, 2.0, 3.0]))  # 5.0 capped at c = 3
    torch.testing.assert_close(clipped, t([1, 0, 1]))
    loss, _, _ = ppo_clip(logp, old, torch.ones_like(logp), clip_low=0.2, clip_high=0.2,
                          dual_clip=3.0)
    torch.testing.assert_close(loss, -t([0.5, 1.2, 1.2]))  # A > 0 unaffected


def test_kl_estimators_hand_values():
    logp, ref = t([math.log(0.5)]), t([math.log(0.25)])
    torch.testing.assert_close(kl_penalty(logp, ref, estimator="k1"), t([math.log(2.0)]))
    # k3 = r - log r - 1 with r = p_ref / p = 0.5
    torch.testing.assert_close(kl_penalty(logp, ref, estimator="k3"),
                               t([0.5 - math.log(0.5) - 1]))
    assert float(kl_penalty(logp, logp, estimator="k3")) == 0.0
    with pytest.raises(ValueError):
        kl_penalty(logp, ref, estimator="k2")


VALUES = t([1.0, 2.0, 3.0], [4.0, 5.0, 6.0])
MASK = t([1.0, 1.0, 0.0], [1.0, 0.0, 0.0])


@pytest.mark.parametrize("mode,expected", [
    ("token-mean", (1 + 2 + 4) / 3),
    ("seq-mean-token-mean", ((1 + 2) / 2 + 4 / 1) / 2),
    ("seq-mean-token-sum", (1 + 2 + 4) / 2),
    ("seq-mean-token-sum-norm", (1 + 2 + 4) / (2 * 5)),
])
def test_aggregation_hand_table(mode, expected):
    d = Denominators(n_tokens=3, n_sequences=2, max_tokens=5)
    assert float(aggregate(VALUES, MASK, mode, d)) == pytest.approx(expected)
    # rows aggregated separately with the whole batch's denominators sum to the total
    split = sum(float(aggregate(VALUES[i:i + 1], MASK[i:i + 1], mode, d)) for i in range(2))
    assert split == pytest.approx(expected)


def test_entropy_and_logprobs_of_uniform_logits():
    logits = torch.zeros(1, 2, 4)
    logp, entropy = token_logprobs(logits, torch.tensor([[0, 3]]), with_entropy=True)
    torch.testing.assert_close(logp, torch.full((1, 2), -math.log(4)))
    torch.testing.assert_close(entropy, torch.full((1, 2), math.log(4)))
    logp, _ = token_logprobs(torch.tensor([[[2.0, 0.0]]]), torch.tensor([[0]]), temperature=2.0)
    assert float(logp) == pytest.approx(math.log(math.e / (math.e + 1)))


def test_value_loss_is_clipped_around_the_old_values():
    v, old, target = t([1.0]), t([0.0]), t([1.0])
    # unclipped error 0, clipped prediction 0.2 -> error 0.8: the max keeps 0.5 * 0.64
    assert float(value_loss(v, old, target, clip=0.2)) == pytest.approx(0.32)


def test_loss_ignores_everything_outside_the_mask():
    """Perturbing the logits of observation (masked-out) tokens leaves the loss unchanged."""
    gen = torch.Generator().manual_seed(0)
    logits = torch.randn(2, 5, 7, generator=gen, dtype=torch.float64)
    targets = torch.randint(0, 7, (2, 5), generator=gen)
    mask = t([1, 1, 0, 0, 1], [0, 1, 1, 0, 0])
    old = torch.randn(2, 5, generator=gen, dtype=torch.float64) * 0.1 - 2.0
    ref = torch.randn(2, 5, generator=gen, dtype=torch.float64) * 0.1 - 2.0
    adv = torch.randn(2, 5, generator=gen, dtype=torch.float64)
    algo = GRPOConfig(kl_coef=0.1, entropy_coef=0.01, dual_clip=3.0)
    d = Denominators(int(mask.sum()), 2, 5)

    def loss_of(values):
        logp, entropy = token_logprobs(values, targets, with_entropy=True)
        return float(policy_loss(logp, old, adv, mask, d, algorithm=algo, ref_logprobs=ref,
                                 entropy=entropy)[0])

    noise = torch.randn(2, 5, 7, generator=gen, dtype=torch.float64) * 10
    perturbed = logits + noise * (1 - mask)[..., None]
    assert loss_of(perturbed) == loss_of(logits)
    assert loss_of(logits + noise * mask[..., None]) != loss_of(logits)
