"""A study's analysis: per-cell paired effects against the baseline arm, verdicts under
multiplicity control, power, and the headroom link. Reads the store through
`harness.store.load_episodes`; the statistics are `harness.study.verdicts` and
`harness.stats`.

Families. The grid's cells form one family per decoding (greedy, sampled), adjusted together
(`AnalysisConfig.multiplicity`); a declared arm with a baseline (a positive control, a merge
against its baseline) is a pre-registered single comparison, tested at ``alpha`` on its own;
the grafts, each read against its target and its source, form one family per decoding, as
do the merges read against each other. Next to the t-based
interval each comparison carries the hierarchical bootstrap interval of the mean difference
(`harness.stats.bootstrap.hierarchical_bootstrap`: training-seed effects and tasks resampled,
tasks treated as a sample).

Headroom. For each arm the baseline's per-task headroom ``pass@k - greedy``
(`harness.stats.headroom.sampling_headroom`, its sampled and greedy episodes) is set against
the arm's per-task greedy gain; the association is Spearman's rho (scipy) with a percentile
interval from resampling tasks.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np
import pandas as pd
import scipy.stats

from harness.core import HarnessError, make_rng
from harness.stats.arrays import outcome_tensor
from harness.stats.bootstrap import hierarchical_bootstrap
from harness.stats.headroom import sampling_headroom
from harness.store import load_episodes
from harness.study.config import Arm, StudyConfig
from harness.study.run import MODES, policy_id_of, run_id_of
from harness.study.verdicts import (CrossedEffects, crossed_effects, decide,
                                    minimum_detectable_effect, power_at)

__all__ = ["StudyAnalysis", "analyse_study", "analyse_frame", "paired_differences",
           "headroom_association", "study_frame"]


@dataclass(frozen=True)
class StudyAnalysis:
    """cells: one row per (arm with a baseline, decoding): estimate, t interval (low, high),
    bootstrap interval (boot_low, boot_high), p and adjusted p, TOST p and adjusted, verdict,
    mde, power at the smallest effect of interest, design sizes and the factor levels.
    rules: decoding -> the verdict rule as text. headroom: per (arm, task) baseline headroom
    and greedy gain (None without sampled episodes); association: per arm rho with interval."""

    cells: pd.DataFrame
    rules: dict[str, str]
    headroom: pd.DataFrame | None
    association: pd.DataFrame | None


def study_frame(study: StudyConfig) -> pd.DataFrame:
    """Every episode of the study's runs (the tidy frame)."""
    runs = [run_id_of(study, a.name, s) for a in study.arms_resolved() for s in a.seeds]
    return load_episodes(study.db, run_id=runs)


def paired_differences(frame: pd.DataFrame, arm: str, baseline: str, *, mode: str,
                       metric: str = "success") -> tuple[np.ndarray, float, float]:
    """``arm - baseline`` of shape ``(n_train_seeds, n_tasks, n_eval_seeds)`` (samples
    averaged; a one-model baseline broadcast over the arm's seeds; seeds paired by number
    otherwise), and the two arms' means."""
    return _differences(_paired_values(frame, arm, baseline, mode=mode, metric=metric))


def _differences(values: np.ndarray) -> tuple[np.ndarray, float, float]:
    return values[0] - values[1], float(values[0].mean()), float(values[1].mean())


def _without_variation(values: np.ndarray) -> bool:
    """Whether both arms score one same value on every episode (`harness.study.verdicts`:
    such a cell measures no noise and is never called equivalent)."""
    return bool(np.ptp(values) == 0)


def _paired_values(frame: pd.DataFrame, arm: str, baseline: str, *, mode: str,
                   metric: str) -> np.ndarray:
    ids = [policy_id_of(arm, mode), policy_id_of(baseline, mode)]
    values, labels = outcome_tensor(frame, metric=metric, policies=ids, error_score=0.0)
    seeds = labels.train_seeds
    if labels.n_train_seeds[1] > 1 and seeds[0] != seeds[1]:
        raise HarnessError(f"{arm} (seeds {list(seeds[0])}) and {baseline} (seeds "
                           f"{list(seeds[1])}) must share training seeds to be paired")
    return values


