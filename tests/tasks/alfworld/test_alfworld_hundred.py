"""Must-show: 100 generated games per task type, all solvable, and the oracle wins every one
through the real engine, each game read back from its ``game.tw-pddl`` on disk.

One test per task type (the games of a type depend only on the base seed, the type and the
index, so the split plays exactly the 600 games the single test played): each part takes a
sixth of the time, well inside its timeout on a loaded machine (the single test took 2,560 s of
its 3,600 s on 2 busy cores)."""

from __future__ import annotations

import json
import os
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pytest

from harness.core import make_rng
from tasks.alfworld.problems import TASK_TYPES

N_PER_TYPE = 100
WORKERS = min(2, os.cpu_count() or 1)


def make_and_play(job: tuple) -> tuple:
    """Generate one game (as `generate_games` would, same seed derivation), then play the
    oracle on the written file through `AlfworldEnv`:
    ``(record, won, oracle steps, walkthrough length)``."""
    from tasks.alfworld.env import AlfworldEnv
    from tasks.alfworld.generator import generate_one

    root, base, split, task_type, index = job
    record = generate_one(root, base, split, task_type, index)
    game_file = Path(root) / record.path / "game.tw-pddl"
    env = AlfworldEnv(game_file)
    _, info = env.reset(seed=0)
    steps, done = 0, False
    while not done:
        action = env.oracle_action()
        assert action in info["admissible_actions"]
        result = env.step(action)
        info, steps = result.info, steps + 1
        done = result.terminated or result.truncated
    walkthrough = json.loads(game_file.read_text())["walkthrough"]
    return record, bool(info["won"]), steps, len(walkthrough)


@pytest.mark.slow
@pytest.mark.timeout(1800)
@pytest.mark.parametrize("task_type", sorted(TASK_TYPES.values()))
def test_hundred_games_per_task_type_all_won_by_the_oracle(task_type, tmp_path):
    from tasks.alfworld.data import collect_games
    from tasks.alfworld.generator import base_seed

    base = base_seed(make_rng("alfworld-100"))  # as generate_games(..., make_rng("alfworld-100"))
    jobs = [(str(tmp_path), base, "valid_unseen", task_type, index)
            for index in range(N_PER_TYPE)]
    with ProcessPoolExecutor(max_workers=WORKERS) as pool:
        results = list(pool.map(make_and_play, jobs, chunksize=10))
    counts = {}
    for record, _, _, _ in results:
        counts[record.task_type] = counts.get(record.task_type, 0) + 1
    assert counts == {task_type: N_PER_TYPE}
    listed = collect_games(tmp_path)
    assert len(listed) == N_PER_TYPE
    assert {g.floor_plan for g in listed} <= {10, 219, 308, 424}
    problems = {json.loads((tmp_path / "json_2.1.1" / g.task_id / "game.tw-pddl").read_text())[
        "pddl_problem"].split("(:objects", 1)[1] for g in listed}
    assert len(problems) == len(listed), "generated games must be distinct"
    lost = [record.path for record, won, _, _ in results if not won]
    assert not lost, f"the oracle lost {len(lost)} of {len(results)}: {lost[:3]}"
    assert all(steps == length for _, _, steps, length in results), "the oracle is shortest"
    attempts = sum(record.attempts for record, _, _, _ in results)
    print(f"{len(results)} games from {attempts} draws")
