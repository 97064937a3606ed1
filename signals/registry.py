"""The signal registry: every method by name, grouped in families, built from shared resources.

A family module calls `register_signal` at import; `signals.families` imports them all.
`make_signal(name, resources)` builds one method, checking that the resources it needs
(a language model, a simulator, ...) are there.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from harness.core import HarnessError, UnknownNameError
from signals.base import Signal, Simulator
from signals.model import LanguageModel, TextEncoder

__all__ = ["FAMILIES", "SignalResources", "SignalInfo", "Transition", "MissingResourceError",
           "register_signal", "signal_info", "signal_names", "resolve_signals", "make_signal"]

FAMILIES = ("baselines", "intrinsic", "direct", "ranking", "self-distillation", "embedding",
            "critic", "role-judge")
"""Family names, in report order."""


class MissingResourceError(HarnessError):
    """A signal needs a resource (model, simulator, ...) that was not provided."""


@dataclass(frozen=True)
class Transition:
    """One stored step for fitting a critic: the state's observation, the action taken and
    the discounted return that followed (the step's reward included)."""

    suite: str
    observation: str
    action: str
    ret: float


@dataclass(frozen=True)
class SignalResources:
    """What signals may draw on. `reference`: ``{point_id: Q of shape (n_candidates,)}``;
    `transitions`: stored behaviour steps (critic fitting, disjoint from the points'
    episodes); `encoder`: sentence embeddings (the embedding family loads MiniLM when None);
    `options`: per-signal settings, ``{signal name: {key: value}}``."""

    model: LanguageModel | None = None
    reference: Mapping[str, np.ndarray] = field(default_factory=dict)
    simulator: Simulator | None = None
    encoder: TextEncoder | None = None
    transitions: Sequence[Transition] = ()
    seed: int = 0
    options: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)

    def option(self, signal: str, key: str, default: Any) -> Any:
        return self.options.get(signal, {}).get(key, default)


@dataclass(frozen=True)
class SignalInfo:
    name: str
    family: str
    description: str
    factory: Callable[[SignalResources], Signal]
    needs: tuple[str, ...] = ()
    """Fields of `SignalResources` that must be set: ``model``, ``simulator``,
    ``reference``, ``transitions``."""


_REGISTRY: dict[str, SignalInfo] = {}
_LOADED = False


def register_signal(name: str, family: str, factory: Callable[[SignalResources], Signal],
                    description: str, needs: Sequence[str] = ()) -> None:
    """Register a method under `name` in `family` (one of `FAMILIES`)."""
    if family not in FAMILIES:
        raise UnknownNameError("signal family", family, FAMILIES)
    _REGISTRY[name] = SignalInfo(name, family, description, factory, tuple(needs))


def _load() -> None:
    global _LOADED
    if not _LOADED:
        _LOADED = True
        importlib.import_module("signals.families")


def signal_names(family: str | None = None) -> list[str]:
    """Registered methods in family order (then registration order)."""
    _load()
    ordered = sorted(_REGISTRY.values(), key=lambda info: FAMILIES.index(info.family))
    return [info.name for info in ordered if family is None or info.family == family]


def signal_info(name: str) -> SignalInfo:
    _load()
    if name not in _REGISTRY:
        raise UnknownNameError("signal", name, list(_REGISTRY) + list(FAMILIES))
    return _REGISTRY[name]


def resolve_signals(spec: str | Sequence[str]) -> list[str]:
    """Method names from ``"all"``, family names and method names (comma-separated or a
    list), each once, in registry order."""
    items = [spec] if isinstance(spec, str) else list(spec)
    wanted = [part.strip() for item in items for part in item.split(",") if part.strip()]
    chosen: list[str] = []
    for item in wanted:
        names = (signal_names() if item == "all" else signal_names(item) if item in FAMILIES
                 else [signal_info(item).name])
        chosen += [n for n in names if n not in chosen]
    order = signal_names()
    return sorted(chosen, key=order.index)


def make_signal(name: str, resources: SignalResources) -> Signal:
    """Build method `name`; `MissingResourceError` when a resource it needs is absent."""
    info = signal_info(name)
    for need in info.needs:
        value = getattr(resources, need)
        if value is None or (need in ("reference", "transitions") and not value):
            raise MissingResourceError(f"signal {name!r} needs a {need} (pass --model for "
                                       "LLM families)" if need == "model" else
                                       f"signal {name!r} needs {need}")
    return info.factory(resources)
