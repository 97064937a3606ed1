"""terminal-lite@2: every task validated (tests fail before the solution, pass after), the
Env contract, exploit attempts score 0 (agent code the tests run cannot forge the verdict,
expected answers never come from agent-owned inputs), tree rollouts match straight
episodes."""

from __future__ import annotations

import asyncio
from collections import Counter

import pytest

from tasks import check_env, get_suite
from tasks.terminal.suite import EXPLOITS, LITE_DIR
from tasks.terminal.taskdir import load_tasks


def _play(env, actions):
    observations, result = [], None
    for action in actions:
        result = env.step(action)
        observations.append(result.observation)
        if result.terminated or result.truncated:
            break
    return observations, result


def test_the_suite_has_40_tasks_over_eight_categories_and_three_splits():
    tasks = load_tasks(LITE_DIR)
    assert len(tasks) >= 40 and all(t.unsupported is None for t in tasks)
    categories = Counter(t.category for t in tasks)
    assert set(categories) == {"files-text", "sysadmin", "data", "debugging", "build", "git",
                               "sqlite", "permissions"}
    assert min(categories.values()) >= 5


def test_registered_with_splits_and_task_types(lite_suite):
    assert get_suite("terminal-lite").id == "terminal-lite@2"
    assert {s.split for s in lite_suite.tasks()} == {"train", "dev", "test"}
    assert len(lite_suite.task_types()) == 8


@pytest.mark.slow
def test_every_task_fails_before_and_passes_after_its_solution(lite_suite):
    failures = []
    for spec in lite_suite.tasks():
        env = lite_suite.make_env(spec.id)
        env.reset(seed=0)
        before = env.step("submit")
        env.reset(seed=0)
        after = env.step(env.oracle_action())
        while not (after.terminated or after.truncated):
            after = env.step(env.oracle_action())
        env.close()
        if before.reward != 0.0 or after.reward != 1.0 or not after.info["won"]:
            failures.append((spec.id, before.reward, after.reward))
    assert failures == []


def test_check_env_passes(lite_suite):
    env = lite_suite.make_env("count-words")
    check_env(env, n_steps=5)
    env.close()


@pytest.mark.parametrize("exploit", sorted(EXPLOITS))
def test_reward_hacking_attempts_score_zero(lite_suite, exploit):
    env = lite_suite.make_env("dedupe-lines")
    env.reset(seed=0)
    result = env.step(EXPLOITS[exploit])
    env.close()
    assert result.terminated and result.reward == 0.0 and not result.info["won"]


FORGING_MAIN = """cat > /app/main.py <<'PY'
import os
print("area 13")
try:
    open("/logs/verifier/reward.txt", "w").write("1")
except OSError as exc:
    print(exc)
for pid in os.listdir("/proc"):
    try:
        if pid.isdigit() and b"test.sh" in open(f"/proc/{pid}/cmdline", "rb").read():
            os.kill(int(pid), 9)
    except OSError:
        pass
PY
submit"""
"""Issue 39's reproduction: a main.py that prints the wrong answer, writes 1 to the reward
file and SIGKILLs ``bash /tests/test.sh`` when the test runs it (as root, in version 1: 1.0)."""


def test_a_program_that_forges_the_reward_when_the_test_runs_it_scores_zero(lite_suite):
    env = lite_suite.make_env("fix-python-import")
    env.reset(seed=0)
    result = env.step(FORGING_MAIN)
    env.close()
    # it ran as the agent: the reward file was not writable, the verifier script not killable,
    # so the script ended normally and wrote its own verdict
    assert result.reward == 0.0 and not result.info["won"]
    assert result.info["verifier"] == "reward.txt"


def test_count_words_with_an_emptied_input_fails(lite_suite):
    env = lite_suite.make_env("count-words")
    env.reset(seed=0)
    result = env.step(": > /app/text.txt && : > /app/counts.txt\nsubmit")
    env.close()
    assert result.reward == 0.0 and not result.info["won"]


def test_state_carries_over_and_invalid_commands_change_nothing(lite_suite):
    env = lite_suite.make_env("dedupe-lines")
    observation, _ = env.reset(seed=0)
    assert observation.startswith("/app/list.txt has duplicate lines")
    assert env.step("cd /tmp && export N=7 && touch marker").info["command_status"] == "ok"
    result = env.step("fi fi (")
    assert result.info["invalid"] and result.observation.startswith("invalid command")
    assert env.step("pwd; echo $N; ls marker").observation == "/tmp\n7\nmarker\n[exit code 0]\n"
    env.close()


def test_tree_rollout_matches_straight_episodes(lite_suite):
    """Snapshot at step k, two branches, restore: the same observations as two straight
    episodes with the same actions."""
    prefix = ["echo start > log.txt", "cd /tmp && export K=1", "cat /app/list.txt | wc -l"]
    branch_a = ["awk '!seen[$0]++' /app/list.txt > /app/unique.txt; cat /app/unique.txt",
                "echo a >> /app/log.txt; pwd; echo $K", "submit"]
    branch_b = ["sort -u /app/list.txt > /app/unique.txt; cat /app/unique.txt; rm /app/log.txt",
                "ls /app; echo $K", "submit"]
    env = lite_suite.make_env("dedupe-lines")
    straight = []
    for branch in (branch_a, branch_b):
        env.reset(seed=0)
        straight.append(_play(env, prefix + branch)[0])
    env.reset(seed=0)
    head, _ = _play(env, prefix)
    snapshot = env.snapshot()
    tree = []
    for branch in (branch_a, branch_b, branch_a):
        env.restore(snapshot)
        tree.append(head + _play(env, branch)[0])
    env.close()
    assert tree[0] == straight[0] and tree[1] == straight[1] and tree[2] == straight[0]
    assert straight[0][-1].endswith("reward 1]") and straight[1][-1].endswith("reward 0]")


class _Replay:
    """A policy that sends fixed actions in order (the escaping test's agent)."""

    id, train_seed, provenance = "replay", None, {"kind": "test"}

    def __init__(self, actions):
        self._actions = list(actions)

    async def act(self, context):
        from harness.policies import Decision

        return Decision(self._actions[context.step])


def test_control_bytes_of_a_command_are_escaped_in_the_observation_and_the_store(
        lite_suite, tmp_path):
    from harness.runner import EpisodeJob, run_episode
    from harness.store import Store

    env = lite_suite.make_env("dedupe-lines")
    env.reset(seed=0)
    raw = env._require().run("printf 'a\\0b\\033[31mc\\r\\x7f\\xc2\\x85'").output
    shown = env.step("printf 'a\\0b\\033[31mc\\r\\x7f\\xc2\\x85 tab\\there'").observation
    env.close()
    assert raw == "a\0b\x1b[31mc\r\x7f\x85"  # the sandbox's own result keeps the raw text
    assert shown == "a\\x00b\\x1b[31mc\\x0d\\x7f\\x85 tab\there\n[exit code 0]\n"
    task = next(spec for spec in lite_suite.tasks() if spec.id == "dedupe-lines")
    job = EpisodeJob(_Replay(["printf 'a\\0b\\033[31mc'", "submit"]), lite_suite, task, 0, 0)
    record, steps = asyncio.run(run_episode(job))
    with Store(tmp_path / "r.db") as store:
        store.begin_run("r", {}, {})
        store.write_episode("r", record, steps)
        stored = store.load_steps("r", record.key)
    assert stored[1].observation == "a\\x00b\\x1b[31mc\n[exit code 0]\n"
