"""The dense-supervision signal testbed: signals score candidate actions in a state and are
judged by how well they order them like reference Q-values."""

from signals.base import EvaluationPoint, Signal

__all__ = ["EvaluationPoint", "Signal"]
