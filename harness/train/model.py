"""Loading the trained model: a fresh tiny model, a Hugging Face directory or a harness
checkpoint; LoRA wrapping (peft); the value head; the frozen reference for the KL term."""

from __future__ import annotations

import copy
import logging
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.core import ConfigError, require
from harness.train.config import ModelConfig
from harness.train.prompting import COMPACT_TEMPLATE

log = logging.getLogger(__name__)

__all__ = ["LoadedModel", "resolve_device", "build_base", "load_model",
           "make_value_head", "reference_logits_context", "model_kwargs"]

CHAT_TEMPLATES = {"model": None, "compact": COMPACT_TEMPLATE}


def resolve_device(name: str) -> str:
    torch = require("torch", "train", "training")
    if name == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if name == "cuda" and not torch.cuda.is_available():
        raise ConfigError("model.device = 'cuda' but torch sees no GPU; use 'auto' or 'cpu'")
    if name not in ("cpu", "cuda"):
        raise ConfigError(f"model.device must be auto, cpu or cuda, got {name!r}")
    return name


@dataclass
class LoadedModel:
    """The policy being trained, its tokenizer and where its initial weights came from."""

    model: Any
    tokenizer: Any
    base_path: Path
    device: str
    lora: bool


def build_base(config: ModelConfig, work_dir: Path, chat_template: str = "model") -> Path:
    """The directory of the initial weights: a tiny model built under `work_dir` (once;
    the same shape and init seed give the same weights) or `config.source` itself."""
    if config.source != "tiny":
        path = Path(config.source)
        if not (path / "config.json").exists():
            raise ConfigError(f"model.source {config.source!r} is neither 'tiny' nor a model "
                              "directory with a config.json")
        return path
    from harness.policies.tiny import TinyConfig, make_tiny_model

    tiny = TinyConfig(arch=config.arch, hidden=config.hidden, layers=config.layers,
                      heads=config.heads, kv_heads=config.kv_heads,
                      intermediate=config.intermediate)
    name = (f"tiny-{config.arch}-h{config.hidden}-l{config.layers}-a{config.heads}"
            f"-kv{config.kv_heads}-i{config.intermediate}-s{config.init_seed}"
            f"-std{config.init_std:g}-{chat_template}")
    path = work_dir / name
    if (path / "config.json").exists():
        return path
    # built in a private folder and renamed into place whole: runs that share `work_dir`
    # (a study's arms on Ray) never read a half-written model
    work_dir.mkdir(parents=True, exist_ok=True)
    building = Path(tempfile.mkdtemp(prefix=f".{name}-", dir=work_dir))
    try:
        make_tiny_model(building, tiny, seed=config.init_seed)
        if config.init_std:
            _reinitialise(building, config.init_std, config.init_seed)
        if CHAT_TEMPLATES[chat_template] is not None:
            transformers = require("transformers", "train", "training")
            tokenizer = transformers.AutoTokenizer.from_pretrained(building)
            tokenizer.chat_template = CHAT_TEMPLATES[chat_template]
            tokenizer.save_pretrained(building)
        building.chmod(0o755)  # mkdtemp's folder is private; the model is not
        if path.exists() and not (path / "config.json").exists():
            # a folder left half-built by an interrupted build in place (before builds were
            # renamed into place): never one in progress, so it is rebuilt
            shutil.rmtree(path, ignore_errors=True)
        try:
            building.rename(path)
        except OSError:  # another run put the same model there first
            if not (path / "config.json").exists():
                raise
    finally:
        shutil.rmtree(building, ignore_errors=True)
    return path


