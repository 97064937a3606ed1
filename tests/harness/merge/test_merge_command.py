"""`harness merge` as a user runs it: adapters merged in delta space (equal to peft's own
merge), the output evaluated by `harness run --policy checkpoint:`, user errors in one line,
and sharded output for models larger than a shard."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import harness.cli
from harness.merge.methods import MergeParams
from harness.merge.models import ModelReader, merge_models
from tests.harness.merge.fixture import make_inputs


@pytest.fixture(scope="module")
def inputs(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("merge-cli")
    make_inputs(root)
    return root


def _adapter(base: Path, out: Path, seed: int) -> Path:
    """A LoRA adapter on q_proj and v_proj with random (non-zero) B, saved by peft."""
    import peft
    import torch
    import transformers

    torch.manual_seed(seed)
    model = transformers.AutoModelForCausalLM.from_pretrained(base)
    config = peft.LoraConfig(r=2, lora_alpha=4, target_modules=["q_proj", "v_proj"],
                             init_lora_weights=False)
    wrapped = peft.get_peft_model(model, config)
    wrapped.save_pretrained(out)
    merged = wrapped.merge_and_unload()
    return out, {k: v.detach().double().numpy() for k, v in merged.state_dict().items()}


def test_an_adapter_is_its_base_plus_peft_delta(inputs, tmp_path):
    adapter, peft_merged = _adapter(inputs / "base", tmp_path / "adapter", seed=1)
    with ModelReader(inputs / "base") as base, ModelReader(adapter, base) as reader:
        names = reader.names()
        assert "model.layers.0.self_attn.q_proj.weight" in names
        for name in names:
            np.testing.assert_allclose(reader.get(name), peft_merged[name], atol=1e-6,
                                       err_msg=name)
        assert not np.allclose(reader.get("model.layers.1.self_attn.v_proj.weight"),
                               base.get("model.layers.1.self_attn.v_proj.weight"))


def test_merged_adapters_are_evaluated_as_a_checkpoint(inputs, tmp_path, capsys):
    first, _ = _adapter(inputs / "base", tmp_path / "first", seed=1)
    second, _ = _adapter(inputs / "base", tmp_path / "second", seed=2)
    out = tmp_path / "merged"
    assert harness.cli.main(["merge", "--method", "ties", "--base", str(inputs / "base"),
                             "--models", str(first), str(second), "--density", "0.5",
                             "--out", str(out)]) == 0
    assert f"evaluate with --policy checkpoint:{out}" in capsys.readouterr().out
    recipe = json.loads((out / "checkpoint.json").read_text())["merge"]
    assert recipe["method"] == "ties" and recipe["params"]["densities"] == [0.5]
    db = tmp_path / "h.db"
    assert harness.cli.main(["run", "--policy", f"checkpoint:{out}", "--suite",
                             "frozenlake-random@1", "--tasks", "2", "--db", str(db)]) == 0
    from harness.store import load_episodes

    episodes = load_episodes(db)
    assert len(episodes) == 2 and (episodes["status"] == "ok").all()


def test_user_errors_are_one_line(inputs, tmp_path, capsys):
    for argv, message in (
            (["--method", "tis"], "did you mean 'ties'"),
            (["--method", "ties"], "give the common base (--base)"),
            (["--method", "ties", "--base", str(inputs / "base"), "--weights", "1", "2", "3"],
             "3 weights for 2 models"),
            (["--method", "linear", "--base", str(tmp_path)], "holds no model.safetensors")):
        code = harness.cli.main(["merge", "--models", str(inputs / "a"), str(inputs / "b"),
                                 "--out", str(tmp_path / "x"), *argv])
        err = capsys.readouterr().err
        assert code == 2 and message in err and err.count("\n") == 1, err


def test_output_larger_than_a_shard_is_sharded_with_an_index(inputs, tmp_path):
    whole = merge_models("ram", [inputs / "a", inputs / "b"], tmp_path / "whole",
                         base=inputs / "base")
    sharded = merge_models("ram", [inputs / "a", inputs / "b"], tmp_path / "sharded",
                           base=inputs / "base", params=MergeParams(), shard_bytes=8_000)
    index = json.loads((sharded / "model.safetensors.index.json").read_text())
    assert len(set(index["weight_map"].values())) > 2
    with ModelReader(whole) as a, ModelReader(sharded) as b:
        assert a.names() == b.names()
        for name in a.names():
            assert np.array_equal(a.get(name), b.get(name))


def test_bench_merge_prints_peak_memory_beside_loading_whole(monkeypatch):
    from harness.merge import bench

    monkeypatch.setattr(bench, "TENSORS", 2)
    monkeypatch.setattr(bench, "PARAMETERS", 1 << 16)
    lines = bench.merge_report(None)
    assert lines[0].startswith("merge of 2 models over a base, 2 tensors")
    assert "harness merge --method ties : peak RSS" in lines[1]
    assert "loading the 3 models whole  : peak RSS" in lines[2]
    assert float(lines[3].split(":")[1]) > 0
