"""The tiny base model: built once per shape, never seen half-written."""

from __future__ import annotations

import multiprocessing
from pathlib import Path

import pytest

from harness.train.config import ModelConfig
from harness.train.model import build_base


def _build_and_read(work_dir: str) -> list[str]:
    import transformers

    path = build_base(ModelConfig(), Path(work_dir))
    transformers.AutoTokenizer.from_pretrained(path)
    return sorted(item.name for item in path.iterdir())


def test_runs_that_share_a_folder_build_the_base_at_once_without_a_torn_read(tmp_path):
    """Four processes build the same base under one folder at the same moment (a study's arms
    on Ray): each reads a whole tokenizer, they all see the same files, and no private
    building folder is left behind."""
    context = multiprocessing.get_context("spawn")
    with context.Pool(4) as pool:
        listings = pool.map(_build_and_read, [str(tmp_path)] * 4)
    assert all(listing == listings[0] for listing in listings)
    assert "config.json" in listings[0] and "tokenizer.json" in listings[0]
    assert [item.name for item in tmp_path.iterdir()] == [build_base(ModelConfig(),
                                                                     tmp_path).name]


def test_a_half_built_folder_is_rebuilt_and_a_failed_build_leaves_nothing(tmp_path,
                                                                          monkeypatch):
    """A folder without config.json where the base belongs (an interrupted build) is replaced
    by a whole model; a build that fails leaves no private folder behind."""
    import harness.policies.tiny as tiny

    name = build_base(ModelConfig(), tmp_path / "first").name
    half = tmp_path / name
    half.mkdir()
    (half / "model.safetensors").write_bytes(b"torn")
    path = build_base(ModelConfig(), tmp_path)
    assert path == half and (path / "config.json").is_file()
    assert (path / "model.safetensors").stat().st_size > 4
    assert oct(path.stat().st_mode & 0o777) == "0o755"

    def fails(*args, **kwargs):
        raise RuntimeError("disk full")

    monkeypatch.setattr(tiny, "make_tiny_model", fails)
    other = tmp_path / "other"
    with pytest.raises(RuntimeError, match="disk full"):
        build_base(ModelConfig(hidden=32, heads=2, kv_heads=1, intermediate=64), other)
    assert list(other.iterdir()) == []
