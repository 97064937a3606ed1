"""The work a study has left and its estimate, on hand-made status and job tables."""

from __future__ import annotations

import pandas as pd

from harness.study.progress import format_remaining, remaining_work

COLUMNS = ["arm", "role", "seed", "step", "updates", "greedy_stored", "greedy_expected",
           "sampled_stored", "sampled_expected"]


def _status(rows):
    return pd.DataFrame(rows, columns=COLUMNS)


def _jobs(rows):
    return pd.DataFrame(rows, columns=["arm", "train_seed", "job", "wall_s"])


STATUS = _status([
    ["start", "arm", 0, 0, 0, 10, 10, 40, 40],       # done
    ["cell", "cell", 0, 20, 20, 10, 10, 40, 40],     # done
    ["cell", "cell", 1, 5, 20, 0, 10, 0, 40],        # 15 updates, 10 + 40 episodes left
    ["cell", "cell", 2, -1, 20, 0, 10, 0, 40],       # not started: 20 updates
    ["g", "graft", 0, -1, 20, 0, 10, 0, 40],         # built, not trained: episodes only
])
JOBS = _jobs([
    ["start", 0, "train", 1.0],                      # an untrained arm: no rate of updates
    ["start", 0, "greedy", 5.0], ["start", 0, "sampled", 30.0],
    ["cell", 0, "train", 100.0], ["cell", 0, "greedy", 15.0], ["cell", 0, "sampled", 50.0],
])


def test_the_estimate_is_the_work_left_at_the_finished_jobs_rates():
    """35 updates at 100 s / 20 updates = 175 s; greedy 30 episodes at 20 s / 20 = 30 s;
    sampled 120 episodes at 80 s / 80 = 120 s: 325 s."""
    left = remaining_work(STATUS, JOBS)
    assert left.updates == 35 and left.episodes == {"greedy": 30, "sampled": 120}
    assert abs(left.seconds - 325.0) < 1e-9
    assert "35 training updates" in format_remaining(left)
    assert "greedy 30, sampled 120" in format_remaining(left)


def test_no_estimate_until_each_kind_of_work_left_has_a_rate():
    left = remaining_work(STATUS, JOBS[JOBS["job"] != "sampled"])
    assert left.seconds is None and left.episodes["sampled"] == 120
    assert "no estimate" in format_remaining(left)
    untrained = remaining_work(STATUS, JOBS[JOBS["arm"] == "start"])
    assert untrained.seconds is None  # updates left, but no trained arm has finished


def test_a_finished_study_says_so():
    done = STATUS.assign(step=STATUS["updates"], greedy_stored=STATUS["greedy_expected"],
                         sampled_stored=STATUS["sampled_expected"])
    left = remaining_work(done, JOBS)
    assert left.updates == 0 and left.seconds == 0.0
    assert format_remaining(left).startswith("complete")


def test_an_arm_with_every_episode_stored_has_nothing_left_to_train():
    """Its checkpoints gone (step -1) but its episodes stored: the run would not train it."""
    stored = STATUS.copy()
    stored.loc[3, ["greedy_stored", "sampled_stored"]] = [10, 40]
    left = remaining_work(stored, JOBS)
    assert left.updates == 15 and left.episodes == {"greedy": 20, "sampled": 80}
    assert abs(left.seconds - (75.0 + 20.0 + 80.0)) < 1e-9
    assert "about 3 min" in format_remaining(left)


def test_supervised_arms_count_their_sft_steps_at_the_sft_rate():
    """SFT-only jobs give 300 s / 150 steps = 2 s a step; the RL job's 300 s less its 100
    SFT steps (200 s) over 20 updates gives 5 s an update. Left: 150 + 450 SFT steps (1,200 s),
    10 updates (50 s) and 3 x 10 greedy episodes at 20 s / 20 = 1 s (30 s): 1,280 s."""
    status = pd.DataFrame([
        ["spec-a", "arm", 0, 0, 0, 150, 10, 10],     # done
        ["spec-a", "arm", 1, -1, 0, 150, 0, 10],     # not started: its SFT is left
        ["joint", "cell", 0, -1, 0, 450, 0, 10],     # not started
        ["rl", "arm", 0, 10, 20, 100, 0, 10],        # SFT done, 10 updates left
        ["rl", "arm", 1, 20, 20, 100, 10, 10],       # done
    ], columns=["arm", "role", "seed", "step", "updates", "sft_steps", "greedy_stored",
                "greedy_expected"])
    jobs = _jobs([["spec-a", 0, "train", 300.0], ["spec-a", 0, "greedy", 10.0],
                  ["rl", 1, "train", 300.0], ["rl", 1, "greedy", 10.0]])
    left = remaining_work(status, jobs)
    assert (left.updates, left.sft_steps, left.episodes) == (10, 600, {"greedy": 30})
    assert abs(left.seconds - 1280.0) < 1e-9
    assert "10 training updates, 600 SFT steps" in format_remaining(left)
    no_sft_rate = remaining_work(status, jobs[jobs["arm"] == "rl"])
    assert no_sft_rate.seconds is None  # SFT steps left, no supervised job finished yet


def test_a_resumed_job_is_timed_against_the_work_of_its_last_part():
    """The cell's seed 0 was resumed at update 15: its 50 s did 5 updates (10 s each, not
    100 s / 20 = 5 s), and its sampled evaluation resumed with 30 of 40 stored: 10 episodes
    in 10 s. Left: 35 updates (350 s), greedy 30 at 20 s / 20 (30 s), sampled 120 at
    (30 + 10) s / (40 + 10) (96 s): 476 s."""
    jobs = JOBS.assign(work=None)
    jobs.loc[(jobs["arm"] == "cell") & (jobs["job"] == "train"), ["wall_s", "work"]] = [
        50.0, '{"updates": 5, "sft_steps": 0}']
    jobs.loc[(jobs["arm"] == "cell") & (jobs["job"] == "sampled"), ["wall_s", "work"]] = [
        10.0, '{"episodes": 10}']
    left = remaining_work(STATUS, jobs)
    assert left.updates == 35 and abs(left.seconds - 476.0) < 1e-9
