"""What an ablation found: per layer its paired effect on success, how often it fired and
what it cost; the control arm's difference; the maturity score; final success.

Effects are paired on the episode keys both arms played (`harness.stats.frame`): the mean
difference in success with a paired bootstrap interval that resamples whole tasks
(`harness.stats.bootstrap.paired_bootstrap`, percentile) and the sign-flip permutation test
flipping whole tasks (`harness.stats.paired.sign_flip_test`). A layer's one-layer-off effect
is ``all layers - without it`` (what it adds to the harness under test), its one-layer-on
effect ``only it - no layers`` (what it adds alone). The control's difference is ``all layers
- all layers run again``: what two runs of one harness differ by; an effect inside the
control's spread is indistinguishable from rerunning.

Activation rate and token cost come from the per-step layer log in the store
(`Store.step_info`): the share of the steps of the ``all layers`` arm on which the layer
fired, and the tokens it logged per episode there (``only L``'s when ``all`` has no log).

**Maturity score** (after the Harness-MDP paper's Harness Maturity Score, defined here as
issue 30 states it): the share of the ablated layers whose effect is credibly non-negative,
i.e. whose interval's lower bound is >= 0 — the one-layer-off effect, or the one-layer-on
effect when only those were played. It is reported beside final success (the ``all layers``
arm's success rate, Wilson interval), never combined with it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from harness.ablation.plan import AblationPlan, Arm
from harness.core import HarnessError
from harness.policies.base import LAYERS_INFO_KEY
from harness.stats.bootstrap import paired_bootstrap
from harness.stats.estimators import Interval, success_rate
from harness.stats.frame import paired_outcomes
from harness.stats.paired import sign_flip_test
from harness.store import Store

__all__ = ["Effect", "LayerFinding", "ArmSummary", "AblationResult", "analyse_ablation",
           "layer_activity"]


@dataclass(frozen=True)
class Effect:
    """``success(a) - success(b)`` over shared keys: the estimate with its interval and
    the clustered permutation p-value."""

    a: str
    b: str
    interval: Interval
    p_value: float
    n_keys: int
    n_tasks: int


@dataclass(frozen=True)
class LayerFinding:
    """One ablated layer: its effects, activation rate (share of steps it fired on, NaN
    without a log), tokens it logged per episode, and whether it is credibly non-negative."""

    layer: str
    off: Effect | None
    on: Effect | None
    activation: float
    tokens_per_episode: float
    credibly_non_negative: bool


@dataclass(frozen=True)
class ArmSummary:
    """One arm's success rate (Wilson interval), episodes and tokens per episode."""

    arm: Arm
    success: Interval
    episodes: int
    tokens_per_episode: float


@dataclass(frozen=True)
class AblationResult:
    plan: AblationPlan
    layers: tuple[LayerFinding, ...]
    control: Effect
    final_success: Interval
    arms: tuple[ArmSummary, ...]

    @property
    def maturity(self) -> float:
        """Share of layers whose effect is credibly non-negative (module docstring)."""
        return float(np.mean([f.credibly_non_negative for f in self.layers]))

    @property
    def n_credible(self) -> int:
        return sum(f.credibly_non_negative for f in self.layers)


def _effect(frame: pd.DataFrame, a: str, b: str, rng: np.random.Generator, resamples: int,
            confidence: float) -> Effect:
    paired = paired_outcomes(frame, a, b, metric="success")
    if paired.n_tasks < 2:
        raise HarnessError(f"arms {a!r} and {b!r} share {paired.n_tasks} task; an ablation "
                           "needs at least 2 tasks (intervals resample tasks)")
    interval = paired_bootstrap(paired.a, paired.b, rng, clusters=paired.tasks,
                                n_resamples=resamples, confidence=confidence)
    test = sign_flip_test(paired.a, paired.b, rng=rng, clusters=paired.tasks,
                          n_resamples=resamples)
    return Effect(a, b, interval, test.p_value, paired.n_keys, paired.n_tasks)


def layer_activity(store: Store, run_id: str, policy: str) -> pd.DataFrame:
    """Per layer of `policy`'s log in run `run_id`: columns ``layer, steps, fired, tokens``
    (summed over the stored steps that carry a layer log)."""
    logs = store.step_info(LAYERS_INFO_KEY, run_id=run_id, policy=policy)
    rows = [(layer, bool(entry.get("fired")), int(entry.get("tokens", 0)))
            for value in logs["value"] for layer, entry in value.items()]
    frame = pd.DataFrame(rows, columns=["layer", "fired", "tokens"])
    return frame.groupby("layer", sort=False).agg(
        steps=("fired", "size"), fired=("fired", "sum"), tokens=("tokens", "sum")
    ).reset_index()


def _activity(store: Store, arm: Arm | None, layer: str, episodes: int
              ) -> tuple[float, float] | None:
    if arm is None or episodes == 0:
        return None
    table = layer_activity(store, arm.run_id, arm.spec)
    row = table[table["layer"] == layer]
    if row.empty:
        return None
    steps, fired, tokens = (int(row.iloc[0][c]) for c in ("steps", "fired", "tokens"))
    return fired / steps, tokens / episodes


def _arm_summaries(plan: AblationPlan, frame: pd.DataFrame) -> tuple[ArmSummary, ...]:
    out = []
    for arm in plan.arms:
        rows = frame[(frame["run_id"] == arm.run_id) & (frame["policy"] == arm.spec)]
        if rows.empty:
            raise HarnessError(f"arm {arm.name!r} ({arm.spec}) has no episodes in run "
                               f"{arm.run_id}; play the ablation first")
        tokens = (rows["prompt_tokens"] + rows["completion_tokens"]).mean()
        out.append(ArmSummary(arm, success_rate(rows["success"].to_numpy(dtype=bool)),
                              len(rows), float(tokens)))
    return tuple(out)


def analyse_ablation(plan: AblationPlan, store: Store) -> AblationResult:
    """Read both runs of `plan` back from `store` and compute the findings."""
    config = plan.config
    rng = np.random.default_rng(config.seed)
    frame = store.load_episodes(run_id=list(plan.run_ids))
    arms = _arm_summaries(plan, frame)
    episodes = {s.arm.spec: s.episodes for s in arms}
    options = (rng, config.resamples, config.confidence)
    everything, none = plan.arm("all"), plan.arm("none")
    findings = []
    for layer in config.layers:
        off_arm, on_arm = plan.arm("off", layer), plan.arm("on", layer)
        off = _effect(frame, everything.spec, off_arm.spec, *options) if off_arm else None
        on = _effect(frame, on_arm.spec, none.spec, *options) if on_arm else None
        activity = _activity(store, everything, layer, episodes[everything.spec]) or \
            _activity(store, on_arm, layer, episodes.get(on_arm.spec if on_arm else "", 0))
        activation, tokens = activity if activity is not None else (float("nan"), 0.0)
        judged = off if off is not None else on
        findings.append(LayerFinding(layer, off, on, activation, tokens,
                                     judged.interval.low >= 0))
    control = _effect(frame, everything.spec, plan.arm("control").spec, *options)
    final = next(s.success for s in arms if s.arm.kind == "all")
    return AblationResult(plan, tuple(findings), control, final, arms)
