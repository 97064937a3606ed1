"""Merging whole models, tensor by tensor: `merge_models` reads one parameter of every model
at a time from ``model.safetensors`` (`safetensors.safe_open`), merges it
(`harness.merge.methods`) and writes the result, so a 7B merge holds a few tensors in memory,
not several models. ``ramplus`` reads the models twice (its first pass counts each model's
shared and unique changes over the whole model).

A model is a Hugging Face folder (``model.safetensors``, or shards listed by
``model.safetensors.index.json``) or a LoRA adapter folder (``adapter_config.json`` and
``adapter_model.safetensors``): an adapter becomes the base plus its dense delta
``B @ A * lora_alpha / r`` on the modules it targets, so adapters merge in delta space
against their common base.

The output is a checkpoint folder: the base's (or first model's) configuration and tokenizer
files, ``model.safetensors``, and ``checkpoint.json`` with the merge recipe (method, models,
weights, densities, epsilon, r, alpha) under ``merge``, which ``harness run --policy
checkpoint:OUT`` evaluates.
"""

from __future__ import annotations

import contextlib
import json
import shutil
from collections.abc import Iterator, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np

from harness.core import ConfigError, HarnessError, UnknownNameError
from harness.merge import methods as m

__all__ = ["merge_models", "ModelReader"]

WEIGHTS = "model.safetensors"
INDEX = "model.safetensors.index.json"
ADAPTER_CONFIG = "adapter_config.json"
ADAPTER_WEIGHTS = "adapter_model.safetensors"
COPIED = ("config.json", "generation_config.json", "tokenizer.json", "tokenizer_config.json",
          "special_tokens_map.json", "chat_template.jinja", "vocab.json", "merges.txt",
          "tokenizer.model", "harness_tiny.json")


class ModelReader:
    """The tensors of one model folder, by name, one at a time (a context manager)."""

    def __init__(self, path: str | Path, base: "ModelReader | None" = None):
        self.path = Path(path)
        self.base = base
        self._stack = contextlib.ExitStack()
        self._where: dict[str, Any] = {}
        self._adapter: Any = None
        self._lora: dict[str, tuple[str, str, float]] = {}
        if (self.path / ADAPTER_CONFIG).is_file():
            if base is None:
                raise ConfigError(f"{path} is a LoRA adapter: give its base model (--base)")
            self._open_adapter()
        else:
            for file in self._weight_files():
                handle = self._stack.enter_context(_safe_open(file))
                for name in handle.keys():
                    self._where[name] = handle

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
        self._adapter = self._stack.enter_context(_safe_open(self.path / ADAPTER_WEIGHTS))
        for name in self._adapter.keys():
            if ".lora_A." in name:
                prefix = name.split(".lora_A.")[0]
                target = prefix.removeprefix("base_model.model.") + ".weight"
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

    def get(self, name: str) -> np.ndarray:
        """Parameter `name` as float64."""
        if self._adapter is not None:
            assert self.base is not None
            tensor = self.base.get(name)
            if name in self._lora:
                a_name, b_name, scaling = self._lora[name]
                a = self._adapter.get_tensor(a_name).double().numpy()
                b = self._adapter.get_tensor(b_name).double().numpy()
                tensor = tensor + (b @ a) * scaling
            return tensor
        return self._where[name].get_tensor(name).double().numpy()

    def dtype(self, name: str) -> Any:
        if self._adapter is not None:
            assert self.base is not None
            return self.base.dtype(name)
        return self._where[name].get_tensor(name).dtype

    def __enter__(self) -> "ModelReader":
        return self

    def __exit__(self, *exc: object) -> None:
        self._stack.close()


def _safe_open(path: Path) -> Any:
    from safetensors import safe_open

    return safe_open(str(path), "pt")


def _merge_one(method: str, stack: np.ndarray, base: np.ndarray | None,
               params: m.MergeParams, totals: np.ndarray | None) -> np.ndarray:
    if method == "linear":
        return m.linear(stack, params)
    assert base is not None
    if method == "ramplus":
        assert totals is not None
        return m.ramplus(stack, base, params, totals=totals)
    return {"task_arithmetic": m.task_arithmetic, "ties": m.ties, "ram": m.ram,
            "ramplus_tl": m.ramplus_tl}[method](stack, base, params)


def _tensors(readers: Sequence[ModelReader], base: ModelReader | None,
             names: Sequence[str]) -> Iterator[tuple[str, np.ndarray, np.ndarray | None]]:
    for name in names:
        stack = np.stack([r.get(name) for r in readers])
        yield name, stack, (base.get(name) if base is not None else None)


class _ShardWriter:
    """Writes merged tensors in shards of about `shard_bytes` (``model.safetensors`` when one
    is enough, else ``model-0000K-of-0000N.safetensors`` and the index), so the output never
    sits in memory whole."""

    def __init__(self, folder: Path, shard_bytes: int):
        self.folder, self.shard_bytes = folder, shard_bytes
        self.pending: dict[str, Any] = {}
        self.size = 0
        self.written: list[tuple[Path, list[str]]] = []

    def add(self, name: str, tensor: Any) -> None:
        self.pending[name] = tensor
        self.size += tensor.numel() * tensor.element_size()
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


def merge_models(method: str, models: Sequence[str | Path], out: str | Path, *,
                 base: str | Path | None = None, params: m.MergeParams = m.MergeParams(),
                 shard_bytes: int = 1 << 30) -> Path:
    """Merge `models` with `method` (against `base` for every method but linear) into the
    checkpoint folder `out` (see module), in shards of about `shard_bytes`; returns `out`."""
    import torch

    if method not in m.METHODS:
        raise UnknownNameError("merge method", method, m.METHODS)
    if method in m.NEEDS_BASE and base is None:
        raise ConfigError(f"{method} merges in delta space: give the common base (--base)")
    if len(models) < 2 and method != "task_arithmetic":
        raise ConfigError(f"{method} needs at least two models, got {len(models)}")
    out = Path(out)
    with contextlib.ExitStack() as stack:
        base_reader = stack.enter_context(ModelReader(base)) if base is not None else None
        readers = [stack.enter_context(ModelReader(p, base_reader)) for p in models]
        names = readers[0].names()
        for reader, path in zip(readers[1:], models[1:]):
            if reader.names() != names:
                raise HarnessError(f"{path} and {models[0]} have different parameters")
        totals = None
        if method == "ramplus":  # the first pass: changes counted over the whole model
            totals = sum(m.ram_counts(s, b, params.epsilon)
                         for _, s, b in _tensors(readers, base_reader, names))
        tmp = out.with_name(out.name + ".tmp")
        if tmp.exists():
            shutil.rmtree(tmp)
        tmp.mkdir(parents=True)
        shards = _ShardWriter(tmp, shard_bytes)
        for name, tensors, base_tensor in _tensors(readers, base_reader, names):
            value = _merge_one(method, tensors, base_tensor, params, totals)
            shards.add(name, torch.from_numpy(value).to(readers[0].dtype(name)).contiguous())
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
