"""Task-vector geometry of checkpoints with a common base, read against a floor and a ceiling.

For models ``x_i`` over a base ``b`` the task vectors are ``d_i = x_i - b``. Per pair: the
cosine of their task vectors, over the whole model and per parameter group (`GROUPS` of
`harness.merge.groups`: embeddings, attention, MLP, norms, other) and per layer; per pair
and threshold ``epsilon``: the Jaccard index of their supports (coordinates with
``|d| > epsilon``, as RAM counts a change) beside the index two independent supports of the
same densities would have, ``E[J] = p_a p_b / (p_a + p_b - p_a p_b)``; per model and
threshold: RAM's overlap, the share of its changed coordinates that exactly ``k`` of the
other models also change.

A statistic alone does not say whether 0.08 is small: `geometry` reads the same statistics
for calibration pairs, a *floor* (checkpoints that share nothing but the base: other seeds on
unrelated data) and a *ceiling* (two checkpoints of one run, or seed halves), and every table
row names its arm. Parameters are read one at a time (`harness.merge.models.ModelReader`).
"""

from __future__ import annotations

import contextlib
import itertools
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from harness.core import ConfigError
from harness.merge.models import ModelReader
from harness.merge.groups import layer_of, parameter_group

__all__ = ["EPSILONS", "Geometry", "task_vector_geometry", "expected_jaccard", "geometry_arms"]

EPSILONS = (0.0, 1e-6, 1e-5)


def expected_jaccard(p_a: float, p_b: float) -> float:
    """Jaccard index of two independent random supports of densities `p_a` and `p_b`."""
    union = p_a + p_b - p_a * p_b
    return p_a * p_b / union if union > 0 else float("nan")


@dataclass(frozen=True)
class Geometry:
    """cosine: arm, a, b, group, cosine. jaccard: arm, a, b, epsilon, density_a, density_b,
    jaccard, expected (independent supports). overlap: arm, model, epsilon, k (other models
    also changing the coordinate), share of the model's changed coordinates."""

    cosine: pd.DataFrame
    jaccard: pd.DataFrame
    overlap: pd.DataFrame


def _groups(name: str) -> list[str]:
    layer = layer_of(name)
    return ["all", parameter_group(name)] + ([f"layer:{layer}"] if layer is not None else [])


def task_vector_geometry(base: str | Path, models: Sequence[str | Path], *, arm: str = "models",
                         labels: Sequence[str] | None = None,
                         epsilons: Sequence[float] = EPSILONS) -> Geometry:
    """The statistics of the module docstring for `models` over `base` (one arm)."""
    if len(models) < 2:
        raise ConfigError(f"geometry needs at least two models, got {len(models)}")
    labels = list(labels or [Path(p).name for p in models])
    n = len(models)
    dots: dict[str, np.ndarray] = defaultdict(lambda: np.zeros((n, n)))
    changed = {e: np.zeros(n) for e in epsilons}
    both = {e: np.zeros((n, n)) for e in epsilons}
    by_k = {e: np.zeros((n, n)) for e in epsilons}  # [model, k others]
    size = 0
    with contextlib.ExitStack() as stack:
        base_reader = stack.enter_context(ModelReader(base))
        readers = [stack.enter_context(ModelReader(p, base_reader)) for p in models]
        for name in base_reader.names():
            b = base_reader.get(name).reshape(-1)
            deltas = np.stack([r.get(name).reshape(-1) - b for r in readers])
            gram = deltas @ deltas.T
            for group in _groups(name):
                dots[group] += gram
            size += b.size
            for e in epsilons:
                mask = np.abs(deltas) > e
                changed[e] += mask.sum(axis=1)
                as_float = mask.astype(np.float64)
                both[e] += as_float @ as_float.T
                others = mask.sum(axis=0) - 1
                for k in range(n):
                    by_k[e][:, k] += (mask & (others == k)).sum(axis=1)
    return _tables(arm, labels, dots, changed, both, by_k, size, epsilons)


def _tables(arm, labels, dots, changed, both, by_k, size, epsilons) -> Geometry:
    pairs = list(itertools.combinations(range(len(labels)), 2))
    cosine = [{"arm": arm, "a": labels[i], "b": labels[j], "group": group,
               "cosine": gram[i, j] / np.sqrt(gram[i, i] * gram[j, j])
               if gram[i, i] > 0 and gram[j, j] > 0 else float("nan")}
              for group, gram in sorted(dots.items(), key=lambda kv: _order(kv[0]))
              for i, j in pairs]
    jaccard, overlap = [], []
    for e in epsilons:
        density = changed[e] / size
        for i, j in pairs:
            union = changed[e][i] + changed[e][j] - both[e][i, j]
            jaccard.append({"arm": arm, "a": labels[i], "b": labels[j], "epsilon": e,
                            "density_a": density[i], "density_b": density[j],
                            "jaccard": both[e][i, j] / union if union else float("nan"),
                            "expected": expected_jaccard(density[i], density[j])})
        for i, label in enumerate(labels):
            for k in range(len(labels)):
                overlap.append({"arm": arm, "model": label, "epsilon": e, "k": k,
                                "share": by_k[e][i, k] / changed[e][i] if changed[e][i]
                                else float("nan")})
    return Geometry(pd.DataFrame(cosine), pd.DataFrame(jaccard), pd.DataFrame(overlap))


def _order(group: str) -> tuple[int, int, str]:
    if group == "all":
        return (0, 0, group)
    if group.startswith("layer:"):
        return (2, int(group.split(":")[1]), group)
    return (1, 0, group)


def geometry_arms(base: str | Path, models: Sequence[str | Path], *,
                  floor: Sequence[str | Path] = (), ceiling: Sequence[str | Path] = (),
                  epsilons: Sequence[float] = EPSILONS,
                  labels: dict[str, Sequence[str]] | None = None) -> Geometry:
    """`task_vector_geometry` of the models and of each calibration arm given (two or more
    checkpoints each), rows concatenated with their ``arm``; `labels`: per arm (``models``,
    ``floor``, ``ceiling``) the names of its checkpoints (default: their folder names)."""
    labels = labels or {}
    parts = []
    for arm, paths in (("models", models), ("floor", floor), ("ceiling", ceiling)):
        if paths:
            parts.append(task_vector_geometry(base, paths, arm=arm, epsilons=epsilons,
                                              labels=labels.get(arm)))
    return Geometry(*(pd.concat([getattr(p, f) for p in parts], ignore_index=True)
                      for f in ("cosine", "jaccard", "overlap")))
