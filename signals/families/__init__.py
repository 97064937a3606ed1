"""One module per signal family; importing this package registers every method."""

from signals.families import (baselines, critic, direct, distillation, embedding, intrinsic,
                              ranking, triage)

__all__ = ["baselines", "critic", "direct", "distillation", "embedding", "intrinsic",
           "ranking", "triage"]
