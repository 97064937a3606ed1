"""The arms of a layer ablation and playing them through the one runner.

For a base policy spec and a set of layers S (the base may carry other layers, L0, that
stay as they are), the arms are policy specs (`harness.policies.layered.layered_spec`):

- ``all``: the base with every layer of S on (L0 | S) — the harness under test;
- ``without L`` (one-layer-off), per L in S: L0 | S minus L;
- ``none``: the base with no layer of S (L0 minus S);
- ``only L`` (one-layer-on), per L in S: (L0 minus S) | {L};
- ``control``: ``all`` again on another sampling stream (``stream=``), in a second run with
  its own run id: the base run twice, which measures how much two runs of one harness differ.

Arms that name the same spec are played once. Layers never change a policy's sampling
stream, so every arm but the control draws the same sampling seeds on the same episode keys
(suite, task, eval seed, sample): paired comparisons on common random numbers. Both runs go
through `harness.runner.run` (the one episode engine) into the one store, and resume like
`harness run`: rerunning the same ablation plays only what is missing. Every arm wraps the
same base policy object (`arm_policies`), so a local model is loaded once.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from harness.config import RunConfig
from harness.core import ConfigError
from harness.policies import Policy, make_policy
from harness.policies.layered import (HARNESS_OPTIONS, LayeredPolicy, layered_spec,
                                      split_layered_spec)
from harness.policies.layers import check_layer_names
from harness.policies.specs import BACKEND_OPTIONS
from harness.runner import RunSummary, run

__all__ = ["VARIANTS", "AblationConfig", "Arm", "AblationPlan", "plan_ablation", "arm_policies",
           "play_ablation"]

VARIANTS = ("both", "off", "on")
"""Which one-layer variants an ablation plays: one-layer-off, one-layer-on, or both."""
CONTROL_SUFFIX = "-repeat"
"""The control run's id is the ablation run's id with this suffix when ``run_id`` is given."""


@dataclass(frozen=True)
class AblationConfig:
    """What `harness ablate` plays and how it reports.

    `run` says which episodes every arm plays (suites, split, tasks, eval seeds, samples,
    step and time limits, store); its ``policies`` are ignored (the arms replace them).
    """

    base: str
    """The base policy spec (may carry harness options, e.g. other layers that stay on)."""
    layers: tuple[str, ...]
    """The layers ablated."""
    run: RunConfig
    variants: str = "both"
    """``both``, ``off`` (one-layer-off only) or ``on`` (one-layer-on only)."""
    seed: int = 0
    """Seed of the bootstrap and permutation RNG."""
    resamples: int = 10_000
    """Bootstrap and permutation draws."""
    confidence: float = 0.95

    def __post_init__(self) -> None:
        if not self.layers:
            raise ConfigError("harness ablate needs at least one layer (--layers NAME,...)")
        object.__setattr__(self, "layers", check_layer_names(self.layers))
        if self.variants not in VARIANTS:
            raise ConfigError(f"variants must be one of {', '.join(VARIANTS)}, got "
                              f"{self.variants!r}")
        if self.seed < 0 or self.resamples < 1 or not 0 < self.confidence < 1:
            raise ConfigError("seed must be >= 0, resamples >= 1 and confidence in (0, 1)")


@dataclass(frozen=True)
class Arm:
    """One arm: `kind` is ``all``, ``off``, ``none``, ``on`` or ``control``; `layer` the
    layer switched (off/on arms); `spec` the policy id it plays under; `run_id` its run."""

    name: str
    kind: str
    layer: str | None
    spec: str
    run_id: str


@dataclass(frozen=True)
class AblationPlan:
    """The arms and the two run configs that play them."""

    config: AblationConfig
    arms: tuple[Arm, ...]
    main: RunConfig
    control: RunConfig

    def arm(self, kind: str, layer: str | None = None) -> Arm | None:
        return next((a for a in self.arms if a.kind == kind and a.layer == layer), None)

    @property
    def run_ids(self) -> tuple[str, str]:
        return self.main.resolved_run_id(), self.control.resolved_run_id()


def _base_parts(base: str) -> tuple[str, tuple[str, ...], dict[str, Any]]:
    """(the policy without harness options, its layers, its other harness options)."""
    split = split_layered_spec(base, BACKEND_OPTIONS)
    if split is None:
        return base, (), {}
    others = {name: getattr(split.options, name) for name in HARNESS_OPTIONS
              if name in split.given and name not in ("layers", "stream")}
    if split.options.stream:
        raise ConfigError("the base policy of an ablation sets stream=; leave it out (the "
                          "control arm draws another stream itself)")
    return split.inner, split.options.layers, others


def _specs(config: AblationConfig) -> list[tuple[str, str, str | None, str]]:
    """``(name, kind, layer, spec)`` of every arm but the control, in report order."""
    inner, fixed, others = _base_parts(config.base)
    ablated = set(config.layers)
    everything = set(fixed) | ablated
    rest = set(fixed) - ablated

    def spec(layers: set[str]) -> str:
        return layered_spec(inner, sorted(layers), **others)

    arms = [("all layers", "all", None, spec(everything))]
    if config.variants in ("both", "off"):
        arms += [(f"without {name}", "off", name, spec(everything - {name}))
                 for name in config.layers]
    arms.append(("no layers", "none", None, spec(rest)))
    if config.variants in ("both", "on"):
        arms += [(f"only {name}", "on", name, spec(rest | {name})) for name in config.layers]
    return arms


def plan_ablation(config: AblationConfig) -> AblationPlan:
    """The arms of `config` and the runs that play them (module docstring)."""
    arms = _specs(config)
    inner, _, others = _base_parts(config.base)
    everything = sorted(set(_base_parts(config.base)[1]) | set(config.layers))
    control_spec = layered_spec(inner, everything, **others, stream=1)
    policies = tuple(dict.fromkeys(spec for _, _, _, spec in arms))
    base_run = replace(config.run, policies=policies)
    control_id = config.run.run_id + CONTROL_SUFFIX if config.run.run_id else None
    control_run = replace(config.run, policies=(control_spec,), run_id=control_id)
    main_id, repeat_id = base_run.resolved_run_id(), control_run.resolved_run_id()
    out = tuple(Arm(name, kind, layer, spec, main_id) for name, kind, layer, spec in arms)
    out += (Arm("control (all layers, run again)", "control", None, control_spec, repeat_id),)
    return AblationPlan(config, out, base_run, control_run)


def arm_policies(plan: AblationPlan) -> dict[str, Policy]:
    """Every arm's policy by spec, all wrapping one policy built once from the base (one
    model loaded, not one per arm)."""
    inner_spec = _base_parts(plan.config.base)[0]
    inner = make_policy(inner_spec)
    policies: dict[str, Policy] = {}
    for arm in plan.arms:
        split = split_layered_spec(arm.spec, BACKEND_OPTIONS)
        policies[arm.spec] = inner if split is None else \
            LayeredPolicy(arm.spec, inner, split.options)
    return policies


def play_ablation(plan: AblationPlan, *,
                  on_plan: Callable[[int, int], None] | None = None,
                  on_episode: Callable[[Any], None] | None = None
                  ) -> tuple[RunSummary, RunSummary]:
    """Play (or resume) both runs of `plan` with `harness.runner.run` (`arm_policies`)."""
    built = arm_policies(plan)
    return tuple(run(config, policies=[built[spec] for spec in config.policies],
                     on_plan=on_plan, on_episode=on_episode)
                 for config in (plan.main, plan.control))
