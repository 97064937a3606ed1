"""Merging whole models in chunks equals merging each parameter at once, for every method,
including TIES when many delta magnitudes are equal (its trim budget spent across chunks)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from harness.merge import models as merge_module
from harness.merge.methods import METHODS, MergeParams
from harness.merge.models import ModelReader, merge_models
from tests.harness.merge.fixture import make_inputs


@pytest.fixture(scope="module")
def inputs(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("merge-chunks")
    make_inputs(root)
    return root


def _quantised(inputs: Path, out: Path) -> Path:
    """Model ``c`` with deltas rounded to multiples of 0.01: many equal magnitudes."""
    import shutil

    import torch
    from safetensors.torch import save_file

    shutil.copytree(inputs / "c", out)
    with ModelReader(inputs / "c") as c, ModelReader(inputs / "base") as base:
        tensors = {name: torch.from_numpy((base.get(name) + np.round(
            (c.get(name) - base.get(name)) * 100) / 100).astype(np.float32))
                   for name in c.names()}
    save_file(tensors, str(out / "model.safetensors"), metadata={"format": "pt"})
    return out


@pytest.mark.parametrize("method", METHODS)
def test_chunks_equal_whole_parameters(inputs, tmp_path, monkeypatch, method):
    models = [inputs / "a", _quantised(inputs, tmp_path / "q")]
    params = MergeParams(weights=(1.0, 0.7), densities=(0.4, 0.25))
    whole = merge_models(method, models, tmp_path / "whole", base=inputs / "base",
                         params=params)
    monkeypatch.setattr(merge_module, "CHUNK", 37)  # every parameter in many chunks
    chunked = merge_models(method, models, tmp_path / "chunked", base=inputs / "base",
                           params=params)
    with ModelReader(whole) as a, ModelReader(chunked) as b:
        for name in a.names():
            assert np.array_equal(a.read(name), b.read(name)), name
