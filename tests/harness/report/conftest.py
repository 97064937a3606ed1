"""A small hand-made results store for the report tests (deterministic outcomes)."""

from __future__ import annotations

import pytest

from harness.records import EpisodeKey, EpisodeRecord, StepRecord
from harness.store import Store

ODD = "odd_name&%"
"""A policy name full of LaTeX and HTML specials."""


def _wins(policy: str, task_index: int, eval_seed: int, sample: int) -> bool:
    if policy == "strong":
        return True
    if policy == "close":  # one task short of strong
        return task_index != 0
    if policy == ODD:
        return (task_index + eval_seed) % 2 == 0
    if policy == "sampler":
        return sample < task_index % 4
    return False  # "weak"


def _tasks():
    return {"alpha@1": [(f"x-{i}", "x") for i in range(4)] + [(f"y-{i}", "y") for i in range(4)],
            "beta@1": [(f"z-{i}", "z") for i in range(6)]}


def write_store(path, *, with_train: bool = True) -> None:
    batch = []
    for suite, tasks in _tasks().items():
        for policy in ("strong", "close", "weak", ODD, "sampler"):
            samples = 4 if policy == "sampler" else 1
            if policy == "sampler" and suite != "alpha@1":
                continue
            for index, (task, task_type) in enumerate(tasks):
                for eval_seed in (0, 1):
                    for sample in range(samples):
                        won = _wins(policy, index, eval_seed, sample)
                        status = "error" if (policy == "weak" and suite == "beta@1"
                                             and index == 0 and eval_seed == 0) else "ok"
                        steps = [] if status != "ok" else [
                            StepRecord(0, f"<b>{task}</b> & start", "look", "look", 0.0, False,
                                       False, {"won": False, "score": 0.0, "invalid": False}),
                            StepRecord(1, "after look", "go", "go", float(won), True, False,
                                       {"won": won, "score": float(won), "invalid": False})]
                        record = EpisodeRecord(
                            key=EpisodeKey(policy, suite, task, eval_seed, sample),
                            task_type=task_type, split="test", status=status,
                            success=won and status == "ok", score=float(won) if status == "ok"
                            else float("nan"), total_reward=float(won), n_steps=len(steps),
                            n_invalid=0, terminated=True, truncated=False,
                            error="RuntimeError: boom" if status != "ok" else None)
                        batch.append(("hand-run", record, steps))
    if with_train:
        for policy in ("strong", "weak"):
            for index in range(3):
                won = policy == "strong"
                record = EpisodeRecord(key=EpisodeKey(policy, "beta@1", f"z-train-{index}", 0, 0),
                                       task_type="z", split="train", status="ok", success=won,
                                       score=float(won), total_reward=float(won), n_steps=0,
                                       n_invalid=0, terminated=True, truncated=False)
                batch.append(("hand-run", record, []))
    with Store(path) as store:
        store.begin_run("hand-run", {"hand": True}, {"code_version": "test", "packages": {}})
        store.write_episodes(batch)


@pytest.fixture
def small_db(tmp_path):
    path = tmp_path / "small.db"
    write_store(path)
    return path
