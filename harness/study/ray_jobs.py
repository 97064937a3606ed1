"""`harness study run --executor ray[:ADDRESS]`: every (arm) of the study as a Ray task,
each one `run_study` of that arm in a worker (train, then evaluate, its seeds), cells and
declared arms at once, then the arms built from them (grafts, merges). Jobs share the study's
database as concurrent `harness run`s do (claims, one writer per invocation), so a killed
job's work resumes on the next `study run`, local or on Ray."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pandas as pd

from harness.executors.ray_cluster import connect, import_ray
from harness.executors.spec import ExecutorSpec
from harness.store import Store
from harness.study.config import load_study_config
from harness.study.run import ordered_arms, study_status

__all__ = ["run_study_on_ray"]


def _run_arm(path: str, cwd: str, arm: str) -> str:
    """One arm's jobs in a Ray worker (in the driver's folder: the study's paths are relative
    to it)."""
    os.chdir(cwd)
    from harness.study.run import run_study

    run_study(load_study_config(path), arms=(arm,))
    return arm


def run_study_on_ray(path: str | Path, spec: ExecutorSpec,
                     say: Callable[[str], None] = lambda message: None) -> pd.DataFrame:
    """Run the study file at `path` on Ray (see module); returns its status."""
    study = load_study_config(path)
    arms = ordered_arms(study)
    stages = [[a.name for a in arms if a.graft is None and a.merge is None],
              [a.name for a in arms if a.graft is not None or a.merge is not None]]
    ray = import_ray(spec)
    started = connect(ray, spec)
    try:
        task = ray.remote(num_cpus=1, max_retries=spec.max_retries)(_run_arm)
        for stage in stages:
            refs = [task.remote(str(Path(path).resolve()), os.getcwd(), name)
                    for name in stage]
            pending = list(refs)
            while pending:
                done, pending = ray.wait(pending, num_returns=1)
                say(f"{ray.get(done[0])}: every job done")
    finally:
        if started:
            ray.shutdown()
    with Store(study.db) as store:
        return study_status(study, store)
