"""The differential fixture's inputs: a base model in the tiny Qwen2 layout (two layers,
hidden 16) with weights drawn by numpy (PCG64, the same on every machine), and three models
that change sparse, overlapping supports of it; and the mergekit configurations whose outputs
`mergekit-0.1.5.npz` records (see README.md beside it)."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np

SEED = 20261206
SUPPORTS = {"a": 0.3, "b": 0.5, "c": 0.2}
"""Share of each model's coordinates it changes (random, so supports overlap)."""

CASES = {
    "linear": """merge_method: linear
models:
  - model: ROOT/a
    parameters: {weight: 0.3}
  - model: ROOT/b
    parameters: {weight: 0.7}
dtype: float32
""",
    "task_arithmetic": """merge_method: task_arithmetic
base_model: ROOT/base
models:
  - model: ROOT/a
    parameters: {weight: 0.5}
  - model: ROOT/b
    parameters: {weight: 0.8}
dtype: float32
""",
    "ties": """merge_method: ties
base_model: ROOT/base
models:
  - model: ROOT/a
    parameters: {weight: 1.0, density: 0.5}
  - model: ROOT/b
    parameters: {weight: 0.6, density: 0.3}
  - model: ROOT/c
    parameters: {weight: 0.8, density: 0.7}
dtype: float32
""",
    "ram": """merge_method: ram
base_model: ROOT/base
models:
  - model: ROOT/a
  - model: ROOT/b
  - model: ROOT/c
dtype: float32
""",
    "ramplus_tl": """merge_method: ramplus_tl
base_model: ROOT/base
models:
  - model: ROOT/a
  - model: ROOT/b
  - model: ROOT/c
dtype: float32
""",
}
"""Each case's mergekit configuration; `OURS` gives the same merge in this project's terms."""

OURS = {
    "linear": ("linear", ["a", "b"], {"weights": (0.3, 0.7)}),
    "task_arithmetic": ("task_arithmetic", ["a", "b"], {"weights": (0.5, 0.8)}),
    "ties": ("ties", ["a", "b", "c"], {"weights": (1.0, 0.6, 0.8),
                                       "densities": (0.5, 0.3, 0.7)}),
    "ram": ("ram", ["a", "b", "c"], {}),
    "ramplus_tl": ("ramplus_tl", ["a", "b", "c"], {}),
}


def make_inputs(root: Path) -> None:
    """Write ``base``, ``a``, ``b`` and ``c`` model folders under `root`."""
    import torch
    from safetensors import safe_open
    from safetensors.torch import save_file

    from harness.policies.tiny import TinyConfig, make_tiny_model

    template = root / "template"
    make_tiny_model(template, TinyConfig(hidden=16, layers=2, heads=2, kv_heads=1,
                                         intermediate=32))
    with safe_open(template / "model.safetensors", "pt") as handle:
        shapes = {name: tuple(handle.get_slice(name).get_shape()) for name in handle.keys()}
    rng = np.random.default_rng(SEED)
    base = {name: rng.normal(0, 0.1, shape).astype(np.float32)
            for name, shape in sorted(shapes.items())}
    models = {"base": base}
    for model, share in SUPPORTS.items():
        models[model] = {}
        for name, value in sorted(base.items()):
            changed = rng.random(value.shape) < share
            delta = rng.normal(0, 0.02, value.shape) * changed
            models[model][name] = (value + delta).astype(np.float32)
    for model, tensors in models.items():
        folder = root / model
        shutil.rmtree(folder, ignore_errors=True)
        shutil.copytree(template, folder)
        save_file({k: torch.from_numpy(v) for k, v in tensors.items()},
                  str(folder / "model.safetensors"), metadata={"format": "pt"})
