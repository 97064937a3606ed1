"""The ``checkpoint`` backend: a model the bundled trainer saved, evaluated like ``hf``.

Layout: a directory in Hugging Face layout (the trainer's ``save_pretrained``) with a
``checkpoint.json`` beside the weights holding at least ``train_seed`` and ``step`` (and
whatever else the trainer records: run id, base model, algorithm). ``checkpoint:PATH`` where
PATH holds no ``checkpoint.json`` but ``step-*`` subdirectories that do, takes the one with
the highest ``step``. The policy carries ``train_seed`` and the metadata as provenance, so
leaderboards separate training seeds.

The checkpoint is evaluated with the scaffold it was trained with (``scaffold`` in
``checkpoint.json``, a `ScaffoldSpec`; ``bare@2`` for the bundled trainer) and, unless the
spec sets ``max_tokens``, the trainer's completion budget (``decoding.max_new_tokens``).
An explicit ``scaffold=``, ``format=``, ``history=`` or ``max_action_chars=`` that changes
the stored scaffold is applied with a warning, logged and kept in the policy's provenance
(stored with every episode).
"""

from __future__ import annotations

import json
import logging
from dataclasses import replace
from pathlib import Path
from typing import Any

from harness.core import ConfigError
from harness.policies.model import ModelPolicy
from harness.policies.scaffold import ScaffoldSpec, make_scaffold
from harness.policies.specs import ModelSpec

log = logging.getLogger(__name__)

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


def stored_scaffold(metadata: dict[str, Any]) -> ScaffoldSpec | None:
    """The scaffold a checkpoint was trained with (None when its metadata names none)."""
    stored = metadata.get("scaffold")
    return None if stored is None else ScaffoldSpec.from_value(stored)


def _train_seed(spec: ModelSpec, metadata: dict[str, Any], override: int | None) -> int | None:
    if override is not None:
        return override
    if "train_seed" in spec.given:  # ?train_seed=N, or =none for no training seed
        return spec.options.train_seed
    return metadata["train_seed"]


def make_checkpoint_policy(spec: ModelSpec, *, policy_id: str | None = None,
                           train_seed: int | None = None) -> ModelPolicy:
    """The policy of a ``checkpoint:PATH`` spec. `policy_id` and `train_seed` replace the spec
    string and the checkpoint's training seed (the trainer's own evaluation uses them)."""
    from harness.policies.hf import LocalModel, location_free_key, make_hf_backend

    path = resolve_checkpoint(spec.target)
    metadata = read_checkpoint(path)
    stored = stored_scaffold(metadata)
    scaffold = spec.scaffold_spec(stored)
    provenance: dict[str, Any] = {"checkpoint": str(path), "checkpoint_meta": metadata}
    if stored is not None and scaffold != stored:
        warning = (f"checkpoint {path} was trained with scaffold {stored.to_dict()}; "
                   f"evaluating with {scaffold.to_dict()} as the policy spec asks")
        log.warning(warning)
        provenance["scaffold_warning"] = warning
    options = spec.options
    budget = (metadata.get("decoding") or {}).get("max_new_tokens")
    if "max_tokens" not in spec.given and isinstance(budget, int) and budget > 0:
        options = replace(options, max_tokens=budget)
    model = LocalModel(path, device=options.device, dtype=options.dtype,
                       threads=options.threads)
    return ModelPolicy(spec.spec, make_hf_backend(model, options), options,
                       train_seed=_train_seed(spec, metadata, train_seed),
                       provenance=provenance, scaffold=make_scaffold(scaffold),
                       policy_id=policy_id, rng_key=location_free_key(spec, path))
