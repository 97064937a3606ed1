"""Policies behind one protocol, selected by a spec string (``random``, ``noop:empty``,
``oracle``; model backends such as ``openai:MODEL@URL`` register here too)."""

from __future__ import annotations

from collections.abc import Callable

from harness.core import UnknownNameError
from harness.policies.base import Decision, EpisodeContext, Policy
from harness.policies.scripted import NoopPolicy, OraclePolicy, RandomPolicy, RefusePolicy

PolicyFactory = Callable[[str, str], Policy]
"""Builds a policy from ``(full spec, argument after the first colon)``."""

_BACKENDS: dict[str, tuple[PolicyFactory, str]] = {
    "random": (lambda spec, arg: RandomPolicy(spec), "uniform over admissible actions"),
    "noop": (lambda spec, arg: NoopPolicy(spec, arg), "the suite's trivial action (noop:NAME)"),
    "oracle": (lambda spec, arg: OraclePolicy(spec), "the suite's reference solver/planner"),
    "refuse": (lambda spec, arg: RefusePolicy(spec, arg),
               "the oracle behind a known refusal rule (refuse:THRESHOLD[:TRIVIAL])"),
}


def register_policy(name: str, factory: PolicyFactory, description: str) -> None:
    """Register a backend so that ``name`` and ``name:ARG`` specs build it."""
    _BACKENDS[name] = (factory, description)


def policy_names() -> dict[str, str]:
    """Registered backend names and their one-line descriptions."""
    return {name: description for name, (_, description) in sorted(_BACKENDS.items())}


def make_policy(spec: str) -> Policy:
    """Build a policy from its spec string, e.g. ``"random"`` or ``"noop:empty"``; harness
    options after a ``?`` (``oracle?layers=repair``) wrap it in a `LayeredPolicy`."""
    from harness.policies.layered import LayeredPolicy, split_layered_spec
    from harness.policies.specs import BACKEND_OPTIONS

    layered = split_layered_spec(spec, BACKEND_OPTIONS)
    if layered is not None:
        return LayeredPolicy(spec, make_policy(layered.inner), layered.options)
    name, _, argument = spec.partition(":")
    if name not in _BACKENDS:
        raise UnknownNameError("policy", spec, _BACKENDS)
    return _BACKENDS[name][0](spec, argument)


from harness.policies.backends import MODEL_BACKENDS, make_model_policy  # noqa: E402
import harness.policies.terminal_scaffold  # noqa: E402,F401 - registers the terminal@1 scaffold



def register_model_backends() -> None:
    """Register the ``openai``, ``hf``, ``vllm`` and ``checkpoint`` policy backends (done at
    import; call again after a test replaced them)."""
    for name, description in MODEL_BACKENDS.items():
        register_policy(name, lambda spec, argument: make_model_policy(spec), description)


register_model_backends()

__all__ = ["Decision", "EpisodeContext", "Policy", "make_policy", "policy_names",
           "register_model_backends", "register_policy"]
