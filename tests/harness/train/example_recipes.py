"""The README's example recipes as the learning tests load them: the evidence runs the
examples a user runs, writing under the test's temporary folder."""

from __future__ import annotations

from pathlib import Path

from harness.train.config import TrainConfig, load_train_config

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


def example_recipe(tmp_path: Path, example: str, **overrides) -> TrainConfig:
    """``examples/<example>`` writing under `tmp_path`, without transition files."""
    return load_train_config(EXAMPLES / example, {
        "out_dir": str(tmp_path / "out"), "db": str(tmp_path / "train.db"),
        "transitions_every": 0, **overrides})