def _row(arm: Arm, mode: str, effect: CrossedEffects, boot, means, study: StudyConfig,
         level_alpha: float, no_variation: bool) -> dict:
    """One comparison's figures (`effect` of batch 1); without variation its power and MDE are
    unknown (NaN)."""
    a = study.analysis
    se, df = float(effect.se[0]), float(effect.df[0])
    unknown = float("nan")
    n_s, n_t, n_e = effect.shape
    return {
        "arm": arm.name, "role": arm.role, "baseline": arm.baseline, "mode": mode,
        "estimate": float(effect.estimate[0]), "low": float(effect.low[0]),
        "high": float(effect.high[0]), "boot_low": boot.low, "boot_high": boot.high,
        "se": se, "df": df, "p_value": float(effect.p_value[0]),
        "tost_p": float(effect.tost_p[0]), "mean_arm": means[0], "mean_baseline": means[1],
        "mde": unknown if no_variation else float(minimum_detectable_effect(
            se, df, alpha=level_alpha, power=a.power)),
        "power_at_smallest": unknown if no_variation else float(power_at(
            a.smallest_effect, se, df, alpha=level_alpha)),
        "no_variation": no_variation,
        "var_seed": float(effect.var_seed[0]), "var_eval": float(effect.var_eval[0]),
        "n_train_seeds": n_s, "n_tasks": n_t, "n_eval_seeds": n_e,
        **{f"factor:{k}": v for k, v in arm.levels},
    }


def _family(arms: list[Arm], frame: pd.DataFrame, study: StudyConfig, mode: str,
            rng: np.random.Generator, adjust: bool, same_design: bool = False
            ) -> tuple[list[dict], str]:
    """The rows of `arms`' comparisons in `mode`, adjusted together when `adjust` (else each
    on its own); `same_design`: every comparison must have one shape (the grid's cells, where
    an unequal one means an unfinished study)."""
    a = study.analysis
    rows, rule = [], ""
    if not arms:
        return rows, rule
    values = [_paired_values(frame, arm.name, arm.baseline, mode=mode, metric=a.metric)
              for arm in arms]
    diffs = [_differences(v) for v in values]
    flat = np.array([_without_variation(v) for v in values])
    shapes = {d.shape for d, _, _ in diffs}
    if same_design and len(shapes) > 1:
        raise HarnessError(f"the {mode} comparisons have unequal designs {sorted(shapes)}; "
                           "finish the study (harness study run) before reporting")
    effects = [crossed_effects(d[None], alpha=a.alpha, margin=a.margin) for d, _, _ in diffs]
    groups = [list(range(len(arms)))] if adjust else [[i] for i in range(len(arms))]
    for members in groups:
        verdicts = decide(_joined([effects[i] for i in members]), method=a.multiplicity,
                          no_variation=flat[members])
        rule = verdicts.rule
        for j, i in enumerate(members):
            d = diffs[i][0]
            boot = hierarchical_bootstrap(d, rng, n_resamples=a.n_resamples,
                                          confidence=1 - a.alpha) if d.shape[1] > 1 else None
            row = _row(arms[i], mode, effects[i], boot or _NoInterval(), diffs[i][1:],
                       study, a.alpha / len(members), bool(flat[i]))
            row.update(p_adjusted=float(verdicts.p_adjusted[j]),
                       tost_adjusted=float(verdicts.tost_adjusted[j]),
                       verdict=str(verdicts.verdict[j]), family=len(members))
            rows.append(row)
    return rows, rule


def _joined(effects: list[CrossedEffects]) -> CrossedEffects:
    """One family of single comparisons (each of batch 1) as one batch, for `decide`."""
    fields = ("estimate", "se", "df", "p_value", "low", "high", "tost_p", "var_seed",
              "var_eval", "var_residual")
    first = effects[0]
    return CrossedEffects(*(np.concatenate([getattr(e, f) for e in effects]) for f in fields),
                          first.alpha, first.margin, first.shape)


class _NoInterval:
    low = high = float("nan")


