"""The leaderboard of ``harness leaderboard``: per policy x suite, the success rate with its
Wilson interval, the hierarchical-bootstrap interval (training seeds, then tasks; the one to
quote when episodes share tasks and seeds), and whether the policy is separable from the best
after Holm (`harness.report.ranking`)."""

from __future__ import annotations

import json
import logging
import os
from collections import Counter

import numpy as np
import pandas as pd

from harness.audit.ceilings import GENERATED_NOTE, generated_records
from harness.core import HarnessError, escape_controls, last_line, make_rng
from harness.report.ranking import rank_policies
from harness.stats.arrays import outcome_tensor
from harness.stats.bootstrap import hierarchical_bootstrap_batch

log = logging.getLogger(__name__)

LEADERBOARD_COLUMNS = ["suite", "policy", "n", "errors", "success", "low", "high",
                       "boot_low", "boot_high", "mean_score", "best", "p_holm", "separable"]
"""``low/high``: Wilson 95%; ``boot_low/boot_high``: hierarchical bootstrap 95% (NaN when the
suite has fewer than two complete tasks); ``separable``: None for the best policies."""


def _bootstrap_bounds(group: pd.DataFrame, suite: str, n_resamples: int
                      ) -> dict[str, tuple[float, float]]:
    try:
        values, labels = outcome_tensor(group, metric="success", missing="drop_tasks")
        result = hierarchical_bootstrap_batch(values, make_rng("leaderboard", suite),
                                              n_resamples=n_resamples)
    except HarnessError as exc:
        log.info("%s: no hierarchical bootstrap (%s)", suite, exc)
        return {}
    return {policy: (interval.low, interval.high)
            for policy, interval in zip(labels.policies, result.intervals)}


AUDIT_RUN_PREFIX = "audit-"
"""Run ids of `harness audit`'s runs: their probe episodes are not a leaderboard's unless asked."""
DESIGN_FIELDS = ("split", "samples", "max_steps")
"""The run-config fields that make an evaluation design: episodes pool across runs only when
these agree (the task set and evaluation seeds may grow: the same key is counted once). The
scaffold and layers are part of the policy id."""


def design_of(config: dict) -> str:
    """A run's evaluation design as a short label, e.g. ``split=test, samples=1, max_steps=env``."""
    values = {field: config.get(field) for field in DESIGN_FIELDS}
    if values["max_steps"] is None:
        values["max_steps"] = "env"
    return ", ".join(f"{field}={value}" for field, value in values.items())


def scoped_episodes(db: str | os.PathLike, *, run_id: str | None = None,
                    suite: str | None = None, include_audits: bool = False) -> pd.DataFrame:
    """The episodes a leaderboard ranks (the CLI's, the report's and the viewer's rule): those
    of `run_id` (all runs when None; audit runs only with `include_audits` or when named),
    each with its run's ``design`` (`design_of`), and each episode key counted once per design
    (the latest run's episode, so a widened run does not count the keys it shares twice)."""
    from harness.store import Store

    with Store(db, readonly=True) as store:
        frame = store.load_episodes(run_id=run_id, suite=suite)
        runs = store.runs()
    if run_id is None and not include_audits:
        frame = frame[~frame["run_id"].str.startswith(AUDIT_RUN_PREFIX)]
    configs = {row.run_id: json.loads(row.config) for row in runs.itertuples()}
    order = {run: position for position, run in enumerate(runs["run_id"])}
    frame = frame.assign(design=frame["run_id"].map(lambda r: design_of(configs.get(r, {}))),
                         run_order=frame["run_id"].map(order))
    frame = frame.sort_values("run_order", kind="stable").drop_duplicates(
        ["design", "policy", "suite", "task_id", "eval_seed", "sample"], keep="last")
    return frame.drop(columns="run_order").sort_index().reset_index(drop=True)


