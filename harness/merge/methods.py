"""Merge methods over one tensor at a time, in delta space against a common base.

Every function takes the models' tensors of one parameter (``models``: shape ``(n_models,
*shape)``) and, except `linear`, the base's (``base``: ``shape``), and returns the merged
tensor; arithmetic is float64. Names are the ones tables print, so no table is ambiguous:

- ``linear``: ``sum(w_i x_i) / sum(w_i)`` (Wortsman et al. 2022; mergekit ``linear``).
- ``task_arithmetic``: ``base + lambda * sum(w_i d_i)``, ``d_i = x_i - base`` (Ilharco et al.
  2023; mergekit ``task_arithmetic``, not normalised).
- ``ties``: each ``d_i`` trimmed to its ``density`` share of largest magnitudes, the sign of
  every coordinate elected by the sum of the weighted deltas, and the agreeing weighted
  deltas averaged over their weights (Yadav et al. 2023; mergekit ``ties``).
- ``ram``: a coordinate changed (``|d_i| > epsilon``) by one model keeps that model's delta;
  one changed by several gets their average (Reinforced Agent Merging; mergekit ``ram``).
- ``ramplus_tl``: mergekit's tensor-local RAM+: per model and tensor ``rho_i`` = its changed
  coordinates shared with another model / its unique ones, and its unique deltas scaled by
  ``1 + r * clamp(rho_i, 0, alpha)`` (r = 0.1, alpha = 0.2).
- ``ramplus``: the original repository's RAM+: ``rho_i`` over the whole model (counted in a
  first pass: `ram_counts`), unique deltas scaled by ``1 + (r - 1) * min(1, rho_i)``
  (r = 1.2).

`tests/harness/merge/` checks linear, task arithmetic, TIES, RAM and ``ramplus_tl`` against
mergekit's own outputs (a recorded fixture) and RAM and ``ramplus`` against hand-computed
cases of the published rules.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from harness.core import ConfigError

__all__ = ["METHODS", "MergeParams", "linear", "task_arithmetic", "ties", "ram", "ramplus_tl",
           "ramplus", "ram_counts", "trim_to_density", "trim_threshold", "trim_mask", "changed"]

METHODS = ("linear", "task_arithmetic", "ties", "ram", "ramplus", "ramplus_tl")
NEEDS_BASE = frozenset(METHODS) - {"linear"}


@dataclass(frozen=True)
class MergeParams:
    """Options of a merge; `weights` and `densities` per model (None: all 1)."""

    weights: tuple[float, ...] | None = None
    densities: tuple[float, ...] | None = None
    scale: float = 1.0
    """task_arithmetic's and ties' lambda: the merged delta's multiplier."""
    epsilon: float = 1e-5
    """RAM's threshold: a coordinate is changed by a model when ``|delta| > epsilon``."""
    r: float | None = None
    """RAM+'s rate (default: 1.2 for ``ramplus``, 0.1 for ``ramplus_tl``)."""
    alpha: float = 0.2
    """``ramplus_tl``'s clamp of rho."""

    def weights_for(self, n: int) -> np.ndarray:
        return _per_model(self.weights, n, "weights")

    def densities_for(self, n: int) -> np.ndarray:
        values = _per_model(self.densities, n, "densities")
        if ((values <= 0) | (values > 1)).any():
            raise ConfigError(f"densities must lie in (0, 1], got {values.tolist()}")
        return values


def _per_model(values: Sequence[float] | None, n: int, what: str) -> np.ndarray:
    if values is None:
        return np.ones(n)
    if len(values) == 1:
        return np.full(n, float(values[0]))
    if len(values) != n:
        raise ConfigError(f"{len(values)} {what} for {n} models; give one per model or one "
                          "for all")
    return np.asarray(values, dtype=float)


def _expand(values: np.ndarray, like: np.ndarray) -> np.ndarray:
    """Per-model values shaped to broadcast over ``(n_models, *shape)``."""
    return values.reshape((-1,) + (1,) * (like.ndim - 1))


def linear(models: np.ndarray, params: MergeParams = MergeParams()) -> np.ndarray:
    w = params.weights_for(len(models))
    return (_expand(w, models) * models).sum(axis=0) / w.sum()


def task_arithmetic(models: np.ndarray, base: np.ndarray,
                    params: MergeParams = MergeParams()) -> np.ndarray:
    w = params.weights_for(len(models))
    return base + params.scale * (_expand(w, models) * (models - base)).sum(axis=0)


def trim_to_density(delta: np.ndarray, density: float) -> np.ndarray:
    """`delta` with all but its ``int(density * size)`` largest magnitudes set to zero (the
    earlier entry first among equal magnitudes)."""
    if density >= 1:
        return delta
    threshold, budget = trim_threshold(np.abs(delta).reshape(-1).astype(np.float32), density)
    return np.where(trim_mask(np.abs(delta).astype(np.float32), threshold, [budget]), delta, 0.0)


