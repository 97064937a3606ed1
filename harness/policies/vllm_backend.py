"""The ``vllm`` backend: vLLM's offline engine (``vllm.LLM``) on a GPU, behind the ``gpu``
extra. Written against vLLM's documented offline API: ``LLM(model=..., seed=...,
gpu_memory_utilization=..., tensor_parallel_size=..., max_model_len=...)``,
``LLM.get_tokenizer()``, ``LLM.generate(prompts, sampling_params, use_tqdm=False)`` with
token-id prompts (``{"prompt_token_ids": [...]}``) and one ``SamplingParams`` per prompt,
and ``RequestOutput.outputs[i]`` with ``text``, ``token_ids``, ``finish_reason`` and
``logprobs`` (one ``{token_id: Logprob}`` per generated token).

Concurrent episodes are gathered by a `BatchQueue` into one ``generate`` call per batch;
vLLM schedules the batch itself (continuous batching inside the call).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from harness.core import require
from harness.policies.batching import BatchQueue
from harness.policies.model import ChatResult, Completion, ModelPolicy, Sampling
from harness.policies.scaffold import Messages, make_scaffold
from harness.policies.specs import ModelOptions, ModelSpec

__all__ = ["import_vllm", "VLLMEngine", "VLLMBackend", "make_vllm_policy"]


def import_vllm() -> Any:
    """The ``vllm`` module, or MissingDependencyError with the ``gpu`` extra's install line."""
    return require("vllm", "gpu", "the vllm engine (a CUDA GPU)")


class VLLMEngine:
    """A ``vllm.LLM`` over the model at `path`: the project's one vLLM engine. The ``vllm``
    policy decodes chat requests with it; the trainer's rollouts
    (`harness.train.vllm_engine.VLLMRollout`) sample token ids with it
    (``logprobs_mode="processed_logprobs"``, the end-of-turn id as a stop token) and load
    the learner's weights into it after every update (`load_weights`)."""

    def __init__(self, path: str, options: ModelOptions, *, logprobs_mode: str | None = None,
                 stop_token_ids: Sequence[int] = (), enforce_eager: bool = False,
                 prefix_caching: bool | None = None):
        self.vllm = import_vllm()
        dtype = "auto" if options.dtype == "float32" else options.dtype
        kwargs: dict[str, Any] = {"model": path, "seed": 0, "dtype": dtype,
                                  "gpu_memory_utilization": options.gpu_memory_utilization,
                                  "tensor_parallel_size": options.tensor_parallel}
        if options.context is not None:
            kwargs["max_model_len"] = options.context
        if logprobs_mode is not None:
            kwargs["logprobs_mode"] = logprobs_mode
        if enforce_eager:
            kwargs["enforce_eager"] = True
        if prefix_caching is not None:
            kwargs["enable_prefix_caching"] = prefix_caching
        self.llm = self.vllm.LLM(**kwargs)
        self.tokenizer = self.llm.get_tokenizer()
        self.path = path
        self.context_tokens = options.context
        self.stop_token_ids = [int(i) for i in stop_token_ids]

    def encode_chat(self, messages: Messages) -> list[int]:
        text = self.tokenizer.apply_chat_template(list(messages), tokenize=False,
                                                  add_generation_prompt=True)
        return list(self.tokenizer(text, add_special_tokens=False).input_ids)

    def sampling_params(self, sampling: Sampling) -> Any:
        logprobs = max(sampling.top_logprobs, 0) if sampling.logprobs else None
        return self.vllm.SamplingParams(
            n=sampling.n, temperature=sampling.temperature, top_p=sampling.top_p,
            max_tokens=sampling.max_tokens, stop=list(sampling.stop) or None,
            stop_token_ids=self.stop_token_ids or None, seed=sampling.seed,
            logprobs=logprobs)

    def generate(self, requests: Sequence[tuple[Sequence[int], Sampling]]
                 ) -> list[list[Completion]]:
        prompts = [{"prompt_token_ids": list(ids)} for ids, _ in requests]
        params = [self.sampling_params(sampling) for _, sampling in requests]
        outputs = self.llm.generate(prompts, params, use_tqdm=False)
        return [[_completion(out, sampling) for out in result.outputs]
                for result, (_, sampling) in zip(outputs, requests)]

    def load_weights(self, weights: Sequence[tuple[str, Any]]) -> None:
        """Load ``(name, tensor)`` weights into the engine's model (colocated: same GPU)."""
        self.llm.apply_model(lambda engine_model: engine_model.load_weights(weights))
        if hasattr(self.llm, "reset_prefix_cache"):
            self.llm.reset_prefix_cache()


def _completion(output: Any, sampling: Sampling) -> Completion:
    token_ids = tuple(output.token_ids)
    logprobs = top = None
    if sampling.logprobs and output.logprobs:
        logprobs = tuple(float(step[token].logprob)
                         for step, token in zip(output.logprobs, token_ids))
        top = tuple(tuple((item.decoded_token or "", float(item.logprob))
                          for _, item in sorted(step.items(), key=lambda kv: kv[1].rank or 0)
                          )[:sampling.top_logprobs] for step in output.logprobs)
    return Completion(output.text, output.finish_reason or "stop", token_ids, logprobs,
                      top if sampling.top_logprobs else None)


class VLLMBackend:
    """`ChatBackend` over a `VLLMEngine`, batching concurrent requests."""

    def __init__(self, engine: VLLMEngine, options: ModelOptions):
        self.engine = engine
        self.context_tokens = engine.context_tokens
        self.queue: BatchQueue = BatchQueue(engine.generate, max_batch=options.max_batch,
                                            wait_s=0.005, name="vllm")

    def count_tokens(self, messages: Messages) -> int:
        return len(self.engine.encode_chat(messages))

    def describe(self) -> dict[str, Any]:
        return {"model_path": self.engine.path, "engine": "vllm",
                "vllm_version": getattr(self.engine.vllm, "__version__", "")}

    async def chat(self, messages: Messages, sampling: Sampling) -> ChatResult:
        prompt = self.engine.encode_chat(messages)
        choices = await self.queue.submit((prompt, sampling))
        return ChatResult(tuple(choices), prompt_tokens=len(prompt),
                          completion_tokens=sum(len(c.token_ids or ()) for c in choices))


def make_vllm_policy(spec: ModelSpec) -> ModelPolicy:
    """The policy of a ``vllm:PATH`` spec (``max_batch`` defaults to 16; raise it on a GPU)."""
    engine = VLLMEngine(spec.target, spec.options)
    return ModelPolicy(spec.spec, VLLMBackend(engine, spec.options), spec.options,
                       scaffold=make_scaffold(spec.scaffold_spec()))
