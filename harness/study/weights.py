"""Weight analyses over checkpoints with a common start: what training changed, where, and
which parameter groups carry the effect.

- `change_norms`: per tensor, the Frobenius norm of ``trained - start`` and its size relative
  to the start tensor; `group_change_norms` sums them per parameter group and layer.
- `effective_rank`: the entropy-based effective rank of a matrix (Roy & Vetterli 2007:
  ``exp(H(p))`` with ``p`` the singular values normalised to sum 1), 1 for a rank-one matrix
  and ``n`` for a multiple of an ``n x n`` orthogonal one; `delta_ranks` applies it to every
  2-D weight delta.
- `graft_checkpoint`: the start checkpoint with only the selected parameter groups taken from
  a trained one, written as a checkpoint `harness run --policy checkpoint:` evaluates.

Groups are `harness.merge.groups`' (embeddings, attention, mlp, norms, other; layers by
block index). A graft selector is a group (``mlp``), a group in one layer (``mlp@1``) or a
whole layer (``layer:1``).

Tensors are read one at a time from ``model.safetensors`` (`safetensors.safe_open`), so the
memory needed is a few tensors, not whole models.
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from harness.core import HarnessError, UnknownNameError
from harness.merge.groups import GROUPS, layer_of, parameter_group

__all__ = ["change_norms", "group_change_norms", "effective_rank", "delta_ranks",
           "graft_checkpoint", "check_selectors", "selected"]

WEIGHTS_FILE = "model.safetensors"
_SELECTOR = re.compile(r"^(?:(?P<group>[a-z]+)(?:@(?P<at>\d+))?|layer:(?P<layer>\d+))$")


def check_selectors(selectors: Sequence[str]) -> tuple[str, ...]:
    """`selectors` if each is a group, ``group@layer`` or ``layer:N``, else a one-line error."""
    for text in selectors:
        match = _SELECTOR.match(text)
        if match is None:
            raise HarnessError(f"graft selector {text!r}: expected a group ({', '.join(GROUPS)}),"
                               " group@LAYER or layer:N")
        if match.group("group") and match.group("group") not in GROUPS:
            raise UnknownNameError("parameter group", match.group("group"), GROUPS)
    if not selectors:
        raise HarnessError("a graft needs at least one selector")
    return tuple(selectors)


def selected(name: str, selectors: Sequence[str]) -> bool:
    """Whether parameter `name` falls under any of `selectors`."""
    group, layer = parameter_group(name), layer_of(name)
    for text in selectors:
        match = _SELECTOR.match(text)
        if match is None:
            continue
        if match.group("layer") is not None:
            if layer == int(match.group("layer")):
                return True
        elif match.group("group") == group and (
                match.group("at") is None or layer == int(match.group("at"))):
            return True
    return False


def _weights(checkpoint: str | Path) -> Path:
    path = Path(checkpoint) / WEIGHTS_FILE
    if not path.is_file():
        raise HarnessError(f"{checkpoint} has no {WEIGHTS_FILE} (a checkpoint folder of "
                           "`harness train`, or a Hugging Face model folder)")
    return path


def _paired_tensors(start: str | Path, trained: str | Path
                    ) -> Iterator[tuple[str, np.ndarray, np.ndarray]]:
    """(name, start tensor, trained tensor) in float64, one pair in memory at a time."""
    from harness.merge.models import ModelReader

    for folder in (start, trained):
        _weights(folder)  # a clear error for a folder without weights
    with ModelReader(start) as a, ModelReader(trained) as b:
        names_a, names_b = set(a.names()), set(b.names())
        if names_a != names_b:
            raise HarnessError(f"{start} and {trained} have different parameters (e.g. "
                               f"{sorted(names_a ^ names_b)[:3]}); they need a common start")
        for name in sorted(names_a):
            x, y = a.get(name), b.get(name)
            if x.shape != y.shape:
                raise HarnessError(f"{name}: shapes {x.shape} and {y.shape} differ")
            yield name, x, y


def change_norms(start: str | Path, trained: str | Path) -> pd.DataFrame:
    """One row per tensor: name, group, layer (-1 outside the blocks), numel, start_norm,
    delta_norm (Frobenius norm of ``trained - start``), relative (delta / start norm)."""
    rows = []
    for name, x, y in _paired_tensors(start, trained):
        delta, base = float(np.linalg.norm(y - x)), float(np.linalg.norm(x))
        layer = layer_of(name)
        rows.append({"name": name, "group": parameter_group(name),
                     "layer": -1 if layer is None else layer, "numel": int(x.size),
                     "start_norm": base, "delta_norm": delta,
                     "relative": delta / base if base > 0 else float("nan")})
    return pd.DataFrame(rows)


def group_change_norms(norms: pd.DataFrame) -> pd.DataFrame:
    """`change_norms` summed per (group, layer): norms combine as the root of the sum of
    squares, so a group's delta_norm is the norm of its concatenated delta."""
    squared = norms.assign(delta_sq=norms["delta_norm"] ** 2, start_sq=norms["start_norm"] ** 2)
    table = squared.groupby(["group", "layer"], as_index=False).agg(
        numel=("numel", "sum"), delta_sq=("delta_sq", "sum"), start_sq=("start_sq", "sum"))
    table["delta_norm"] = np.sqrt(table["delta_sq"])
    table["start_norm"] = np.sqrt(table["start_sq"])
    table["relative"] = table["delta_norm"] / table["start_norm"].where(table["start_norm"] > 0)
    return table.drop(columns=["delta_sq", "start_sq"])


