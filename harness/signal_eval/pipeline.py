"""`run_signals`: behaviour trajectories -> points -> reference Q -> signals -> summary, with
the point set and every signal's scores written to the store."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import numpy as np

from harness.config import RunConfig
from harness.core import ConfigError, UnknownNameError, make_rng
from harness.executors.spec import parse_executor
from harness.signal_eval.evaluate import ScoredSignal, SignalSummary, score_signals, summarise
from harness.signal_eval.points import NoPointsError, PointSet, collect_points, sample_candidates
from harness.signal_eval.simulator import SuiteSimulator
from harness.store import Store
from harness.signal_eval.tables import (load_signal_points, load_signal_results,
                                         write_signal_points, write_signal_result)
from signals.model import LanguageModel, TextEncoder
from signals.reference import (ReferenceQ, epsilon_oracle_policy, exact_q, label_noise_ceiling,
                               monte_carlo_q, oracle_policy, uniform_policy)
from signals.base import point_from_dict
from signals.registry import SignalResources, resolve_signals, signal_info, signal_names
from tasks import get_suite

log = logging.getLogger(__name__)

__all__ = ["SignalsConfig", "SignalRun", "run_signals", "REFERENCES", "ROLLOUT_POLICIES",
           "summary_from_store"]

REFERENCES = ("exact", "mc")
ROLLOUT_POLICIES = ("oracle", "uniform", "epsilon")


@dataclass(frozen=True)
class SignalsConfig:
    """What `harness signals` evaluates (field docstrings are the flags' help)."""

    suite: str = "frozenlake"
    points: int = 500
    """Evaluation points to draw (fewer if the behaviour run has fewer states)."""
    reference: str = "exact"
    """exact (the suite's solver) or mc (Monte-Carlo rollouts of `rollout_policy`)."""
    signals: tuple[str, ...] = ("all",)
    """Methods or families, or all."""
    model: str | None = None
    """hf:PATH, checkpoint:PATH or openai:MODEL@URL for the LLM-based families."""
    db: str = "results/harness.db"
    run_id: str | None = None
    """A stored behaviour run to take states from; unset: play `behaviour` first."""
    behaviour: str = "random"
    """Behaviour policy spec for a fresh run."""
    split: str = "test"
    tasks: int | None = 20
    """Tasks of the split for a fresh run (round-robin over task types)."""
    eval_seeds: int = 1
    seed: int = 0
    rollouts: int = 32
    """Monte-Carlo rollouts per candidate (mc reference)."""
    horizon: int = 200
    gamma: float = 0.99
    rollout_policy: str = "oracle"
    """oracle, uniform or epsilon (oracle with 10% uniform actions)."""
    resamples: int = 2000
    """Bootstrap and permutation draws."""
    critic_fraction: float = 0.25
    candidates: str = "admissible"
    """admissible, or sampled:K (distinct actions among K replies of `model` at temperature
    1; only admissible ones with the exact reference)."""
    options: dict[str, dict[str, Any]] = field(default_factory=dict)
    executor: str = "local"
    """Where a fresh behaviour run plays: local, ray or ray:ADDRESS (`harness.executors`)."""

    def __post_init__(self) -> None:
        parse_executor(self.executor)
        if self.reference not in REFERENCES:
            raise UnknownNameError("reference", self.reference, REFERENCES)
        if self.rollout_policy not in ROLLOUT_POLICIES:
            raise UnknownNameError("rollout policy", self.rollout_policy, ROLLOUT_POLICIES)
        kind, _, k = self.candidates.partition(":")
        if kind not in ("admissible", "sampled") or (kind == "sampled") != k.isdigit():
            raise ConfigError(f"candidates must be admissible or sampled:K, got "
                              f"{self.candidates!r}")
        if self.points < 1 or self.rollouts < 2 or self.horizon < 1 or self.eval_seeds < 1:
            raise ConfigError("points, horizon and eval_seeds must be >= 1, rollouts >= 2")


@dataclass(frozen=True)
class SignalRun:
    config: SignalsConfig
    run_id: str
    point_set: PointSet
    reference: ReferenceQ
    ceiling: dict[str, float]
    scored: tuple[ScoredSignal, ...]
    summary: SignalSummary

    @property
    def set_id(self) -> str:
        return _set_id(self.point_set, self.config)


def _set_id(point_set: PointSet, config: SignalsConfig) -> str:
    """The stored set's id: the drawn states, the candidates and the reference."""
    kind = config.candidates.replace(":", "")
    return f"{point_set.set_id}-{kind}-{config.reference}"


def _behaviour_run(config: SignalsConfig, suite_id: str) -> str:
    from harness.executors import execute

    run_config = RunConfig(policies=(config.behaviour,), suites=(suite_id,), split=config.split,
                           n_tasks=config.tasks, eval_seeds=tuple(range(config.eval_seeds)),
                           db=config.db)
    summary = execute(run_config, config.executor)
    log.info("behaviour run %s: %d episodes played", summary.run_id, summary.played)
    return summary.run_id


def _reference(config: SignalsConfig, simulator: SuiteSimulator, points) -> ReferenceQ:
    if config.reference == "exact":
        return exact_q(simulator, points)
    policy = {"oracle": oracle_policy, "uniform": uniform_policy,
              "epsilon": epsilon_oracle_policy(0.1)}[config.rollout_policy]
    return monte_carlo_q(simulator, points, policy=policy, n_rollouts=config.rollouts,
                         gamma=config.gamma, horizon=config.horizon, seed=config.seed)


def _reference_json(reference: ReferenceQ) -> dict[str, Any]:
    return {"method": reference.method, "q": [q.tolist() for q in reference.q],
            "standard_error": [s.tolist() for s in reference.standard_error],
            "details": dict(reference.details)}


def run_signals(config: SignalsConfig, *, model: LanguageModel | None = None,
                encoder: TextEncoder | None = None,
                on_signal: Callable[[ScoredSignal], None] | None = None) -> SignalRun:
    """The whole pipeline (module docstring). `model` overrides ``config.model``."""
    suite = get_suite(config.suite)
    names = resolve_signals(config.signals)
    run_id = config.run_id or _behaviour_run(config, suite.id)
    extra = config.horizon if config.reference == "mc" or "mc-behaviour" in names else 0
    simulator = SuiteSimulator(suite, extra_steps=extra)
    with Store(config.db) as store:
        point_set = collect_points(store, suite, run_id, n_points=config.points,
                                   seed=config.seed, critic_fraction=config.critic_fraction,
                                   gamma=config.gamma, simulator=simulator)
        if model is None and config.model:
            from harness.signal_eval.models import load_language_model

            model = load_language_model(config.model)
        if config.candidates.startswith("sampled"):
            if model is None:
                raise ConfigError("sampled candidates need a model (--model)")
            point_set = replace(point_set, points=sample_candidates(
                point_set.points, model, int(config.candidates.partition(":")[2]),
                seed=config.seed, admissible_only=config.reference == "exact"))
        points = point_set.points
        if not points:
            raise NoPointsError("no evaluation point has two distinct candidates")
        reference = _reference(config, simulator, points)
        set_id = _set_id(point_set, config)
        write_signal_points(store, set_id, suite.id, {**point_set.config, **asdict(config)},
                                  [p.to_dict() for p in points], _reference_json(reference))
        resources = SignalResources(model=model, reference=reference.by_point(points),
                                    simulator=simulator, encoder=encoder,
                                    transitions=point_set.transitions, seed=config.seed,
                                    options=config.options)
        model_name = getattr(model, "name", "") or ""

        def stored(result: ScoredSignal) -> None:
            write_signal_result(store, set_id, result.name, result.family, model_name,
                                      [s.tolist() for s in result.scores],
                                      {**result.info, "wall_s": result.wall_s,
                                       "error": result.error})
            if on_signal:
                on_signal(result)

        scored = score_signals(points, names, resources, on_signal=stored)
    summary = summarise(points, reference, scored, make_rng("signals/summary", config.seed),
                        n_resamples=config.resamples)
    return SignalRun(config, run_id, point_set, reference, label_noise_ceiling(reference),
                     tuple(scored), summary)


def summary_from_store(store: Store, set_id: str, *, seed: int = 0, n_resamples: int = 2000
                       ) -> tuple[SignalSummary, list[ScoredSignal]]:
    """Recompute the summary of a stored point set from its stored scores (the report reads
    results back through the store, never by rerunning signals)."""
    stored = load_signal_points(store, set_id)
    if stored is None:
        raise ConfigError(f"no signal point set {set_id!r} in {store.path}")
    points = [point_from_dict(p) for p in stored["points"]]
    ref = stored["reference"]
    reference = ReferenceQ(ref["method"], tuple(np.asarray(q) for q in ref["q"]),
                           tuple(np.asarray(s) for s in ref["standard_error"]),
                           details=ref.get("details", {}))
    scored = []
    for row in load_signal_results(store, set_id):
        info = dict(row["info"])
        error = info.pop("error", None)
        wall = float(info.pop("wall_s", 0.0))
        scored.append(ScoredSignal(row["signal"], signal_info(row["signal"]).family,
                                   tuple(np.asarray(s, dtype=float) for s in row["scores"]),
                                   wall, info, error))
    order = signal_names()
    scored.sort(key=lambda s: order.index(s.name))
    summary = summarise(points, reference, scored, make_rng("signals/summary", seed),
                        n_resamples=n_resamples)
    return summary, scored

