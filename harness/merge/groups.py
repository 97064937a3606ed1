"""Parameter groups of decoder-only Hugging Face models (Qwen2, Llama, GPT-2, GPT-NeoX):
``embeddings`` (token and position embeddings, the output head), ``attention``, ``mlp``,
``norms`` and ``other``; a layer is the index after ``layers.``/``h.``/``blocks.``. Used by
merging, geometry and a study's weight analyses."""

from __future__ import annotations

import re

__all__ = ["GROUPS", "parameter_group", "layer_of"]

GROUPS = ("embeddings", "attention", "mlp", "norms", "other")
_LAYER = re.compile(r"(?:^|\.)(?:layers|h|blocks|layer)\.(\d+)\.")
_PATTERNS = (("embeddings", re.compile(r"embed|wte|wpe|lm_head|embed_out")),
             ("norms", re.compile(r"norm|(?:^|\.)ln_|\.ln\d|layernorm")),
             ("attention", re.compile(r"attn|attention")),
             ("mlp", re.compile(r"mlp|feed_forward|ffn")))


def parameter_group(name: str) -> str:
    """The group of parameter `name` (one of `GROUPS`)."""
    for group, pattern in _PATTERNS:
        if pattern.search(name):
            return group
    return "other"


def layer_of(name: str) -> int | None:
    """The block index in parameter `name`, or None outside the blocks."""
    match = _LAYER.search(name)
    return int(match.group(1)) if match else None
