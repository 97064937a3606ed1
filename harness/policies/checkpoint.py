"""The ``checkpoint`` backend: a model the bundled trainer saved, evaluated like ``hf``.

Layout: a directory in Hugging Face layout (the trainer's ``save_pretrained``) with a
``checkpoint.json`` beside the weights holding at least ``train_seed`` and ``step`` (and
whatever else the trainer records: run id, base model, algorithm). ``checkpoint:PATH`` where
PATH holds no ``checkpoint.json`` but ``step-*`` subdirectories that do, takes the one with
the highest ``step``. The policy carries ``train_seed`` and the metadata as provenance, so
leaderboards separate training seeds.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from harness.core import ConfigError
from harness.policies.model import ModelPolicy
from harness.policies.specs import ModelSpec

__all__ = ["CHECKPOINT_FILE", "write_checkpoint_metadata", "read_checkpoint",
           "resolve_checkpoint", "make_checkpoint_policy"]

CHECKPOINT_FILE = "checkpoint.json"


def write_checkpoint_metadata(path: str | Path, *, train_seed: int, step: int,
                              **info: Any) -> Path:
    """Mark the model directory `path` as a trainer checkpoint (``checkpoint.json``)."""
    path = Path(path)
    data = {"train_seed": int(train_seed), "step": int(step), **info}
    (path / CHECKPOINT_FILE).write_text(json.dumps(data, indent=1, sort_keys=True))
    return path / CHECKPOINT_FILE


def read_checkpoint(path: str | Path) -> dict[str, Any]:
    """The metadata of the checkpoint directory `path`."""
    file = Path(path) / CHECKPOINT_FILE
    try:
        data = json.loads(file.read_text())
    except FileNotFoundError:
        raise ConfigError(f"{path} is not a harness checkpoint (no {CHECKPOINT_FILE}); use "
                          "hf:PATH for a plain model directory") from None
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{file} is not valid JSON: {exc}") from None
    for key in ("train_seed", "step"):
        if not isinstance(data.get(key), int):
            raise ConfigError(f"{file} needs an integer {key!r}")
    return data


def resolve_checkpoint(path: str | Path) -> Path:
    """`path` itself when it is a checkpoint, else its latest ``step-*`` checkpoint."""
    path = Path(path)
    if (path / CHECKPOINT_FILE).is_file() or not path.is_dir():
        return path
    steps = [(read_checkpoint(child)["step"], child) for child in path.glob("step-*")
             if (child / CHECKPOINT_FILE).is_file()]
    if not steps:
        return path
    return max(steps)[1]


def make_checkpoint_policy(spec: ModelSpec) -> ModelPolicy:
    """The policy of a ``checkpoint:PATH`` spec."""
    from harness.policies.hf import LocalModel, make_hf_backend

    path = resolve_checkpoint(spec.target)
    metadata = read_checkpoint(path)
    options = spec.options
    model = LocalModel(path, device=options.device, dtype=options.dtype,
                       threads=options.threads)
    return ModelPolicy(spec.spec, make_hf_backend(model, options), options,
                       train_seed=metadata["train_seed"],
                       provenance={"checkpoint": str(path), "checkpoint_meta": metadata})
