"""Merging whole models, one parameter at a time: `merge_models` reads one parameter of every
model (`harness.merge.safetensors_io`: plain reads, no memory map), merges it in chunks of
`CHUNK` entries in float64 (`harness.merge.methods`; TIES's trim thresholds and RAM+'s
counts are taken over the whole parameter first) and writes shards as they fill, so a merge
holds the current parameter of each model and one shard, not several models. ``ramplus``
reads the models twice (its first pass counts each model's shared and unique changes over
the whole model).

A model is a Hugging Face folder (``model.safetensors``, or shards listed by
``model.safetensors.index.json``) or a LoRA adapter folder (``adapter_config.json`` and
``adapter_model.safetensors``): an adapter becomes the base plus its dense delta
``B @ A * lora_alpha / r`` on the modules it targets, so adapters merge in delta space
against their common base.

The output is a checkpoint folder: the base's (or first model's) configuration and tokenizer
files, the weights (``model.safetensors``, or shards of about ``shard_bytes`` and their
index), and ``checkpoint.json`` with the merge recipe (method, models, base, options) under
``merge``, which ``harness run --policy checkpoint:OUT`` evaluates.
"""

from __future__ import annotations

import contextlib
import json
import shutil
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np

from harness.core import ConfigError, HarnessError, UnknownNameError
from harness.merge import methods as m
from harness.merge.safetensors_io import SafetensorsFile

__all__ = ["merge_models", "ModelReader", "CHUNK"]

WEIGHTS = "model.safetensors"
INDEX = "model.safetensors.index.json"
ADAPTER_CONFIG = "adapter_config.json"
ADAPTER_WEIGHTS = "adapter_model.safetensors"
CHUNK = 1 << 20
"""Entries merged at once (float64 work arrays of a few times this)."""
COPIED = ("config.json", "generation_config.json", "tokenizer.json", "tokenizer_config.json",
          "special_tokens_map.json", "chat_template.jinja", "vocab.json", "merges.txt",
          "tokenizer.model", "harness_tiny.json")


class ModelReader:
    """The parameters of one model folder, by name, one at a time (a context manager)."""

    def __init__(self, path: str | Path, base: "ModelReader | None" = None):
        self.path = Path(path)
        self.base = base
        self._files: list[SafetensorsFile] = []
        self._where: dict[str, SafetensorsFile] = {}
        self._adapter: SafetensorsFile | None = None
        self._lora: dict[str, tuple[str, str, float]] = {}
        if (self.path / ADAPTER_CONFIG).is_file():
            if base is None:
                raise ConfigError(f"{path} is a LoRA adapter: give its base model (--base)")
            self._open_adapter()
            return
        for file in self._weight_files():
            handle = SafetensorsFile(file)
            self._files.append(handle)
            self._where.update({name: handle for name in handle.names()})

    def _weight_files(self) -> list[Path]:
        if (self.path / WEIGHTS).is_file():
            return [self.path / WEIGHTS]
        if (self.path / INDEX).is_file():
            shards = sorted(set(json.loads((self.path / INDEX).read_text())["weight_map"]
                                .values()))
            return [self.path / shard for shard in shards]
        raise ConfigError(f"{self.path} holds no {WEIGHTS}, {INDEX} or {ADAPTER_CONFIG}")

    def _open_adapter(self) -> None:
        config = json.loads((self.path / ADAPTER_CONFIG).read_text())
        scaling = float(config.get("lora_alpha", 8)) / float(config.get("r", 8))
        self._adapter = SafetensorsFile(self.path / ADAPTER_WEIGHTS)
        self._files.append(self._adapter)
        for name in self._adapter.names():
            if ".lora_A." in name:
                target = name.split(".lora_A.")[0].removeprefix("base_model.model.") + ".weight"
                self._lora[target] = (name, name.replace(".lora_A.", ".lora_B."), scaling)

    def names(self) -> list[str]:
        if self._adapter is not None:
            assert self.base is not None
            unknown = sorted(set(self._lora) - set(self.base.names()))
            if unknown:
                raise HarnessError(f"{self.path}: adapter targets {unknown[:3]} are not "
                                   "parameters of the base")
            return self.base.names()
        return sorted(self._where)

    def read(self, name: str) -> np.ndarray:
        """Parameter `name` in its stored precision (an adapter's: float64)."""
        if self._adapter is not None:
            assert self.base is not None
            tensor = self.base.read(name)
            if name in self._lora:
                a_name, b_name, scaling = self._lora[name]
                a = self._adapter.read(a_name).astype(np.float64)
                b = self._adapter.read(b_name).astype(np.float64)
                tensor = tensor + (b @ a) * scaling
            return tensor
        return self._where[name].read(name)

    def get(self, name: str) -> np.ndarray:
        """Parameter `name` as float64."""
        return self.read(name).astype(np.float64)

    def dtype(self, name: str) -> str:
        """The safetensors dtype code the output keeps (``F32``, ``BF16``, ...)."""
        if self._adapter is not None:
            assert self.base is not None
            return self.base.dtype(name)
        return self._where[name].dtype(name)

    def __enter__(self) -> "ModelReader":
        return self

    def __exit__(self, *exc: object) -> None:
        for handle in self._files:
            handle.close()


