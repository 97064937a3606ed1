"""Tiny causal language models made locally: tests, examples and the CPU training backend use
them, and nothing is downloaded.

`make_tiny_model(path)` builds a randomly initialised Qwen2 (or GPT-2) model of about 1M
parameters from a config, together with a byte-level tokenizer (one token per byte, ids 0-255
equal the byte values, plus the ChatML special tokens) and a ChatML chat template, and saves
both in the standard Hugging Face layout (``config.json``, ``model.safetensors``,
``tokenizer.json``, ``tokenizer_config.json``, ``chat_template.jinja``) so that
``AutoModelForCausalLM.from_pretrained(path)`` and ``AutoTokenizer.from_pretrained(path)``
load them offline. The same `TinyConfig` and seed give the same weights, bit for bit.

`imprint(path, examples)` fine-tunes such a model for a few dozen steps so that it answers
given chat prompts with given replies: a fixture that makes a tiny model emit parseable
actions (its outputs are still the model's own greedy decoding, not scripted).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from harness.core import ConfigError, require

__all__ = ["TinyConfig", "CHAT_TEMPLATE", "SPECIAL_TOKENS", "byte_tokenizer", "make_tiny_model",
           "imprint", "count_parameters", "bytes_to_unicode"]

SPECIAL_TOKENS = ("<|endoftext|>", "<|im_start|>", "<|im_end|>")
"""Ids 256, 257, 258: padding, ChatML turn start, ChatML turn end (the end-of-sequence)."""

CHAT_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n"
    "{{ message['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
"""ChatML, as Qwen2 uses it."""

TINY_MARKER = "harness_tiny.json"


@dataclass(frozen=True)
class TinyConfig:
    """Shape of a tiny model. The defaults give about 1.1M parameters (Qwen2)."""

    arch: str = "qwen2"
    """``qwen2`` (RoPE, RMSNorm, SwiGLU, grouped-query attention) or ``gpt2``."""
    hidden: int = 128
    layers: int = 4
    heads: int = 4
    kv_heads: int = 2
    """Key/value heads (Qwen2 only)."""
    intermediate: int = 512
    context: int = 4096
    """Maximum positions, also the tokenizer's ``model_max_length``."""

    def __post_init__(self) -> None:
        if self.arch not in ("qwen2", "gpt2"):
            raise ConfigError(f"tiny model arch must be qwen2 or gpt2, got {self.arch!r}")
        if self.hidden % self.heads or self.heads % self.kv_heads:
            raise ConfigError("hidden must be divisible by heads, heads by kv_heads")


def bytes_to_unicode() -> dict[int, str]:
    """GPT-2's reversible map from bytes to printable characters (byte-level BPE's alphabet)."""
    printable = (list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1))
                 + list(range(ord("®"), ord("ÿ") + 1)))
    mapping, extra = {}, 0
    for byte in range(256):
        if byte in printable:
            mapping[byte] = chr(byte)
        else:
            mapping[byte] = chr(256 + extra)
            extra += 1
    return mapping


def byte_tokenizer(context: int = 4096) -> Any:
    """A byte-level tokenizer (BPE with no merges: token id == byte value for ids 0-255) with
    the ChatML special tokens and chat template, as a transformers fast tokenizer."""
    tokenizers = require("tokenizers", "train", "local models")
    transformers = require("transformers", "train", "local models")
    vocab = {char: byte for byte, char in bytes_to_unicode().items()}
    tok = tokenizers.Tokenizer(tokenizers.models.BPE(vocab=vocab, merges=[]))
    tok.pre_tokenizer = tokenizers.pre_tokenizers.ByteLevel(add_prefix_space=False,
                                                            use_regex=False)
    tok.decoder = tokenizers.decoders.ByteLevel()
    tok.add_special_tokens(list(SPECIAL_TOKENS))
    fast = transformers.PreTrainedTokenizerFast(
        tokenizer_object=tok, pad_token=SPECIAL_TOKENS[0], eos_token=SPECIAL_TOKENS[2],
        model_max_length=context)
    fast.chat_template = CHAT_TEMPLATE
    return fast


