"""τ-bench env, grader, user simulators and suites over the real data (shared/data/taubench)."""

from __future__ import annotations

import json
import shutil

import pytest

from harness.core import ConfigError, UnknownNameError
from tasks import get_suite
from tasks.base import check_env
from tasks.taubench.audit import ceiling, play, user_simulator_audit
from tasks.taubench.data import TauDataError, data_dir, load_domain
from tasks.taubench.env import parse_action, respond_action, tool_action
from tasks.taubench.data import database_digest
from tasks.taubench.grading import gold_hash, grade
from tasks.taubench.suite import TauAirlineSuite, TauRetailSuite
from tasks.taubench.users import STOP, ScriptedUser, first_person, parse_user_spec


@pytest.fixture(scope="module")
def retail() -> TauRetailSuite:
    return TauRetailSuite(user="scripted")


@pytest.fixture(scope="module")
def airline() -> TauAirlineSuite:
    return TauAirlineSuite(user="scripted")


def test_registered_with_task_counts_and_comparability():
    suite = get_suite("taubench-retail@1")
    assert (len(suite.tasks("test")), len(suite.tasks("train")), len(suite.tasks("dev"))) == (
        115, 500, 20)
    assert len(get_suite("taubench-airline").tasks("test")) == 50
    assert "upstream" in suite.comparability.summary()
    wiki = (data_dir() / "retail" / "wiki.md").read_text().strip()
    assert suite.instructions.startswith(wiki) and '"name": "respond"' in suite.instructions


@pytest.mark.parametrize("task_id", ["retail-test-0", "retail-test-7"])
def test_check_env_retail(retail, task_id):
    check_env(retail.make_env(task_id), seed=0, n_steps=5)


def test_check_env_airline(airline):
    check_env(airline.make_env("airline-test-3"), seed=0, n_steps=5)


@pytest.mark.parametrize("index", range(4))
def test_gold_agent_wins_and_end_at_once_loses_on_write_tasks(retail, airline, index):
    for suite, domain in ((retail, "retail"), (airline, "airline")):
        task_id = f"{domain}-test-{index}"
        info, _ = play(suite, task_id)
        assert info["won"] and info["r_actions"], (task_id, info)
        ended, _ = play(suite, task_id, action=suite.trivial_actions["end-at-once"])
        assert ended["score"] == (0.0 if suite.task(task_id).task_type.startswith("write")
                                  else 1.0 if "outputs" not in suite.task(task_id).task_type
                                  else 0.0)


def test_end_at_once_scores_one_on_a_read_only_task_without_outputs(airline):
    read_only = [s.id for s in airline.tasks("test") if s.task_type == "read-only"]
    assert read_only
    info, _ = play(airline, read_only[0], action=airline.trivial_actions["end-at-once"])
    assert info["won"] and info["score"] == 1.0


def test_scripted_user_is_deterministic_per_seed(retail):
    first = play(retail, "retail-test-5", seed=3)
    second = play(retail, "retail-test-5", seed=3)
    assert first == second
    openings = {play(retail, "retail-test-5", seed=s)[1][0] for s in range(6)}
    assert len(openings) > 1  # phrasing varies with the seed


def _trajectory(suite, task_id: str, seed: int) -> list[tuple]:
    """Every step of the gold agent's episode: action, observation, reward, end flags, info."""
    env = suite.make_env(task_id)
    observation, info = env.reset(seed=seed)
    steps = [("reset", observation, json.dumps(info, sort_keys=True, default=repr))]
    for _ in range(env.max_steps):
        action = env.oracle_action()
        result = env.step(action)
        steps.append((action, result.observation, result.reward, result.terminated,
                       result.truncated, json.dumps(result.info, sort_keys=True, default=repr)))
        if result.terminated or result.truncated:
            break
    return steps


@pytest.mark.parametrize("suite_class", [TauRetailSuite, TauAirlineSuite],
                         ids=["retail", "airline"])
def test_scripted_user_plays_every_test_task_identically_twice(suite_class):
    """Two suites, each playing every test task with the gold agent and the scripted user:
    the two trajectories of each task are equal, step by step."""
    first, second = suite_class(user="scripted"), suite_class(user="scripted")
    tasks = [spec.id for spec in first.tasks("test")]
    assert len(tasks) == {TauRetailSuite: 115, TauAirlineSuite: 50}[suite_class]
    steps = 0
    for index, task_id in enumerate(tasks):
        one = _trajectory(first, task_id, seed=index)
        two = _trajectory(second, task_id, seed=index)
        assert len(one) >= 2 and one == two, task_id
        steps += len(one) - 1
    assert steps >= 3 * len(tasks)  # conversations, not one-step episodes