def _chunks(size: int) -> list[slice]:
    return [slice(start, min(start + CHUNK, size)) for start in range(0, size, CHUNK)]


def _ties_keep(tensors: list[np.ndarray], base: np.ndarray, params: m.MergeParams
               ) -> list[tuple[float, list[int]] | None]:
    """Per model, TIES's trim threshold and budget over the whole parameter (None: kept)."""
    plans: list[tuple[float, list[int]] | None] = []
    for density, tensor in zip(params.densities_for(len(tensors)), tensors):
        if density >= 1:
            plans.append(None)
            continue
        magnitudes = np.abs(tensor.astype(np.float64).reshape(-1) -
                            base.astype(np.float64).reshape(-1)).astype(np.float32)
        threshold, budget = m.trim_threshold(magnitudes, density)
        plans.append((threshold, [budget]))
    return plans


def _merge_parameter(method: str, tensors: list[np.ndarray], base: np.ndarray | None,
                     params: m.MergeParams, totals: np.ndarray | None) -> np.ndarray:
    """One parameter merged chunk by chunk; float32 out (float64 for float64 inputs)."""
    shape = tensors[0].shape
    flat = [t.reshape(-1) for t in tensors]
    flat_base = base.reshape(-1) if base is not None else None
    out = np.empty(flat[0].size, dtype=np.float64 if tensors[0].dtype == np.float64
                   else np.float32)
    keep_plans = _ties_keep(tensors, base, params) if method == "ties" else None
    counts = None
    if method == "ramplus_tl":
        counts = sum(m.ram_counts(np.stack([f[c].astype(np.float64) for f in flat]),
                                  flat_base[c].astype(np.float64), params.epsilon)
                     for c in _chunks(out.size))
    for chunk in _chunks(out.size):
        stack = np.stack([f[chunk].astype(np.float64) for f in flat])
        b = flat_base[chunk].astype(np.float64) if flat_base is not None else None
        if method == "linear":
            value = m.linear(stack, params)
        elif method == "task_arithmetic":
            value = m.task_arithmetic(stack, b, params)
        elif method == "ties":
            keep = np.stack([np.ones(stack.shape[1], dtype=bool) if plan is None else
                             m.trim_mask(np.abs(stack[i] - b).astype(np.float32), *plan)
                             for i, plan in enumerate(keep_plans)])
            value = m.ties(stack, b, params, keep=keep)
        elif method == "ram":
            value = m.ram(stack, b, params)
        elif method == "ramplus_tl":
            value = m.ramplus_tl(stack, b, params, counts=counts)
        else:
            value = m.ramplus(stack, b, params, totals=totals)
        out[chunk] = value
    return out.reshape(shape)