def effective_rank(matrix: np.ndarray) -> float:
    """Entropy-based effective rank of a 2-D `matrix` (0.0 for a zero matrix)."""
    matrix = np.asarray(matrix, dtype=float)
    if matrix.ndim != 2:
        raise HarnessError(f"effective rank needs a matrix, got shape {matrix.shape}")
    singular = np.linalg.svd(matrix, compute_uv=False)
    total = singular.sum()
    if total <= 0:
        return 0.0
    p = singular[singular > 0] / total
    return float(np.exp(-(p * np.log(p)).sum()))


def delta_ranks(start: str | Path, trained: str | Path) -> pd.DataFrame:
    """One row per 2-D tensor: name, group, layer, shape, the effective rank of its delta and
    of the start weight, and the delta's rank relative to its full rank (min of the shape)."""
    rows = []
    for name, x, y in _paired_tensors(start, trained):
        if x.ndim != 2:
            continue
        layer = layer_of(name)
        rank = effective_rank(y - x)
        rows.append({"name": name, "group": parameter_group(name),
                     "layer": -1 if layer is None else layer, "shape": f"{x.shape[0]}x{x.shape[1]}",
                     "delta_rank": rank, "start_rank": effective_rank(x),
                     "delta_rank_share": rank / min(x.shape)})
    return pd.DataFrame(rows)


def graft_checkpoint(target: str | Path, source: str | Path, selectors: Sequence[str],
                     out: str | Path) -> Path:
    """Write at `out` the checkpoint `target` with every parameter under `selectors` taken
    from `source` (same architecture); its ``checkpoint.json`` (if `target` has one) records
    the graft. Returns `out`. Written under a temporary name and renamed."""
    from safetensors import safe_open
    from safetensors.torch import save_file

    selectors = check_selectors(selectors)
    out = Path(out)
    tmp = out.with_name(out.name + ".tmp")
    if tmp.exists():
        shutil.rmtree(tmp)
    shutil.copytree(target, tmp, ignore=shutil.ignore_patterns(WEIGHTS_FILE, "trainer_state.pt",
                                                               "adapter"))
    tensors, taken = {}, []
    with safe_open(_weights(target), "pt") as a, safe_open(_weights(source), "pt") as b:
        if set(a.keys()) != set(b.keys()):
            raise HarnessError(f"{target} and {source} have different parameters")
        metadata = a.metadata()
        for name in a.keys():
            take = selected(name, selectors)
            tensors[name] = (b if take else a).get_tensor(name).contiguous()
            if take:
                taken.append(name)
    if not taken:
        raise HarnessError(f"no parameter matches {list(selectors)}")
    save_file(tensors, str(tmp / WEIGHTS_FILE), metadata=metadata)
    meta_path = tmp / "checkpoint.json"
    if meta_path.is_file():
        meta = json.loads(meta_path.read_text())
        meta["graft"] = {"target": str(target), "source": str(source),
                         "selectors": list(selectors), "parameters": len(taken)}
        meta_path.write_text(json.dumps(meta, indent=1, sort_keys=True))
    if out.exists():
        shutil.rmtree(out)
    tmp.rename(out)
    return out