def test_scripted_user_rules_by_hand(retail):
    record = retail.record("retail-test-0")
    user = ScriptedUser(frozenset({"exchange_delivered_order_items"}))
    opening = user.reset(record, {"name": {"first_name": "Yusuf", "last_name": "Rossi"},
                                  "address": {"zip": "19122"}, "email": "y@x.com"}, seed=0)
    assert "I am Yusuf Rossi in 19122" in opening
    assert "19122" in user.reply("Could you tell me your name and zip code?")
    assert "#W2378156" in user.reply("What is the order id?")
    assert user.reply("I will cancel order #W0000000. Do you confirm?").startswith("No")
    yes = user.reply('Exchange on order #W2378156 items ["1151293680", "4983901480"] '
                     "-- do you confirm?")
    assert yes.startswith("Yes")
    assert user.reply("Is there anything else I can help you with?") == STOP
    assert first_person("You want your refund.") == "I want my refund."


def test_grade_outputs_lowercased_and_commas_removed(retail):
    domain = retail.domain
    task = next(t for t in domain.tasks if t.outputs and t.split == "test")
    database = domain.fresh_database()
    from tasks.taubench.grading import replay
    database = replay(domain, task)
    said = [f"The answer is {o.upper()}" for o in task.outputs]
    assert grade(domain, task, database, said).reward == 1.0
    assert grade(domain, task, database, []).reward == 0.0
    # a comma inside the agent's message is removed before matching ("1,000" finds "1000")
    assert grade(domain, task, database, [o[:1] + "," + o[1:] for o in task.outputs]
                 ).reward == 1.0
    assert grade(domain, task, domain.fresh_database(), said).r_actions is (
        not any(a.name in retail.make_env(task.id).tools.write_tools for a in task.actions))


def test_actions_parse_and_invalid_ones_change_nothing(retail):
    assert parse_action(tool_action("think", {"thought": "x"})) == ("think", {"thought": "x"})
    assert parse_action("```json\n" + respond_action("hi") + "\n```") == (
        "respond", {"content": "hi"})
    assert isinstance(parse_action("hello"), str)
    env = retail.make_env("retail-test-0")
    env.reset(seed=0)
    before = env.snapshot()[0]
    result = env.step(tool_action("no_such_tool", {}))
    assert result.info["invalid"] and env.snapshot()[0] == before


def test_user_spec_errors_are_one_line():
    with pytest.raises(UnknownNameError, match="did you mean 'scripted'"):
        parse_user_spec("scriptd")
    with pytest.raises(ConfigError, match="openai:MODEL@URL"):
        parse_user_spec("openai:qwen")
    spec = parse_user_spec("openai:qwen@http://127.0.0.1:8000/v1")
    assert (spec.model, spec.base_url) == ("qwen", "http://127.0.0.1:8000/v1")


def test_corrupt_data_file_is_one_clear_error(tmp_path):
    shutil.copytree(data_dir(), tmp_path / "taubench")
    target = tmp_path / "taubench" / "retail" / "users.json"
    target.chmod(0o644)
    target.write_text("{ not json")
    with pytest.raises(TauDataError, match=r"malformed JSON in .*users\.json"):
        load_domain("retail", str(tmp_path / "taubench"))


@pytest.mark.slow
def test_gold_replay_165_and_ceilings_and_user_audit():
    retail, airline = TauRetailSuite(user="scripted"), TauAirlineSuite(user="scripted")
    for suite, n in ((retail, 115), (airline, 50)):
        audit = user_simulator_audit(suite)
        assert audit.episodes == n
        assert audit.user_failures == 0, audit.failed_tasks  # gold replay n/n
        assert audit.high < 0.08  # Wilson upper bound of 0/50 is 0.071
        end_at_once = ceiling(suite, "end-at-once")
        # exactly the tasks whose gold leaves the database as it was and that need no output
        # (read-only tasks, and write tasks whose gold writes all fail: retail-test-12, -106)
        fresh = database_digest(suite.domain.fresh_database())
        unchanged = [s for s in suite.tasks("test") if not suite.record(s.id).outputs
                     and gold_hash(suite.domain, suite.record(s.id)) == fresh]
        assert len(unchanged) >= len([s for s in suite.tasks("test")
                                      if s.task_type == "read-only"])
        assert end_at_once == pytest.approx(len(unchanged) / n)
