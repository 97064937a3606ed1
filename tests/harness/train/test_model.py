"""The tiny base model: built once per shape, never seen half-written."""

from __future__ import annotations

import multiprocessing
from pathlib import Path

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
