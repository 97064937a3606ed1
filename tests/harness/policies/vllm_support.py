"""Shared helpers of the vLLM tests (policies, serve, train): whether vLLM can run here, and a
model it can run. vLLM's CPU build lives in a second environment named by
``HARNESS_VLLM_PYTHON`` (CI makes it: .ci/vllm-env); without one these tests are skipped with
that reason, and CI fails if its environment is missing (it sets the variable)."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.policies.tiny import TinyConfig, imprint, make_tiny_model
from tests.harness.policies.llm_support import IMPRINT_SCAFFOLD, frozenlake_prompts

VLLM_SHAPE = TinyConfig(hidden=64, layers=2, heads=2, kv_heads=1, intermediate=128,
                        context=4096)
"""A ~0.1M-parameter Qwen2 with head size 32 (vLLM's CPU attention needs at least that)."""

TOLERANCE = 1e-4
"""Largest absolute log-prob difference accepted between vLLM and transformers in float32
(measured: under 1e-5)."""


def vllm_missing() -> str:
    """Why vLLM cannot run here ("" when it can)."""
    from harness.policies.vllm_client import VLLMUnavailableError, check_vllm

    try:
        check_vllm()
    except VLLMUnavailableError as error:
        return str(error)
    return ""


MISSING = vllm_missing()
requires_vllm = pytest.mark.skipif(bool(MISSING), reason=MISSING or "vLLM is available")
VLLM_MARKS = [pytest.mark.slow, requires_vllm, pytest.mark.xdist_group("vllm")]
"""The marks of every vLLM test: slow, skipped without vLLM, one xdist worker for all (each
engine takes the cores for a while)."""


def make_random_model(path: Path) -> Path:
    """`VLLM_SHAPE` with every weight drawn from N(0, 0.1^2): replies differ from prompt to
    prompt, so greedy decoding is compared on many different tokens."""
    from harness.train.model import _reinitialise

    make_tiny_model(path, VLLM_SHAPE, seed=0)
    _reinitialise(path, 0.1, 0)
    return path


def make_vllm_model(path: Path) -> Path:
    """`VLLM_SHAPE` fine-tuned briefly to answer frozenlake prompts with ``Action: MOVE``
    (policy options ``IMPRINT_OPTIONS``), so episodes hold parsed actions."""
    make_tiny_model(path, VLLM_SHAPE, seed=0)
    examples = [(messages, f"Action: {move}")
                for messages, move in frozenlake_prompts(2, IMPRINT_SCAFFOLD)]
    return imprint(path, examples, steps=60, lr=1e-2, seed=0)