def trim_threshold(magnitudes: np.ndarray, density: float) -> tuple[float, int]:
    """(threshold, budget) that keep the ``int(density * size)`` largest of `magnitudes`
    (float32, flat: ranked in float32 as mergekit ranks; an exact float64 delta rounds to
    the same float32 value): every magnitude above the threshold, and the first `budget` equal
    to it."""
    keep = int(density * magnitudes.size)
    if keep <= 0:
        raise ConfigError(f"density {density} keeps no entry of a tensor of {magnitudes.size}")
    threshold = np.partition(magnitudes, magnitudes.size - keep)[magnitudes.size - keep]
    return float(threshold), keep - int((magnitudes > threshold).sum())


def trim_mask(magnitudes: np.ndarray, threshold: float, budget: list[int]) -> np.ndarray:
    """Which entries of a chunk of magnitudes (float32) `trim_threshold` keeps; ``budget[0]``
    (the equal entries still to keep) is spent in order, so chunks in order agree with the
    whole tensor at once."""
    mask = magnitudes > np.float32(threshold)
    if budget[0] > 0:
        equal = np.flatnonzero(magnitudes.reshape(-1) == np.float32(threshold))[:budget[0]]
        mask.reshape(-1)[equal] = True
        budget[0] -= len(equal)
    return mask


def ties(models: np.ndarray, base: np.ndarray, params: MergeParams = MergeParams(), *,
         keep: np.ndarray | None = None) -> np.ndarray:
    """`keep`: which delta entries each model keeps (``(n_models, *shape)``, from
    `trim_threshold`/`trim_mask` over the whole tensor when `models` is a chunk of it);
    None: trimmed here, `models` being whole tensors."""
    n = len(models)
    w, densities = params.weights_for(n), params.densities_for(n)
    deltas = models - base
    if keep is None:
        deltas = np.stack([trim_to_density(deltas[i], densities[i]) for i in range(n)])
    else:
        deltas = np.where(keep, deltas, 0.0)
    weighted = _expand(w, deltas) * deltas
    majority = np.where(weighted.sum(axis=0) >= 0, 1.0, -1.0)
    agree = np.sign(weighted) == majority
    divisor = (_expand(w, deltas) * agree).sum(axis=0)
    divisor[divisor == 0] = 1.0
    return base + params.scale * (weighted * agree).sum(axis=0) / divisor


def changed(models: np.ndarray, base: np.ndarray, epsilon: float) -> tuple[np.ndarray, np.ndarray]:
    """(deltas, mask of coordinates each model changed by more than `epsilon`)."""
    deltas = models - base
    return deltas, np.abs(deltas) > epsilon


def _ram_parts(models: np.ndarray, base: np.ndarray, epsilon: float):
    deltas, mask = changed(models, base, epsilon)
    counts = mask.sum(axis=0)
    kept = np.where(mask, deltas, 0.0)
    return kept, mask, counts, counts == 1, counts > 1


def ram(models: np.ndarray, base: np.ndarray, params: MergeParams = MergeParams()) -> np.ndarray:
    kept, _, counts, unique, shared = _ram_parts(models, base, params.epsilon)
    merged = (kept * unique).sum(axis=0) + (kept * shared).sum(axis=0) / np.maximum(counts, 1)
    return base + merged


def ramplus_tl(models: np.ndarray, base: np.ndarray, params: MergeParams = MergeParams(), *,
               counts: np.ndarray | None = None) -> np.ndarray:
    """`counts`: `ram_counts` of the whole tensor when `models` is a chunk of it (None:
    counted here, `models` being whole tensors)."""
    r = 0.1 if params.r is None else params.r
    kept, mask, changes, unique, shared = _ram_parts(models, base, params.epsilon)
    if counts is None:
        counts = ram_counts(models, base, params.epsilon)
    rho = counts[:, 0] / np.maximum(counts[:, 1], params.epsilon)
    scale = _expand(1 + r * np.clip(rho, 0, params.alpha), models)
    merged = (kept * unique * scale).sum(axis=0) + (kept * shared).sum(axis=0) / np.maximum(
        changes, 1)
    return base + merged


def ram_counts(models: np.ndarray, base: np.ndarray, epsilon: float) -> np.ndarray:
    """Per model, (shared, unique) changed coordinates of this tensor, shape (n_models, 2):
    the first pass of ``ramplus``, summed over every tensor of the models."""
    _, mask, _, unique, shared = _ram_parts(models, base, epsilon)
    axes = tuple(range(1, models.ndim))
    return np.stack([(mask & shared).sum(axis=axes), (mask & unique).sum(axis=axes)], axis=1)


def ramplus(models: np.ndarray, base: np.ndarray, params: MergeParams = MergeParams(), *,
            totals: np.ndarray) -> np.ndarray:
    """The original RAM+ with ``totals`` = `ram_counts` summed over the whole model."""
    r = 1.2 if params.r is None else params.r
    kept, _, counts, unique, shared = _ram_parts(models, base, params.epsilon)
    rho = totals[:, 0] / np.maximum(totals[:, 1], 1)
    scale = _expand(1 + (r - 1) * np.minimum(1.0, rho), models)
    merged = (kept * unique * scale).sum(axis=0) + (kept * shared).sum(axis=0) / np.maximum(
        counts, 1)
    return base + merged
