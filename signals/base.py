"""The Signal protocol and the evaluation point every signal is scored on."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import numpy as np


@dataclass(frozen=True)
class EvaluationPoint:
    """One state with its candidate actions, shared by every signal under comparison.

    `history` holds the ``(observation, action)`` turns before the state; `candidates` the
    actions to be ordered; `metadata` where the point came from (run, episode key, step).
    """

    suite: str
    task_id: str
    observation: str
    candidates: tuple[str, ...]
    history: tuple[tuple[str, str], ...] = ()
    metadata: Mapping[str, Any] = field(default_factory=dict)


@runtime_checkable
class Signal(Protocol):
    """Scores the candidate actions of each point; higher means "better action"."""

    name: str

    def score(self, points: Sequence[EvaluationPoint]) -> list[np.ndarray]:
        """One float array per point, shape ``(len(point.candidates),)``."""
        ...
