"""Our merges equal mergekit's on the same models: linear, task arithmetic, TIES (three
densities) and mergekit's RAM and tensor-local RAM+, over every parameter of a tiny Qwen2
model (26 tensors of eight shapes), within 1e-6 (`fixtures/README.md`)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from harness.merge.methods import MergeParams
from harness.merge.models import merge_models
from tests.harness.merge.fixture import OURS, make_inputs

RECORDED = Path(__file__).with_name("fixtures") / "mergekit-0.1.5.npz"


@pytest.fixture(scope="module")
def inputs(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("merge-inputs")
    make_inputs(root)
    return root


@pytest.mark.parametrize("case", sorted(OURS))
def test_equal_to_mergekit(inputs, tmp_path, case):
    from safetensors.numpy import load_file

    method, models, options = OURS[case]
    out = merge_models(method, [inputs / name for name in models], tmp_path / case,
                       base=inputs / "base", params=MergeParams(**options))
    ours = load_file(str(out / "model.safetensors"))
    recorded = np.load(RECORDED)
    theirs = {key.split("/", 1)[1]: recorded[key] for key in recorded.files
              if key.startswith(f"{case}/")}
    assert set(ours) == set(theirs) and len(ours) == 26
    assert len({value.shape for value in ours.values()}) >= 6
    for name, value in ours.items():
        np.testing.assert_allclose(value, theirs[name], rtol=0, atol=1e-6, err_msg=name)
    # and the inputs are what was recorded: a merge that ignored them would not match
    base = load_file(str(inputs / "base" / "model.safetensors"))
    assert any(not np.allclose(base[name], theirs[name], atol=1e-6) for name in base)
