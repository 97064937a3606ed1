"""The learner: micro-batch invariance, masking at the model level, exact shortcuts."""

from __future__ import annotations

import copy

import pytest
import torch

from harness.train import learner as learner_module
from harness.train.config import GRPOConfig, OptimConfig
from harness.train.learner import Learner, TrainSample, forward_logprobs
from harness.train.loss import Denominators


@pytest.fixture(scope="module")
def model(tmp_path_factory, tiny_shape):
    from harness.policies.tiny import TinyConfig, make_tiny_model
    from transformers import AutoModelForCausalLM

    shape = {k: v for k, v in tiny_shape.items() if k != "chat_template"}
    path = make_tiny_model(tmp_path_factory.mktemp("tiny"), TinyConfig(**shape), seed=3)
    return AutoModelForCausalLM.from_pretrained(path)


def episode_samples(n: int = 8, seed: int = 0) -> list[TrainSample]:
    """Whole-episode style samples: a shared prefix, then replies (mask 1) interleaved with
    observation turns (mask 0), random advantages and behaviour log-probs."""
    gen = torch.Generator().manual_seed(seed)

    def ints(k):
        return torch.randint(0, 250, (k,), generator=gen).tolist()

    prefix = ints(12)
    out = []
    for _ in range(n):
        prompt = prefix + ints(int(torch.randint(3, 8, (1,), generator=gen)))
        reply1, obs, reply2 = ints(3), ints(5), ints(2)
        response = reply1 + obs + reply2
        mask = (1.0,) * 3 + (0.0,) * 5 + (1.0,) * 2
        adv = torch.randn(1, generator=gen).item()
        old = tuple((torch.randn(10, generator=gen) * 0.1 - 5.5).tolist())
        out.append(TrainSample(tuple(prompt + response), len(prompt), mask,
                               tuple(o * m for o, m in zip(old, mask)),
                               tuple(adv * m for m in mask)))
    return out


def make_learner(model, micro_batch: int, **algorithm) -> Learner:
    return Learner(model, algorithm=GRPOConfig(kl_coef=0.0, **algorithm),
                   optim=OptimConfig(lr=1e-2, micro_batch=micro_batch), total_updates=1,
                   pad_id=256, temperature=1.0, max_tokens=8, train_seed=0)


def test_micro_batch_1x8_and_8x1_give_the_same_loss_and_gradient(model):
    samples = episode_samples()
    results = {}
    for micro in (1, 8):
        copy_ = copy.deepcopy(model)
        learner = make_learner(copy_, micro, entropy_coef=0.01)
        learner.optimizer.step = lambda: None  # keep the accumulated gradient to compare
        metrics = learner.update(samples, step=0)
        results[micro] = (metrics["loss"], [p.grad.clone() for p in copy_.parameters()])
    (loss_1, grads_1), (loss_8, grads_8) = results[1], results[8]
    assert loss_1 == pytest.approx(loss_8, rel=1e-6)
    assert loss_1 != 0.0
    for a, b in zip(grads_1, grads_8):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-7)


@pytest.mark.parametrize("aggregation", ["token-mean", "seq-mean-token-mean",
                                         "seq-mean-token-sum", "seq-mean-token-sum-norm"])
def test_micro_losses_sum_to_the_batch_loss(model, aggregation):
    samples = episode_samples(6, seed=1)
    learner = make_learner(model, 6, aggregation=aggregation)
    d = learner.denominators(samples)
    assert d == Denominators(n_tokens=30, n_sequences=6, max_tokens=8)
    with torch.no_grad():
        whole = float(learner.micro_loss(samples, d)[0])
        parts = sum(float(learner.micro_loss(samples[i:i + 2], d)[0]) for i in (0, 2, 4))
    assert parts == pytest.approx(whole, rel=1e-5)


def test_perturbing_observation_token_logits_leaves_the_loss_unchanged(model):
    samples = episode_samples(4, seed=2)
    learner = make_learner(model, 4, entropy_coef=0.01, dual_clip=3.0)
    d = learner.denominators(samples)
    low = min(s.start for s in samples) - 1
    span_rows = []  # (row, window index) of logits that predict a masked (observation) token
    for row, s in enumerate(samples):
        for k, m in enumerate(s.mask):
            if not m:
                span_rows.append((row, s.start + k - 1 - low))
    gen = torch.Generator().manual_seed(0)

    def perturb(module, args, output):
        if output.shape[1] == 1:  # the shared-prefix pass keeps one position only
            return output
        noise = torch.zeros_like(output)
        for row, index in span_rows:
            noise[row, index] = torch.randn(output.shape[-1], generator=gen) * 50
        return output + noise

    with torch.no_grad():
        clean = float(learner.micro_loss(samples, d)[0])
        handle = model.lm_head.register_forward_hook(perturb)
        try:
            perturbed = float(learner.micro_loss(samples, d)[0])
        finally:
            handle.remove()
    assert perturbed == clean


def test_shared_prefix_and_duplicate_rows_are_exact(model, monkeypatch):
    samples = episode_samples(5, seed=4)
    samples = samples + [samples[0], samples[3]]  # token-identical duplicates
    with torch.no_grad():
        fast, fast_entropy, _ = forward_logprobs(model, samples, pad_id=256, with_entropy=True)
        monkeypatch.setattr(learner_module, "MIN_SHARED_PREFIX", 10**9)
        rows = [forward_logprobs(model, [s], pad_id=256, with_entropy=True) for s in samples]
    for i, (logp, entropy, _) in enumerate(rows):
        n = samples[i].n_response
        torch.testing.assert_close(fast[i, :n], logp[0, :n], rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(fast_entropy[i, :n], entropy[0, :n], rtol=1e-5, atol=1e-5)


def test_an_update_with_nothing_to_learn_steps_the_schedule_quietly(model):
    """Every advantage zero: no optimizer step and no weight change, the learning-rate
    schedule still advances one update, and torch's scheduler-order warning is not shown."""
    import warnings

    zero = [TrainSample(s.ids, s.start, s.mask, s.old_logprobs, (0.0,) * len(s.mask))
            for s in episode_samples(4, seed=3)]
    trained = copy.deepcopy(model)
    before = [p.detach().clone() for p in trained.parameters()]
    learner = make_learner(trained, 8)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        metrics = learner.update(zero, step=0)
    assert metrics["trained_fraction"] == 0.0 and learner.scheduler.last_epoch == 1
    for p, q in zip(trained.parameters(), before):
        torch.testing.assert_close(p, q, rtol=0, atol=0)


def test_samples_with_zero_advantage_are_skipped_without_changing_the_update(model):
    samples = episode_samples(6, seed=5)
    zero = [TrainSample(s.ids, s.start, s.mask, s.old_logprobs, (0.0,) * len(s.mask))
            for s in samples[:3]]
    batch = zero + samples[3:]
    a, b = copy.deepcopy(model), copy.deepcopy(model)
    metrics = make_learner(a, 8).update(batch, step=0)
    assert metrics["trained_fraction"] == pytest.approx(0.5)
    # the same update with the zero-advantage samples forced through the forward pass
    forced = make_learner(b, 8)
    forced._contributes = lambda sample: True
    forced.update(batch, step=0)
    # an Adam step at lr 1e-2 moves every weight by ~1e-2; what is left is float32 reduction
    # order (rows of other lengths in the forward pass), ~1e-7
    for p, q in zip(a.parameters(), b.parameters()):
        torch.testing.assert_close(p, q, rtol=1e-5, atol=1e-6)