def _reinitialise(path: Path, std: float, seed: int) -> None:
    """Redraw every linear and embedding weight of the model at `path` from N(0, std^2)
    (biases 0), from a generator seeded by `seed` only, and save it in place."""
    torch = require("torch", "train", "training")
    transformers = require("transformers", "train", "training")
    model = transformers.AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32)
    generator = torch.Generator().manual_seed(int(seed))
    with torch.no_grad():
        for module in model.modules():
            if isinstance(module, (torch.nn.Linear, torch.nn.Embedding)):
                module.weight.copy_(torch.randn(module.weight.shape, generator=generator) * std)
                if getattr(module, "bias", None) is not None:
                    module.bias.zero_()
    model.save_pretrained(path)


def load_model(config: ModelConfig, path: Path, *, chat_template: str = "model",
               adapter: Path | None = None) -> LoadedModel:
    """Load weights from `path` onto the configured device, in float32 (bf16 autocast on a
    GPU happens in the learner), and wrap them with LoRA when ``lora_rank > 0``."""
    torch = require("torch", "train", "training")
    transformers = require("transformers", "train", "training")
    if config.threads:
        torch.set_num_threads(config.threads)
    # same recipe, seed and machine kind -> the same numbers (warn where an op has no
    # deterministic kernel rather than fail)
    torch.use_deterministic_algorithms(True, warn_only=True)
    device = resolve_device(config.device)
    tokenizer = transformers.AutoTokenizer.from_pretrained(path)
    if chat_template not in CHAT_TEMPLATES:
        raise ConfigError(f"unknown chat template {chat_template!r} (known: model, compact)")
    if CHAT_TEMPLATES[chat_template] is not None:
        tokenizer.chat_template = CHAT_TEMPLATES[chat_template]
    if tokenizer.chat_template is None:
        raise ConfigError(f"the tokenizer at {path} has no chat template; set "
                          "chat_template = 'compact' in the [model] section")
    model = transformers.AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32)
    model.to(device)
    lora = config.lora_rank > 0
    if lora:
        peft = require("peft", "train", "LoRA training")
        if adapter is not None:
            model = peft.PeftModel.from_pretrained(model, adapter, is_trainable=True)
        else:
            lora_config = peft.LoraConfig(r=config.lora_rank, lora_alpha=config.lora_alpha,
                                          lora_dropout=config.lora_dropout,
                                          target_modules="all-linear", task_type="CAUSAL_LM")
            model = peft.get_peft_model(model, lora_config)
    model.config.use_cache = False
    return LoadedModel(model, tokenizer, Path(path), device, lora)


def make_value_head(model: Any) -> Any:
    """A linear value head on the last hidden state, initialised to output 0."""
    torch = require("torch", "train", "training")
    hidden = model.config.get_text_config().hidden_size
    head = torch.nn.Linear(hidden, 1)
    torch.nn.init.zeros_(head.weight)
    torch.nn.init.zeros_(head.bias)
    return head.to(next(model.parameters()).device)


class _DisabledAdapter:
    def __init__(self, model: Any):
        self.model = model

    def __enter__(self) -> Any:
        self._context = self.model.disable_adapter()
        self._context.__enter__()
        return self.model

    def __exit__(self, *exc: Any) -> None:
        self._context.__exit__(*exc)


def reference_logits_context(loaded: LoadedModel, frozen: Any | None):
    """A context manager yielding the reference model: the LoRA model with its adapter
    disabled (the base), or `frozen` (a copy of the initial full model)."""
    import contextlib

    if loaded.lora:
        return _DisabledAdapter(loaded.model)
    return contextlib.nullcontext(frozen)


def frozen_copy(model: Any) -> Any:
    """A frozen copy of `model` (the reference of full fine-tuning)."""
    reference = copy.deepcopy(model)
    for parameter in reference.parameters():
        parameter.requires_grad_(False)
    reference.eval()
    return reference


def model_kwargs(model: Any) -> str:
    """The keyword a model's forward takes its KV cache by (``cache`` in transformers >= 5.2,
    ``past_key_values`` before)."""
    import inspect

    forward = getattr(model, "get_base_model", lambda: model)().forward
    return "cache" if "cache" in inspect.signature(forward).parameters else "past_key_values"
