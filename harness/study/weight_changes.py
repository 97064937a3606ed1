"""What training changed in a study's models: every saved checkpoint of every trained arm
against its baseline's model (`harness.study.weights`), per parameter group."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

from harness.core import HarnessError
from harness.study.config import StudyConfig
from harness.study.run import TrainJob
from harness.study.weights import change_norms, delta_ranks, group_change_norms

__all__ = ["study_weight_changes"]


def study_weight_changes(study: StudyConfig) -> pd.DataFrame:
    """For every trained arm of `study` (not grafts or merges), every saved checkpoint of every
    seed against its baseline's model (an arm without one: the study's baseline's): per (arm,
    seed, step, group) the delta norm, the relative change and the mean effective rank of the
    group's 2-D deltas. Empty when no arm has a baseline model on disk."""
    from harness.train.checkpoint import is_checkpoint

    rows = []
    for arm in study.arms_resolved():
        start = arm.baseline or study.analysis.baseline  # a declared arm: the study's start
        if (arm.name == start or arm.graft is not None or arm.merge is not None
                or arm.recipe.updates == 0):
            continue
        base = study.arm(start)
        for seed in arm.seeds:
            start = TrainJob(base, seed if seed in base.seeds else base.seeds[0]).checkpoint
            folder = TrainJob(arm, seed).checkpoint.parent
            if not start.exists() or not folder.is_dir():
                continue
            for step_dir in sorted(p for p in folder.iterdir() if is_checkpoint(p)):
                try:
                    norms = group_change_norms(change_norms(start, step_dir))
                    ranks = delta_ranks(start, step_dir)
                except HarnessError:
                    continue  # another architecture: nothing to compare
                rank = ranks.groupby("group")["delta_rank"].mean()
                squares = (norms[["delta_norm", "start_norm"]] ** 2).groupby(norms["group"]).sum()
                step = int(json.loads((step_dir / "checkpoint.json").read_text())["step"])
                for group, (delta_sq, start_sq) in squares.iterrows():
                    rows.append({"arm": arm.name, "seed": seed, "step": step, "group": group,
                                 "delta_norm": float(np.sqrt(delta_sq)),
                                 "relative": float(np.sqrt(delta_sq / start_sq))
                                 if start_sq > 0 else float("nan"),
                                 "delta_rank": float(rank.get(group, float("nan")))})
    return pd.DataFrame(rows, columns=["arm", "seed", "step", "group", "delta_norm", "relative",
                                       "delta_rank"])
