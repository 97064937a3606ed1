"""The vLLM rollout engine: vLLM's offline `LLM`, colocated with the learner on one GPU,
with the learner's weights loaded into it after every update.

Written against vLLM's documented offline API (``vllm.LLM``, ``SamplingParams``,
``TokensPrompt``, ``LLM.generate``, ``LLM.apply_model``; engine arguments
``gpu_memory_utilization``, ``logprobs_mode``); it needs a CUDA GPU and the ``gpu`` extra,
and cannot run on CPU-only machines. Behaviour log-probs are the *processed* ones (after
temperature), the distribution tokens were drawn from, as the loss expects.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from harness.core import ConfigError, MissingDependencyError
from harness.train.engine import Sample

log = logging.getLogger(__name__)

__all__ = ["VLLMEngine", "import_vllm", "merged_weights"]


def import_vllm() -> Any:
    try:
        import vllm
    except ImportError:
        raise MissingDependencyError("vllm", "gpu", "the vllm rollout engine") from None
    return vllm


class VLLMEngine:
    """Token-id prompts in, sampled ids and behaviour log-probs out."""

    def __init__(self, model_path: str | Path, *, eos_id: int, model: Any = None,
                 gpu_memory_utilization: float = 0.3, dtype: str = "bfloat16",
                 max_model_len: int | None = None):
        vllm = import_vllm()
        import torch

        if not torch.cuda.is_available():
            raise ConfigError("rollout.engine = 'vllm' needs a CUDA GPU; use engine = 'hf'")
        self.vllm, self.eos_id = vllm, eos_id
        self.llm = vllm.LLM(model=str(model_path), dtype=dtype, enforce_eager=True,
                            gpu_memory_utilization=gpu_memory_utilization,
                            max_model_len=max_model_len, logprobs_mode="processed_logprobs",
                            enable_prefix_caching=True)
        if model is not None:
            self.sync(model)

    def generate(self, prompts: Sequence[Sequence[int]], *, max_new_tokens: int,
                 temperature: float = 1.0, greedy: bool = False, seed: int = 0) -> list[Sample]:
        vllm = self.vllm
        params = vllm.SamplingParams(
            n=1, temperature=0.0 if greedy else temperature, max_tokens=max_new_tokens,
            logprobs=0, seed=int(seed), stop_token_ids=[self.eos_id], detokenize=False,
            skip_special_tokens=False)
        requests = [vllm.inputs.TokensPrompt(prompt_token_ids=list(p)) for p in prompts]
        outputs = self.llm.generate(requests, params, use_tqdm=False)
        samples = []
        for output in outputs:
            completion = output.outputs[0]
            ids = tuple(int(t) for t in completion.token_ids)
            logprobs = tuple(float(step[token].logprob)
                             for step, token in zip(completion.logprobs or [], ids))
            samples.append(Sample(ids, logprobs, bool(ids) and ids[-1] == self.eos_id))
        return samples

    def sync(self, model: Any) -> None:
        """Load the learner's current weights into the engine (colocated: same GPU)."""
        weights = merged_weights(model)
        self.llm.apply_model(lambda engine_model: engine_model.load_weights(weights))
        if hasattr(self.llm, "reset_prefix_cache"):
            self.llm.reset_prefix_cache()


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
