"""What the LLM-based signal families need from a language model, and from a text encoder.

`LanguageModel` is deliberately small; adapters over the harness's backends (``hf``,
``checkpoint``, any OpenAI-compatible server such as vLLM or ``harness serve``) live on the
harness side (`harness.signal_eval.models`), since `signals` imports nothing of
`harness.policies`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np

__all__ = ["Messages", "TokenScores", "LanguageModel", "TextEncoder"]

Messages = list[dict[str, str]]
"""Chat messages: ``[{"role": "system" | "user" | "assistant", "content": str}, ...]``."""


@dataclass(frozen=True)
class TokenScores:
    """A continuation scored under a prompt, teacher-forced.

    `logprobs`: shape ``(n_tokens,)``, log-probability of each continuation token.
    `entropies`: shape ``(n_tokens,)``, entropy in nats of the model's next-token distribution
    at each continuation position (exact for local models; over the returned top-k tokens,
    renormalised, for servers that report only those); None when the backend gives neither.
    """

    logprobs: np.ndarray
    entropies: np.ndarray | None = None

    @property
    def total(self) -> float:
        return float(np.sum(self.logprobs))

    @property
    def mean(self) -> float:
        return float(np.mean(self.logprobs)) if self.logprobs.size else 0.0


@runtime_checkable
class LanguageModel(Protocol):
    """A chat model that scores continuations and generates text."""

    name: str

    def score(self, prompts: Sequence[Messages], continuations: Sequence[str], *,
              with_entropy: bool = False) -> list[TokenScores]:
        """Score ``continuations[i]`` as the assistant's reply to ``prompts[i]``; entropies
        are filled when `with_entropy` (a backend may fill them anyway)."""
        ...

    def generate(self, prompts: Sequence[Messages], *, max_tokens: int,
                 temperature: float = 0.0, seed: int = 0) -> list[str]:
        """One assistant reply per prompt (greedy at temperature 0)."""
        ...


@runtime_checkable
class TextEncoder(Protocol):
    """Sentence embeddings: `encode` returns shape ``(len(texts), dim)``, rows of unit norm."""

    def encode(self, texts: Sequence[str]) -> np.ndarray: ...