def headroom_association(frame: pd.DataFrame, arm: str, baseline: str, *, k: int,
                         rng: np.random.Generator, n_resamples: int = 2000
                         ) -> tuple[pd.DataFrame, dict]:
    """Per-task headroom of ``baseline`` (pass@k of its sampled episodes - its greedy
    success) and ``arm``'s per-task greedy gain over it; Spearman rho across tasks with a
    percentile interval from ``n_resamples`` task resamples."""
    base = frame[frame["policy"].isin([baseline, f"{baseline}/sampled"])]
    first = base["train_seed"].dropna().min()
    base = base[base["train_seed"] == first] if pd.notna(first) else base
    room = sampling_headroom(base, sampled=f"{baseline}/sampled", greedy=baseline, k=k)
    d, _, _ = paired_differences(frame, arm, baseline, mode="greedy")
    _, labels = outcome_tensor(frame, policies=[arm, baseline], error_score=0.0)
    gain = pd.DataFrame({"suite": [t[0] for t in labels.tasks],
                         "task_id": [t[1] for t in labels.tasks],
                         "gain": d.mean(axis=(0, 2))})
    table = room.per_task.merge(gain, on=["suite", "task_id"])
    table.insert(0, "arm", arm)
    x, y = table["headroom"].to_numpy(), table["gain"].to_numpy()
    summary = {"arm": arm, "baseline": baseline, "k": k, "n_tasks": len(table),
               "mean_headroom": float(x.mean()) if len(x) else np.nan,
               "rho": np.nan, "rho_low": np.nan, "rho_high": np.nan}
    if len(x) >= 3 and np.ptp(x) > 0 and np.ptp(y) > 0:
        summary["rho"] = float(scipy.stats.spearmanr(x, y).statistic)
        index = rng.integers(0, len(x), size=(n_resamples, len(x)))
        rx = scipy.stats.rankdata(x[index], axis=1)
        ry = scipy.stats.rankdata(y[index], axis=1)
        rx, ry = rx - rx.mean(axis=1, keepdims=True), ry - ry.mean(axis=1, keepdims=True)
        norm = np.sqrt((rx**2).sum(axis=1) * (ry**2).sum(axis=1))
        rho = np.divide((rx * ry).sum(axis=1), norm, out=np.full(norm.shape, np.nan),
                        where=norm > 0)
        rho = rho[np.isfinite(rho)]
        if rho.size:
            summary["rho_low"], summary["rho_high"] = (float(v) for v in
                                                       np.quantile(rho, [0.025, 0.975]))
    return table, summary


def analyse_frame(study: StudyConfig, frame: pd.DataFrame, *,
                  rng: np.random.Generator | None = None) -> StudyAnalysis:
    """`analyse_study` over an episode frame already loaded."""
    rng = rng or make_rng("study", study.name)
    compared = [a for a in study.arms_resolved() if a.baseline]
    cells = [a for a in compared if a.role == "cell"]
    others = [a for a in compared if a.role != "cell"]
    # a graft is read against both ends: its target (the baseline) and its source
    others += [dataclasses.replace(a, baseline=a.graft.source, role="graft-vs-source")
               for a in others if a.graft is not None]
    # merge variants read against each other too (TOST: are they distinguishable?), the
    # pairs adjusted together as one family
    merges = [a for a in others if a.merge is not None]
    pairs = [dataclasses.replace(a, baseline=b.name, role="merge-vs-merge")
             for i, a in enumerate(merges) for b in merges[i + 1:]]
    modes = [m for m in MODES if (m == "greedy" and study.eval.greedy)
             or (m == "sampled" and study.eval.samples)]
    rows, rules = [], {}
    grafts = [a for a in others if a.graft is not None]
    singles = [a for a in others if a.graft is None]
    for mode in modes:
        found, rules[mode] = _family(cells, frame, study, mode, rng, adjust=True,
                                     same_design=True)
        rows += found
        # a positive control or a merge against its baseline: a pre-registered single test
        rows += _family(singles, frame, study, mode, rng, adjust=False)[0]
        # the grafts answer one question (which group carries the effect), against both
        # ends: one family; so are the merges read against each other
        rows += _family(grafts, frame, study, mode, rng, adjust=True)[0]
        rows += _family(pairs, frame, study, mode, rng, adjust=True)[0]
    headroom, association = None, None
    k = study.analysis.headroom_k
    if k and study.eval.greedy and study.eval.samples >= k:
        tables, summaries = [], []
        for arm in compared:
            table, summary = headroom_association(frame, arm.name, arm.baseline, k=k, rng=rng)
            tables.append(table)
            summaries.append(summary)
        headroom = pd.concat(tables, ignore_index=True) if tables else None
        association = pd.DataFrame(summaries) if summaries else None
    return StudyAnalysis(pd.DataFrame(rows), rules, headroom, association)


def analyse_study(study: StudyConfig, *, rng: np.random.Generator | None = None
                  ) -> StudyAnalysis:
    """Read the study's episodes from its store and analyse them (see module)."""
    frame = study_frame(study)
    if frame.empty:
        raise HarnessError(f"{study.db} holds no episode of study {study.name!r}; run "
                           "`harness study run` first")
    return analyse_frame(study, frame, rng=rng)
