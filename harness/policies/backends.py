"""The model backends (``openai``, ``hf``, ``vllm``, ``checkpoint``): which module builds
the policy of a model spec. Each backend module is imported only when a spec names it (heavy
packages stay unimported), and none of them imports this module back."""

from __future__ import annotations

from typing import Any

from harness.policies.specs import parse_model_spec

__all__ = ["MODEL_BACKENDS", "make_model_policy"]


def make_model_policy(spec: str) -> Any:
    """Build the policy of a model spec (heavy packages are imported here, lazily); its
    provenance records a ``courage=`` level (`harness.policies.courage`)."""
    parsed = parse_model_spec(spec)
    policy = _build(parsed)
    if parsed.options.courage is not None:
        policy.provenance = {**policy.provenance, "courage": parsed.options.courage}
    return policy


def _build(parsed: Any) -> Any:
    if parsed.backend == "openai":
        from harness.policies.openai_backend import make_openai_policy

        return make_openai_policy(parsed)
    if parsed.backend == "hf":
        from harness.policies.hf import make_hf_policy

        return make_hf_policy(parsed)
    if parsed.backend == "checkpoint":
        from harness.policies.checkpoint import make_checkpoint_policy

        return make_checkpoint_policy(parsed)
    from harness.policies.vllm_backend import make_vllm_policy

    return make_vllm_policy(parsed)


MODEL_BACKENDS = {
    "openai": "an OpenAI-compatible server (openai:MODEL@URL?options)",
    "hf": "a local transformers model (hf:PATH?options)",
    "vllm": "vLLM's offline engine (vllm:PATH?options; a GPU, or vLLM's CPU build)",
    "checkpoint": "a checkpoint of the bundled trainer (checkpoint:PATH?options)",
}
"""The model backends `harness.policies` registers, with their one-line descriptions."""
