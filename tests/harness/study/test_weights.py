"""Weight analyses: hand-computed effective ranks, parameter groups of real model names,
change norms and grafts on a tiny model with known edits."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import numpy as np
import pytest

from harness.core import HarnessError, UnknownNameError
from harness.merge.groups import layer_of, parameter_group
from harness.study.weights import (change_norms, check_selectors, delta_ranks, effective_rank,
                                   graft_checkpoint, group_change_norms, selected)


def test_effective_rank_hand_cases():
    u, v = np.array([1.0, 2.0, 3.0]), np.array([4.0, -1.0])
    assert effective_rank(np.outer(u, v)) == pytest.approx(1.0)
    assert effective_rank(3 * np.eye(4)) == pytest.approx(4.0)
    # singular values 3 and 1: p = (0.75, 0.25), H = 0.5623, exp(H) = 1.7548
    expected = math.exp(-(0.75 * math.log(0.75) + 0.25 * math.log(0.25)))
    assert effective_rank(np.diag([3.0, 1.0])) == pytest.approx(expected)
    assert effective_rank(np.zeros((3, 2))) == 0.0
    with pytest.raises(HarnessError, match="needs a matrix"):
        effective_rank(np.zeros(3))


@pytest.mark.parametrize("name, group, layer", [
    ("model.embed_tokens.weight", "embeddings", None),
    ("lm_head.weight", "embeddings", None),
    ("model.layers.3.self_attn.q_proj.weight", "attention", 3),
    ("model.layers.0.post_attention_layernorm.weight", "norms", 0),
    ("model.layers.12.mlp.down_proj.weight", "mlp", 12),
    ("model.norm.weight", "norms", None),
    ("transformer.h.1.ln_1.weight", "norms", 1),
    ("transformer.h.1.attn.c_attn.weight", "attention", 1),
    ("transformer.h.1.mlp.c_fc.weight", "mlp", 1),
    ("transformer.wpe.weight", "embeddings", None),
    ("score.weight", "other", None),
])
def test_groups_of_real_parameter_names(name, group, layer):
    assert parameter_group(name) == group and layer_of(name) == layer


def test_selectors():
    name = "model.layers.1.mlp.up_proj.weight"
    assert selected(name, ["mlp"]) and selected(name, ["mlp@1"]) and selected(name, ["layer:1"])
    assert not selected(name, ["mlp@0"]) and not selected(name, ["attention", "layer:0"])
    with pytest.raises(UnknownNameError, match="did you mean 'attention'"):
        check_selectors(["atention"])
    with pytest.raises(HarnessError, match="group@LAYER or layer:N"):
        check_selectors(["mlp@x"])
    with pytest.raises(HarnessError, match="at least one"):
        check_selectors([])


def _edited(base: Path, out: Path, edits: dict[str, float]) -> Path:
    """A copy of model folder `base` with ``edits[name]`` added to entry [0, 0] (or [0])."""
    from safetensors import safe_open
    from safetensors.torch import save_file

    shutil.copytree(base, out)
    with safe_open(base / "model.safetensors", "pt") as f:
        tensors = {k: f.get_tensor(k).clone() for k in f.keys()}
        metadata = f.metadata()
    for name, amount in edits.items():
        tensors[name].view(-1)[0] += amount
    save_file(tensors, str(out / "model.safetensors"), metadata=metadata)
    return out


@pytest.fixture(scope="module")
def start(tmp_path_factory) -> Path:
    from harness.policies.tiny import TinyConfig, make_tiny_model

    path = tmp_path_factory.mktemp("weights") / "start"
    make_tiny_model(path, TinyConfig(hidden=32, layers=2, heads=2, kv_heads=1, intermediate=64))
    (path / "checkpoint.json").write_text(json.dumps({"step": 0}))
    return path


MLP = "model.layers.1.mlp.down_proj.weight"
ATTENTION = "model.layers.0.self_attn.q_proj.weight"


def test_change_norms_find_the_edits(start, tmp_path):
    trained = _edited(start, tmp_path / "trained", {MLP: 0.5, ATTENTION: -1.2})
    norms = change_norms(start, trained).set_index("name")
    assert norms.loc[MLP, "delta_norm"] == pytest.approx(0.5)
    assert norms.loc[ATTENTION, "delta_norm"] == pytest.approx(1.2)
    assert (norms.drop([MLP, ATTENTION])["delta_norm"] == 0).all()
    assert norms.loc[MLP, "relative"] == pytest.approx(0.5 / norms.loc[MLP, "start_norm"])
    groups = group_change_norms(change_norms(start, trained)).set_index(["group", "layer"])
    assert groups.loc[("mlp", 1), "delta_norm"] == pytest.approx(0.5)
    assert groups.loc[("attention", 0), "delta_norm"] == pytest.approx(1.2)
    assert groups.loc[("mlp", 0), "delta_norm"] == 0
    ranks = delta_ranks(start, trained).set_index("name")
    assert ranks.loc[MLP, "delta_rank"] == pytest.approx(1.0)  # one entry: rank one
    assert ranks.loc["model.layers.0.mlp.up_proj.weight", "delta_rank"] == 0.0
    assert 1 < ranks.loc[MLP, "start_rank"] <= 32


def test_a_graft_takes_only_the_selected_groups(start, tmp_path):
    trained = _edited(start, tmp_path / "trained", {MLP: 0.5, ATTENTION: -1.2})
    graft = graft_checkpoint(start, trained, ["mlp"], tmp_path / "graft")
    norms = change_norms(start, graft).set_index("name")
    assert norms.loc[MLP, "delta_norm"] == pytest.approx(0.5)
    assert norms.loc[ATTENTION, "delta_norm"] == 0
    meta = json.loads((graft / "checkpoint.json").read_text())
    assert meta["graft"]["selectors"] == ["mlp"] and meta["graft"]["parameters"] == 6
    everything = graft_checkpoint(start, trained, ["layer:0", "layer:1"], tmp_path / "all")
    assert (change_norms(trained, everything)["delta_norm"] == 0).all()
    import transformers

    def first_entry(path: Path) -> float:  # loaded as a model
        model = transformers.AutoModelForCausalLM.from_pretrained(path)
        return float(model.model.layers[1].mlp.down_proj.weight.detach().view(-1)[0])

    assert first_entry(graft) == pytest.approx(first_entry(trained))
    with pytest.raises(HarnessError, match="no parameter matches"):
        graft_checkpoint(start, trained, ["mlp@7"], tmp_path / "none")
    with pytest.raises(HarnessError, match="has no model.safetensors"):
        change_norms(start, tmp_path)
