"""The task-vector geometry beside a merge study (`harness.merge.geometry`): the first merge's
sources at the first training seed, read against a floor (the first two sources at two
different seeds: nothing shared but the base) and a ceiling (two saved steps of the first
source's own run)."""

from __future__ import annotations

import pandas as pd

from harness.merge.geometry import Geometry, geometry_arms
from harness.study.config import StudyConfig
from harness.study.run import TrainJob

__all__ = ["study_geometry", "geometry_summary"]


def study_geometry(study: StudyConfig) -> Geometry | None:
    """None without merges or before their sources' checkpoints exist."""
    if not study.merges:
        return None
    from harness.train.checkpoint import is_checkpoint

    merge = study.merges[0]
    sources = [study.arm(name) for name in merge.sources]
    base_arm = study.arm(merge.base or study.analysis.baseline)
    seeds = sources[0].seeds
    base = TrainJob(base_arm, seeds[0] if seeds[0] in base_arm.seeds else base_arm.seeds[0])
    models = [TrainJob(arm, seeds[0]).checkpoint for arm in sources]
    if not base.checkpoint.exists() or not all(p.exists() for p in models):
        return None
    floor = ([TrainJob(sources[0], seeds[0]).checkpoint, TrainJob(sources[1], seeds[-1])
              .checkpoint] if len(seeds) > 1 else [])
    steps = sorted(p for p in models[0].parent.iterdir() if is_checkpoint(p))
    ceiling = [steps[-2], steps[-1]] if len(steps) > 1 else []
    labels = {"models": [f"{a.name}/seed-{seeds[0]}" for a in sources],
              "floor": [f"{sources[0].name}/seed-{seeds[0]}",
                        f"{sources[1].name}/seed-{seeds[-1]}"],
              "ceiling": [f"{sources[0].name}/{p.name}" for p in ceiling]}
    return geometry_arms(base.checkpoint, models,
                         floor=floor if len(floor) == 2 and all(p.exists() for p in floor)
                         else [], ceiling=ceiling, labels=labels)


def geometry_summary(geometry: Geometry) -> pd.DataFrame:
    """Per arm and pair: the overall cosine and the Jaccard index at epsilon 1e-5 (or the
    largest threshold computed) beside the independent-support baseline."""
    cosine = geometry.cosine[geometry.cosine["group"] == "all"]
    epsilon = geometry.jaccard["epsilon"].max()
    jaccard = geometry.jaccard[geometry.jaccard["epsilon"] == epsilon]
    table = cosine.merge(jaccard, on=["arm", "a", "b"])
    return pd.DataFrame({"arm": table["arm"], "a": table["a"], "b": table["b"],
                         "cosine": table["cosine"].round(4),
                         f"Jaccard (eps {epsilon:g})": table["jaccard"].round(4),
                         "E[J] independent": table["expected"].round(4)})