def leaderboard_table(episodes: pd.DataFrame, *, n_resamples: int = 10_000,
                      alpha: float = 0.05) -> pd.DataFrame:
    """One row per (suite, policy), columns `LEADERBOARD_COLUMNS`, best first in each suite.

    `episodes` is the frame of `harness.store.load_episodes` (or `scoped_episodes`); errored
    episodes count as failures (and are counted apart). Where the frame holds several
    evaluation designs (its ``design`` column), each is ranked apart, and in a suite played
    under more than one the policy is labelled with its design. Resampling RNGs are derived
    from the suite name, so the same store gives the same table.
    """
    if episodes.empty:
        raise HarnessError("no episodes to rank; run `harness run` first or check the filters")
    if "design" in episodes and episodes["design"].nunique() > 1:
        return _by_design(episodes, n_resamples=n_resamples, alpha=alpha)
    ranked = rank_policies(episodes, alpha=alpha, n_resamples=n_resamples)
    extra = episodes.groupby(["suite", "policy"]).agg(
        errors=("status", lambda s: int((s != "ok").sum())), mean_score=("score", "mean"))
    table = ranked.merge(extra.reset_index(), on=["suite", "policy"], how="left")
    bounds = {suite: _bootstrap_bounds(group, suite, n_resamples)
              for suite, group in episodes.groupby("suite", sort=True)}
    table["boot_low"] = [bounds[s].get(p, (np.nan, np.nan))[0]
                         for s, p in zip(table.suite, table.policy)]
    table["boot_high"] = [bounds[s].get(p, (np.nan, np.nan))[1]
                          for s, p in zip(table.suite, table.policy)]
    return table[LEADERBOARD_COLUMNS]


def _by_design(episodes: pd.DataFrame, *, n_resamples: int, alpha: float) -> pd.DataFrame:
    """`leaderboard_table` of each design apart; a suite's policies carry their design where
    the suite was played under more than one."""
    several = episodes.groupby("suite")["design"].nunique() > 1
    differing = _differing_fields(episodes["design"].unique())
    tables = []
    for design, group in episodes.groupby("design", sort=True):
        table = leaderboard_table(group.drop(columns="design"), n_resamples=n_resamples,
                                  alpha=alpha)
        label = ", ".join(part for part in design.split(", ")
                          if part.split("=")[0] in differing)
        labelled = table["suite"].map(several).astype(bool)
        table.loc[labelled, "policy"] = table.loc[labelled, "policy"] + f" [{label}]"
        tables.append(table)
    return (pd.concat(tables).sort_values("suite", kind="stable").reset_index(drop=True))


def _differing_fields(designs) -> set[str]:
    """The `DESIGN_FIELDS` whose value differs among the `designs` labels."""
    values = [dict(part.split("=", 1) for part in design.split(", ")) for design in designs]
    return {field for field in DESIGN_FIELDS if len({v.get(field) for v in values}) > 1}


def _percent(value: float) -> str:
    return "—" if value != value else f"{100 * value:.1f}"


def _marker(row: pd.Series) -> str:
    if row["best"]:
        return "best"
    return "≈ best" if row["separable"] is False else ""


HEADER = ["suite", "policy", "success %", "95% CI (hier. bootstrap)", "95% CI (Wilson)", "n",
          "errors", "mean score", "vs best (Holm)"]


def format_row(row: pd.Series) -> list[str]:
    """Cells of one leaderboard row as strings, in `HEADER` order."""
    return [row["suite"], row["policy"], _percent(row["success"]),
            f"[{_percent(row['boot_low'])}, {_percent(row['boot_high'])}]",
            f"[{_percent(row['low'])}, {_percent(row['high'])}]",
            str(row["n"]), str(row["errors"]), f"{row['mean_score']:.3f}", _marker(row)]


NOTE_KEY = "comparability_note"
"""The step-info key in which an env names a departure that makes an episode's score not
comparable with published numbers (`tasks.base.StepResult`)."""


