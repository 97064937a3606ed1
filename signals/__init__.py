"""The dense-supervision signal testbed: signals score candidate actions in a state and are
judged by how well they order them like reference Q-values.

`signals.registry` names every method and its family; `signals.reference` gives exact and
Monte-Carlo reference Q; `signals.metrics` the within-state alignment metrics. The harness
side (`harness.signal_eval`) collects points from the store, adapts model backends to
`signals.model.LanguageModel` and reports.
"""

from signals.base import EvaluationPoint, Signal, SimEnv, Simulator, point_from_dict
from signals.model import LanguageModel, Messages, TextEncoder, TokenScores

__all__ = ["EvaluationPoint", "Signal", "SimEnv", "Simulator", "point_from_dict",
           "LanguageModel", "Messages", "TextEncoder", "TokenScores"]
