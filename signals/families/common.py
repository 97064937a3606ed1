"""Helpers shared by the family modules: one request per (point, candidate) and back."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import numpy as np

from signals.base import EvaluationPoint

__all__ = ["per_candidate", "regroup", "fill"]

T = TypeVar("T")


def per_candidate(points: Sequence[EvaluationPoint],
                  make: Callable[[EvaluationPoint, str], T]) -> list[T]:
    """``make(point, candidate)`` for every candidate of every point, flattened in order."""
    return [make(point, candidate) for point in points for candidate in point.candidates]


def regroup(values: Sequence[float], points: Sequence[EvaluationPoint]) -> list[np.ndarray]:
    """Split a flat list (one value per candidate, `per_candidate` order) into one float
    array per point, shape ``(n_candidates,)``."""
    out, start = [], 0
    for point in points:
        stop = start + len(point.candidates)
        out.append(np.asarray(values[start:stop], dtype=float))
        start = stop
    if start != len(values):
        raise ValueError(f"{len(values)} values for {start} candidates")
    return out


def fill(values: Sequence[Any], neutral: float) -> tuple[list[float], int]:
    """None (an unparseable answer) replaced by `neutral`; returns (values, how many)."""
    missing = sum(v is None for v in values)
    return [neutral if v is None else float(v) for v in values], missing
