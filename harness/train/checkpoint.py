"""Checkpoints: the standard Hugging Face layout plus the harness's training metadata.

A checkpoint directory holds

- ``config.json``, ``model.safetensors``, ``generation_config.json``: the full model
  (LoRA adapters merged), loadable by ``AutoModelForCausalLM.from_pretrained``;
- ``tokenizer.json``, ``tokenizer_config.json``, ``chat_template.jinja``: the tokenizer and
  the chat template training rendered prompts with;
- ``checkpoint.json`` (the file the ``checkpoint:PATH`` policy reads, written by
  `harness.policies.checkpoint.write_checkpoint_metadata`): ``format``
  (``"harness-train-checkpoint"``), ``version``,
  ``policy_id``, ``suite``, ``train_seed``, ``step``, ``algorithm``, ``metrics`` (of the last
  update), ``scaffold`` (how prompts were built: ``{"name": "bare", "history": K, ...}``),
  ``decoding`` (``temperature``, ``max_new_tokens``), ``init`` (the weights training started
  from), ``train_config`` (the whole resolved `TrainConfig` as plain values);
- ``trainer_state.pt``: optimizer, schedule and value-head state for resuming; and, for LoRA,
  ``adapter/`` (the peft adapter alone, for resuming).

RL checkpoints are named ``step-<step>`` (six digits), so ``checkpoint:SEED_DIR`` resolves to
the latest one. The directory is written under a temporary name and renamed, so a checkpoint
either exists whole or not at all.
"""

from __future__ import annotations

import copy
import json
import os
import shutil
from pathlib import Path
from typing import Any

from harness.core import HarnessError
from harness.policies.checkpoint import CHECKPOINT_FILE, write_checkpoint_metadata

__all__ = ["CHECKPOINT_META", "CHECKPOINT_FORMAT", "save_checkpoint", "load_checkpoint_meta",
           "is_checkpoint", "latest_checkpoint", "checkpoint_dir_name"]

CHECKPOINT_META = CHECKPOINT_FILE
CHECKPOINT_FORMAT = "harness-train-checkpoint"
CHECKPOINT_VERSION = 1
TRAINER_STATE = "trainer_state.pt"


def checkpoint_dir_name(step: int) -> str:
    return f"step-{step:06d}"


def save_checkpoint(path: str | os.PathLike, *, model: Any, tokenizer: Any,
                    meta: dict[str, Any], trainer_state: dict[str, Any] | None = None,
                    lora: bool = False) -> Path:
    """Write a checkpoint directory at `path` (replacing one that exists)."""
    import torch

    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir(parents=True)
    full = copy.deepcopy(model).merge_and_unload() if lora else model
    full.save_pretrained(tmp)
    tokenizer.save_pretrained(tmp)
    if lora:
        model.save_pretrained(tmp / "adapter")
    if trainer_state is not None:
        torch.save(trainer_state, tmp / TRAINER_STATE)
    info = {k: v for k, v in meta.items() if k not in ("train_seed", "step")}
    write_checkpoint_metadata(tmp, train_seed=meta["train_seed"], step=meta["step"],
                              format=CHECKPOINT_FORMAT, version=CHECKPOINT_VERSION,
                              **json.loads(json.dumps(info, default=str)))
    if path.exists():
        shutil.rmtree(path)
    tmp.rename(path)
    return path


def is_checkpoint(path: str | os.PathLike) -> bool:
    return (Path(path) / CHECKPOINT_META).exists()


def load_checkpoint_meta(path: str | os.PathLike) -> dict[str, Any]:
    """The ``harness_checkpoint.json`` of a checkpoint directory."""
    meta_path = Path(path) / CHECKPOINT_META
    if not meta_path.exists():
        raise HarnessError(f"{path} is not a harness checkpoint (no {CHECKPOINT_META})")
    meta = json.loads(meta_path.read_text())
    if meta.get("format") != CHECKPOINT_FORMAT:
        raise HarnessError(f"{meta_path} has format {meta.get('format')!r}, expected "
                           f"{CHECKPOINT_FORMAT!r}")
    return meta


def latest_checkpoint(directory: str | os.PathLike) -> Path | None:
    """The checkpoint with the highest step under `directory`, or None."""
    directory = Path(directory)
    if not directory.exists():
        return None
    found = sorted(p for p in directory.glob("step-*")
                   if p.is_dir() and not p.name.endswith(".tmp") and is_checkpoint(p))
    return found[-1] if found else None


def load_trainer_state(path: str | os.PathLike) -> dict[str, Any]:
    import torch

    state_path = Path(path) / TRAINER_STATE
    if not state_path.exists():
        raise HarnessError(f"{path} holds no {TRAINER_STATE}; it cannot be resumed from")
    return torch.load(state_path, weights_only=False)
