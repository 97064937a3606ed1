"""vLLM rollouts: the project's one vLLM engine (`harness.policies.vllm_backend.VLLMEngine`)
colocated with the learner on one GPU, sampling token ids for the trainer, with the learner's
weights loaded into it after every update.

Written against vLLM's documented offline API; it needs a CUDA GPU and the ``gpu`` extra, and
cannot run on CPU-only machines. Behaviour log-probs are the *processed* ones (after
temperature), the distribution tokens were drawn from, as the loss expects.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from harness.core import ConfigError, require
from harness.policies.model import Sampling
from harness.policies.specs import ModelOptions
from harness.policies.vllm_backend import VLLMEngine, import_vllm
from harness.train.engine import Sample

log = logging.getLogger(__name__)

__all__ = ["VLLMRollout", "merged_weights"]


class VLLMRollout:
    """The trainer's `Engine` over a `VLLMEngine`: token-id prompts in, sampled ids and
    behaviour log-probs out; `sync` loads the learner's weights."""

    def __init__(self, model_path: str | Path, *, eos_id: int, model: Any = None,
                 gpu_memory_utilization: float = 0.3, dtype: str = "bfloat16",
                 max_model_len: int | None = None):
        import_vllm()
        torch = require("torch", "train", "training")
        if not torch.cuda.is_available():
            raise ConfigError("rollout.engine = 'vllm' needs a CUDA GPU; use engine = 'hf'")
        options = ModelOptions(dtype=dtype, gpu_memory_utilization=gpu_memory_utilization,
                               context=max_model_len)
        self.eos_id = eos_id
        self.engine = VLLMEngine(str(model_path), options,
                                 logprobs_mode="processed_logprobs", stop_token_ids=(eos_id,),
                                 enforce_eager=True, prefix_caching=True)
        if model is not None:
            self.sync(model)

    def generate(self, prompts: Sequence[Sequence[int]], *, max_new_tokens: int,
                 temperature: float = 1.0, greedy: bool = False, seed: int = 0) -> list[Sample]:
        sampling = Sampling(temperature=0.0 if greedy else temperature,
                            max_tokens=max_new_tokens, seed=int(seed), logprobs=True)
        results = self.engine.generate([(prompt, sampling) for prompt in prompts])
        samples = []
        for (completion,) in results:
            ids = tuple(int(t) for t in completion.token_ids or ())
            logprobs = tuple(completion.logprobs or ())[:len(ids)]
            samples.append(Sample(ids, logprobs, bool(ids) and ids[-1] == self.eos_id))
        return samples

    def sync(self, model: Any) -> None:
        """Load the learner's current weights into the engine (colocated: same GPU)."""
        self.engine.load_weights(merged_weights(model))


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