def _model_config(config: TinyConfig, tokenizer: Any) -> Any:
    transformers = require("transformers", "train", "local models")
    vocab = len(tokenizer)
    common = {"vocab_size": vocab, "eos_token_id": tokenizer.eos_token_id,
              "pad_token_id": tokenizer.pad_token_id, "bos_token_id": tokenizer.eos_token_id,
              "tie_word_embeddings": True}
    if config.arch == "qwen2":
        return transformers.Qwen2Config(
            hidden_size=config.hidden, num_hidden_layers=config.layers,
            num_attention_heads=config.heads, num_key_value_heads=config.kv_heads,
            intermediate_size=config.intermediate, max_position_embeddings=config.context,
            **common)
    return transformers.GPT2Config(n_embd=config.hidden, n_layer=config.layers,
                                   n_head=config.heads, n_inner=config.intermediate,
                                   n_positions=config.context, **common)


def make_tiny_model(path: str | Path, config: TinyConfig = TinyConfig(), *, seed: int = 0
                    ) -> Path:
    """Build, randomly initialise (from `seed` only) and save a tiny model with its tokenizer
    in Hugging Face layout under `path`; returns the path."""
    torch = require("torch", "train", "local models")
    transformers = require("transformers", "train", "local models")
    path = Path(path)
    tokenizer = byte_tokenizer(config.context)
    model_config = _model_config(config, tokenizer)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = transformers.AutoModelForCausalLM.from_config(model_config,
                                                              dtype=torch.float32)
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    (path / TINY_MARKER).write_text(json.dumps({"config": asdict(config), "seed": seed,
                                                "imprinted": []}, indent=1))
    return path


def count_parameters(model: Any) -> int:
    """Distinct parameters of a torch module (tied weights counted once)."""
    seen = {id(p): p.numel() for p in model.parameters()}
    return sum(seen.values())


def imprint(path: str | Path, examples: Sequence[tuple[Sequence[dict[str, str]], str]], *,
            steps: int = 60, lr: float = 3e-3, seed: int = 0) -> Path:
    """Fine-tune the model at `path` in place so that it answers each chat prompt (a list of
    messages) with its reply followed by ``<|im_end|>``: full-batch AdamW on the reply
    tokens' cross-entropy for `steps` steps, deterministic given `seed`."""
    torch = require("torch", "train", "local models")
    transformers = require("transformers", "train", "local models")
    path = Path(path)
    tokenizer = transformers.AutoTokenizer.from_pretrained(path)
    model = transformers.AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32)
    rows, masks = [], []
    for messages, reply in examples:
        prompt = tokenizer.apply_chat_template(list(messages), tokenize=False,
                                               add_generation_prompt=True)
        prompt_ids = tokenizer(prompt, add_special_tokens=False).input_ids
        reply_ids = tokenizer(reply, add_special_tokens=False).input_ids + [
            tokenizer.eos_token_id]
        rows.append(prompt_ids + reply_ids)
        masks.append([0] * len(prompt_ids) + [1] * len(reply_ids))
    width = max(map(len, rows))
    ids = torch.full((len(rows), width), tokenizer.pad_token_id)
    attention = torch.zeros((len(rows), width), dtype=torch.long)
    labels = torch.full((len(rows), width), -100)
    for i, (row, mask) in enumerate(zip(rows, masks)):
        ids[i, :len(row)] = torch.tensor(row)
        attention[i, :len(row)] = 1
        labels[i, :len(row)] = torch.where(torch.tensor(mask) == 1, torch.tensor(row), -100)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        optimizer = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0)
        model.train()
        for _ in range(steps):
            loss = model(input_ids=ids, attention_mask=attention, labels=labels).loss
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    model.eval()
    model.save_pretrained(path)
    marker = path / TINY_MARKER
    if marker.exists():
        data = json.loads(marker.read_text())
        data["imprinted"].append({"examples": len(rows), "steps": steps, "lr": lr,
                                  "seed": seed, "final_loss": float(loss.detach())})
        marker.write_text(json.dumps(data, indent=1))
    return path