class _ShardWriter:
    """Writes merged parameters in shards of about `shard_bytes` (``model.safetensors`` when
    one is enough, else ``model-0000K-of-0000N.safetensors`` and the index)."""

    def __init__(self, folder: Path, shard_bytes: int):
        self.folder, self.shard_bytes = folder, shard_bytes
        self.pending: dict[str, Any] = {}
        self.size = 0
        self.written: list[tuple[Path, list[str]]] = []

    def add(self, name: str, value: np.ndarray, dtype: str) -> None:
        import torch

        tensor = torch.from_numpy(np.ascontiguousarray(value))
        target = {"F64": torch.float64, "F32": torch.float32, "F16": torch.float16,
                  "BF16": torch.bfloat16}.get(dtype)
        self.pending[name] = tensor.to(target) if target is not None else tensor
        self.size += self.pending[name].numel() * self.pending[name].element_size()
        if self.size >= self.shard_bytes:
            self._flush()

    def _flush(self) -> None:
        from safetensors.torch import save_file

        if not self.pending:
            return
        path = self.folder / f"shard-{len(self.written):05d}.tmp"
        save_file(self.pending, str(path), metadata={"format": "pt"})
        self.written.append((path, list(self.pending)))
        self.pending, self.size = {}, 0

    def close(self) -> None:
        self._flush()
        if len(self.written) == 1:
            self.written[0][0].rename(self.folder / WEIGHTS)
            return
        n, weight_map = len(self.written), {}
        for k, (path, names) in enumerate(self.written, start=1):
            final = f"model-{k:05d}-of-{n:05d}.safetensors"
            path.rename(self.folder / final)
            weight_map.update({name: final for name in names})
        (self.folder / INDEX).write_text(json.dumps({"metadata": {}, "weight_map": weight_map},
                                                    indent=1, sort_keys=True))


def _check(method: str, models: Sequence[str | Path], base: str | Path | None) -> None:
    if method not in m.METHODS:
        raise UnknownNameError("merge method", method, m.METHODS)
    if method in m.NEEDS_BASE and base is None:
        raise ConfigError(f"{method} merges in delta space: give the common base (--base)")
    if len(models) < 2 and method != "task_arithmetic":
        raise ConfigError(f"{method} needs at least two models, got {len(models)}")


def merge_models(method: str, models: Sequence[str | Path], out: str | Path, *,
                 base: str | Path | None = None, params: m.MergeParams = m.MergeParams(),
                 shard_bytes: int = 512 << 20) -> Path:
    """Merge `models` with `method` (against `base` for every method but linear) into the
    checkpoint folder `out` (see module), in shards of about `shard_bytes`; returns `out`."""
    _check(method, models, base)
    out = Path(out)
    tmp = out.with_name(out.name + ".tmp")
    with contextlib.ExitStack() as stack:
        base_reader = stack.enter_context(ModelReader(base)) if base is not None else None
        readers = [stack.enter_context(ModelReader(p, base_reader)) for p in models]
        names = readers[0].names()
        for reader, path in zip(readers[1:], models[1:]):
            if reader.names() != names:
                raise HarnessError(f"{path} and {models[0]} have different parameters")
        totals = None
        if method == "ramplus":  # the first pass: changes counted over the whole model
            totals = sum(m.ram_counts(np.stack([r.get(n) for r in readers]), base_reader.get(n),
                                      params.epsilon) for n in names)
        if tmp.exists():
            shutil.rmtree(tmp)
        tmp.mkdir(parents=True)
        shards = _ShardWriter(tmp, shard_bytes)
        for name in names:
            tensors = [r.read(name) for r in readers]
            base_tensor = base_reader.read(name) if base_reader is not None else None
            shards.add(name, _merge_parameter(method, tensors, base_tensor, params, totals),
                       readers[0].dtype(name))
        shards.close()
    source = Path(base) if base is not None and not (Path(base) / ADAPTER_CONFIG).is_file() \
        else Path(models[0])
    _write_metadata(tmp, source, method, models, base, params)
    if out.exists():
        shutil.rmtree(out)
    tmp.rename(out)
    return out


def _write_metadata(folder: Path, source: Path, method: str, models: Sequence[str | Path],
                    base: str | Path | None, params: m.MergeParams) -> None:
    for name in COPIED:
        if (source / name).is_file():
            shutil.copyfile(source / name, folder / name)
    meta: dict[str, Any] = {"train_seed": 0, "step": 0}
    for candidate in (source, *map(Path, models)):
        if (candidate / "checkpoint.json").is_file():
            meta = json.loads((candidate / "checkpoint.json").read_text())
            break
    meta["merge"] = {"method": method, "models": [str(p) for p in models],
                     "base": str(base) if base is not None else None,
                     "params": {k: v for k, v in asdict(params).items() if v is not None}}
    (folder / "checkpoint.json").write_text(json.dumps(meta, indent=1, sort_keys=True))