def comparability_notes(db: str | os.PathLike, *, run_id: str | None = None,
                        suite: str | None = None) -> list[str]:
    """One line per (suite, policy, note) among the stored episodes, to print under the table:
    ``"† webshop@2 / random: 40 episodes not comparable: noun tagger fallback@1, ..."``."""
    from harness.store import Store

    with Store(db, readonly=True) as store:
        frame = store.episode_notes(NOTE_KEY, run_id=run_id, suite=suite)
    return [f"† {row.suite} / {row.policy}: {row.n} episodes not comparable: {row.note}"
            for row in frame.itertuples()]


FLAGGED_KEY = "flagged_resolve"
"""The step-info key in which an env marks a resolved episode whose prediction its grader's
tamper check flagged (``tasks.swebench.env.FLAGGED_RESOLVE``); the value names the flags."""


def flagged_resolve_notes(db: str | os.PathLike, *, run_id: str | None = None,
                          suite: str | None = None) -> list[str]:
    """One line per (suite, policy, flag kinds) counting resolved episodes whose prediction
    the tamper check flagged (they stay in the success rate; the count says how many of its
    successes to look at): ``"⚑ swe-lite@2 / openai:m: 2 resolved episodes flagged by the
    tamper check: pytest-config"``."""
    from harness.store import Store

    with Store(db, readonly=True) as store:
        frame = store.episode_notes(FLAGGED_KEY, run_id=run_id, suite=suite)
    return [f"⚑ {row.suite} / {row.policy}: {row.n} resolved episodes flagged by the tamper "
            f"check: {row.note}" for row in frame.itertuples()]


ERROR_REASONS = 3
"""Most reasons listed per (suite, policy) under a leaderboard; the rest are counted."""
REASON_CHARS = 200
"""Longest reason shown (an error's last line, cut)."""


def error_notes(episodes: pd.DataFrame, *, reasons: int = ERROR_REASONS) -> list[str]:
    """One line per (suite, policy) with errored or timed-out episodes, to print under the
    table (they count as failures in its success rate): how many, and the `reasons` most
    frequent reasons (status and the error's last line) with their counts, e.g.
    ``"! swe-lite@2 / oracle: 1 of 5 episodes errored (counted as failures): timeout: episode
    exceeded 600.0s (1)"``. `episodes` is the frame of `harness.store.load_episodes`."""
    failed = episodes[episodes["status"] != "ok"]
    if failed.empty:
        return []
    totals = episodes.groupby(["suite", "policy"]).size()
    lines = []
    for (suite, policy), group in failed.groupby(["suite", "policy"], sort=True):
        why = [f"{status}: {_reason(error)}" for status, error in zip(group["status"],
                                                                      group["error"])]
        counts = sorted(Counter(why).items(), key=lambda item: (-item[1], item[0]))
        shown = [f"{reason} ({count})" for reason, count in counts[:reasons]]
        if len(counts) > reasons:
            shown.append(f"{sum(count for _, count in counts[reasons:])} more with "
                         f"{len(counts) - reasons} other reasons")
        lines.append(f"! {suite} / {policy}: {len(group)} of {totals[(suite, policy)]} episodes "
                     f"errored (counted as failures): {'; '.join(shown)}")
    return lines


def _reason(error: object) -> str:
    """An error's last line (what happened), its control characters escaped, cut short."""
    line = escape_controls(last_line(error if isinstance(error, str) else None).strip())
    if not line:
        return "no reason stored"
    return line if len(line) <= REASON_CHARS else line[:REASON_CHARS - 1] + "…"


def leaderboard_markdown(table: pd.DataFrame) -> str:
    """The leaderboard as a GitHub-flavoured Markdown table. "≈ best": not separable from the
    best policy of its suite (clustered sign-flip test, Holm-adjusted, alpha 0.05)."""
    lines = ["| " + " | ".join(HEADER) + " |", "|" + "---|" * len(HEADER)]
    lines += ["| " + " | ".join(format_row(row)) + " |" for _, row in table.iterrows()]
    generated = [s for s in dict.fromkeys(table["suite"]) if generated_records(s)]
    if generated:
        lines += ["", f"Generated records ({', '.join(generated)}): success rates and trivial "
                  f"ceilings are {GENERATED_NOTE}, not the published benchmark's."]
    return "\n".join(lines)
