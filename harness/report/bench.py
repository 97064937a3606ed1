"""`harness bench report`: render a full report of a synthetic 50-policy x 10-suite store.

The baseline, measured in the same run, is the time to load that store's episode frame
(`harness.store.load_episodes`), the first thing every report does.
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from harness.core import make_rng
from harness.records import EpisodeKey, EpisodeRecord, StepRecord
from harness.store import Store, load_episodes

__all__ = ["synthetic_store", "bench_report", "report_report"]

TASK_TYPES = ("easy", "medium", "hard")


def _episode(policy: str, suite: str, task: str, task_type: str, eval_seed: int,
             won: bool) -> tuple[EpisodeRecord, list[StepRecord]]:
    steps = [StepRecord(t, f"{task} step {t}", f"move {t}", f"move {t}",
                        float(won and t == 2), t == 2, False,
                        {"won": bool(won and t == 2), "score": float(won and t == 2),
                         "invalid": False}) for t in range(3)]
    record = EpisodeRecord(key=EpisodeKey(policy, suite, task, eval_seed, 0),
                           task_type=task_type, split="test", status="ok", success=won,
                           score=float(won), total_reward=float(won), n_steps=3, n_invalid=0,
                           terminated=True, truncated=False, final_observation="done")
    return record, steps


def synthetic_store(path: str | Path, *, n_policies: int = 50, n_suites: int = 10,
                    tasks_per_type: int = 20, n_eval_seeds: int = 2, seed: int = 0) -> Path:
    """A results database of ``n_policies`` x ``n_suites`` (3 task types each), every episode
    with a 3-step trajectory; success ~ Bernoulli(logistic(ability - difficulty))."""
    rng = make_rng("bench/report", seed)
    ability = np.linspace(-2.0, 2.0, n_policies) + rng.normal(0, 0.1, n_policies)
    path = Path(path)
    with Store(path) as store:
        store.begin_run("synthetic", {"bench": "report"}, {"code_version": "bench"})
        for s in range(n_suites):
            suite = f"synthetic-{s:02d}@1"
            batch = []
            for level, task_type in enumerate(TASK_TYPES):
                difficulty = level - 1 + rng.normal(0, 0.5, tasks_per_type)
                for t in range(tasks_per_type):
                    task = f"{task_type}-{t:03d}"
                    p = 1 / (1 + np.exp(-(ability[:, None] - difficulty[t])))
                    wins = rng.random((n_policies, n_eval_seeds)) < p
                    for i in range(n_policies):
                        for e in range(n_eval_seeds):
                            batch.append(("synthetic", *_episode(
                                f"policy-{i:02d}", suite, task, task_type, e, bool(wins[i, e]))))
            store.write_episodes(batch)
    return path


def bench_report(*, n_policies: int = 50, n_suites: int = 10) -> dict[str, float]:
    """Seconds to build the store, load its frame (baseline) and render the whole report."""
    from harness.report.build import build_report

    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "bench.db"
        started = time.perf_counter()
        synthetic_store(db, n_policies=n_policies, n_suites=n_suites)
        built = time.perf_counter() - started
        started, cpu = time.perf_counter(), time.process_time()
        frame = load_episodes(db)
        load_s, load_cpu_s = time.perf_counter() - started, time.process_time() - cpu
        started, cpu = time.perf_counter(), time.process_time()
        summary = build_report(db, Path(tmp) / "report", command="harness bench report")
        render_s, render_cpu_s = time.perf_counter() - started, time.process_time() - cpu
    return {"episodes": float(len(frame)), "store_s": built, "load_s": load_s,
            "load_cpu_s": load_cpu_s, "render_s": render_s, "render_cpu_s": render_cpu_s,
            "files": float(len(summary.files)), "load_average": os.getloadavg()[0]}


def report_report(args: Any) -> list[str]:
    """Lines of `harness bench report`."""
    result = bench_report()
    return [f"report of 50 policies x 10 suites ({int(result['episodes'])} episodes, "
            f"{int(result['files'])} files); wall s / CPU s of this process",
            f"  load the episode frame (baseline): {result['load_s']:7.2f} / "
            f"{result['load_cpu_s']:6.2f}",
            f"  render tables, figures, page     : {result['render_s']:7.2f} / "
            f"{result['render_cpu_s']:6.2f}  (target < 30 s wall on 2 idle cores)",
            f"  ratio render/load (wall)         : {result['render_s'] / result['load_s']:7.1f}",
            f"  machine load average (1 min)     : {result['load_average']:7.2f}  (wall exceeds "
            "CPU when other processes share the cores)"]
