"""`harness bench merge`: peak memory of a merge next to the size of the models it merges.

Writes a base and two models of about 1 GiB each (float32, 32 tensors of 8 M parameters:
the tensor sizes of a ~0.5B-parameter model's layers), then runs the merge of ``harness merge``
(TIES, density 0.5) in a child process and reads the child's peak resident memory
(``RUSAGE_CHILDREN``). The baseline, measured in the same run the same way, is a child that
only loads the three models whole (``safetensors.torch.load_file``) and reads every value, as
a merge that is not streamed would."""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

__all__ = ["merge_report"]

TENSORS, PARAMETERS = 32, 8 << 20
LOAD_ALL = ("import sys\nfrom safetensors.torch import load_file\n"
            "models = [load_file(p + '/model.safetensors') for p in sys.argv[1:]]\n"
            "print(sum(float(t.sum()) for model in models for t in model.values()))\n")
"""The baseline: the three models loaded whole and every value read once."""
MERGE = ("import sys\nfrom harness.merge.methods import MergeParams\n"
         "from harness.merge.models import merge_models\n"
         "merge_models('ties', sys.argv[2:4], sys.argv[4], base=sys.argv[1], "
         "params=MergeParams(densities=(0.5,)))\n")
"""What `harness merge --method ties --density 0.5` runs."""


def _write_models(root: Path) -> list[Path]:
    import numpy as np
    import torch
    from safetensors.torch import save_file

    rng = np.random.default_rng(0)
    folders = []
    for name in ("base", "a", "b"):
        tensors = {f"model.layers.{i}.mlp.up_proj.weight":
                   torch.from_numpy(rng.standard_normal(PARAMETERS, dtype=np.float32)
                                    .reshape(4096, -1)) for i in range(TENSORS)}
        folder = root / name
        folder.mkdir()
        save_file(tensors, str(folder / "model.safetensors"), metadata={"format": "pt"})
        folders.append(folder)
    return folders


def _peak_child_mib(argv: list[str]) -> tuple[float, float]:
    """(seconds, peak RSS in MiB) of a child process (run in a fresh grandchild so earlier
    children do not count)."""
    probe = ("import resource, subprocess, sys, time\nt = time.perf_counter()\n"
             "subprocess.run(sys.argv[1:], check=True, stdout=subprocess.DEVNULL)\n"
             "print(time.perf_counter() - t, "
             "resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024)\n")
    done = subprocess.run([sys.executable, "-c", probe, *argv], check=True,
                          capture_output=True, text=True)
    seconds, mib = done.stdout.split()
    return float(seconds), float(mib)


def merge_report(args: Any) -> list[str]:
    with tempfile.TemporaryDirectory(prefix="harness-bench-merge-") as tmp:
        root = Path(tmp)
        base, a, b = _write_models(root)
        size_mib = sum((p / "model.safetensors").stat().st_size for p in (base, a, b)) / 2**20
        merge_s, merge_mib = _peak_child_mib([sys.executable, "-c", MERGE, str(base), str(a),
                                              str(b), str(root / "merged")])
        load_s, load_mib = _peak_child_mib([sys.executable, "-c", LOAD_ALL, str(base), str(a),
                                            str(b)])
    return [f"merge of 2 models over a base, {TENSORS} tensors of {PARAMETERS >> 20} M "
            f"float32 parameters each ({size_mib / 3:.0f} MiB per model, {size_mib:.0f} MiB "
            "read)",
            f"  harness merge --method ties : peak RSS {merge_mib:7.0f} MiB in {merge_s:.1f} s",
            f"  loading the 3 models whole  : peak RSS {load_mib:7.0f} MiB in {load_s:.1f} s",
            f"  ratio merge/load-all        : {merge_mib / load_mib:.2f}"]
