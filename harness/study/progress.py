"""How much of a study is left and how long it should take, from the study's own finished jobs.

`remaining_work` reads `harness.study.run.study_status` (per arm and seed: training step,
updates and SFT steps, stored and expected episodes per decoding) and the finished jobs' wall
times (`harness.study.run.load_study_jobs`): seconds per SFT step from the finished
supervised-only training jobs, seconds per update from the finished training jobs of arms
with updates (less their SFT steps at that rate, when it is known), playing seconds per
episode per decoding from the finished evaluation jobs. An arm's SFT is counted while its
training has not saved a checkpoint (an interrupted SFT starts again). The estimate is the
work left at those rates, on the machine and under the load the finished jobs ran with; it
is None until every kind of work left has a measured rate.
Arms built from others (grafts, merges) are counted by their episodes only (building one takes
seconds); a trained arm whose episodes are all stored has nothing left (the run does not
train it again). Jobs run one after another (the local executor); on Ray, arms in parallel
finish sooner. A job that was resumed records the time of its last part with the work of that
part (`harness.study.run.STUDY_TABLES` version 2), so an interruption leaves the rates right;
jobs recorded before that version count their whole work against their last part's time.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

__all__ = ["Remaining", "remaining_work", "format_remaining"]

_BUILT = ("graft", "merge")
"""Roles of arms built from other arms' models rather than trained."""


@dataclass(frozen=True)
class Remaining:
    """Work left in a study and its estimated wall time (None: no measured rate yet)."""

    updates: int
    episodes: dict[str, int]
    seconds: float | None
    sft_steps: int = 0


def _modes(status: pd.DataFrame) -> list[str]:
    """The decodings (``greedy``, ``sampled``) `status` counts episodes of."""
    return [c[: -len("_expected")] for c in status.columns if c.endswith("_expected")]


def remaining_work(status: pd.DataFrame, jobs: pd.DataFrame) -> Remaining:
    """The updates, SFT steps and episodes `status` has left, and their time at the rates of
    `jobs` (a status without an ``sft_steps`` column has no SFT)."""
    status = status if "sft_steps" in status else status.assign(sft_steps=0)
    left_by_mode = {mode: status[f"{mode}_expected"] - status[f"{mode}_stored"]
                    for mode in _modes(status)}
    pending = sum(left_by_mode.values()) > 0
    trained = status[~status["role"].isin(_BUILT) & pending]
    updates_left = int((trained["updates"] - trained["step"].clip(lower=0)).clip(lower=0).sum())
    sft_left = int(trained.loc[trained["step"] < 0, "sft_steps"].sum())
    episodes = {mode: int(left.sum()) for mode, left in left_by_mode.items()}
    done = _work_done(jobs.merge(status, left_on=["arm", "train_seed"],
                                 right_on=["arm", "seed"]))
    rates = _training_rates(done[(done["job"] == "train") & ~done["role"].isin(_BUILT)])
    seconds = 0.0
    for left, rate in ((updates_left, rates[0]), (sft_left, rates[1])):
        if left and rate is None:
            return Remaining(updates_left, episodes, None, sft_left)
        seconds += left * rate if left else 0.0
    for mode, left in episodes.items():
        played = done[done["job"] == mode]
        if left and played.empty:
            return Remaining(updates_left, episodes, None, sft_left)
        if left:
            seconds += left * played["wall_s"].sum() / max(played["episodes_done"].sum(), 1)
    return Remaining(updates_left, episodes, seconds, sft_left)


def _work_done(done: pd.DataFrame) -> pd.DataFrame:
    """`done` with the work each job's timed part did: ``updates_done``, ``sft_done`` and
    ``episodes_done`` from its ``work`` (JSON), or the job's whole work where it has none
    (rows written before the study table's version 2, or hand-made tables)."""
    import json

    work = [json.loads(w) if isinstance(w, str) else {}
            for w in (done["work"] if "work" in done else [None] * len(done))]
    expected = [done.at[i, f"{job}_expected"] if f"{job}_expected" in done else 0
                for i, job in zip(done.index, done["job"])]
    return done.assign(
        updates_done=[w.get("updates", u) for w, u in zip(work, done["updates"])],
        sft_done=[w.get("sft_steps", n) for w, n in zip(work, done["sft_steps"])],
        episodes_done=[w.get("episodes", e) for w, e in zip(work, expected)])


def _training_rates(training: pd.DataFrame) -> tuple[float | None, float | None]:
    """Seconds per update and per SFT step of finished training jobs (None: no such job)."""
    supervised = training[(training["updates_done"] == 0) & (training["sft_done"] > 0)]
    per_sft = (supervised["wall_s"].sum() / supervised["sft_done"].sum()
               if not supervised.empty else None)
    rl = training[training["updates_done"] > 0]
    if rl.empty:
        return None, per_sft
    rl_seconds = rl["wall_s"].sum() - (per_sft or 0.0) * rl["sft_done"].sum()
    return max(rl_seconds, 0.0) / rl["updates_done"].sum(), per_sft


def format_remaining(remaining: Remaining) -> str:
    """One line: the work left and its estimate, or that the study is complete."""
    played = ", ".join(f"{mode} {n:,}" for mode, n in remaining.episodes.items() if n)
    if not remaining.updates and not remaining.sft_steps and not played:
        return "complete: every job is trained and every episode stored"
    sft = f", {remaining.sft_steps:,} SFT steps" if remaining.sft_steps else ""
    work = f"left: {remaining.updates:,} training updates{sft}; episodes: {played or 'none'}"
    if remaining.seconds is None:
        return f"{work} (no estimate until a job of each kind has finished)"
    minutes = remaining.seconds / 60
    took = f"{minutes / 60:.1f} h" if minutes >= 90 else f"{max(minutes, 1):.0f} min"
    return f"{work}; about {took} at the rates of this study's finished jobs on this machine"
