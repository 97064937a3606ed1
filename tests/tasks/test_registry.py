"""The suite registry and the Env contract, parametrised over every registered suite."""

import itertools

import pytest

from harness.core import UnknownNameError
from tasks import check_env, get_suite, resolve_suite_id, suite_ids
import ast
from pathlib import Path

from tasks.base import (ENV_CAPABILITIES, SPLITS, SUITE_CAPABILITIES, EnvCheckError, StepResult,
                        Suite, SuiteBase, TaskSpec, check_suite)


MAX_CASES_PER_SUITE = 12
"""Suites with many task types (ScienceWorld has 30, each load takes seconds) are checked on
a spread of them: every split first, then further task types round-robin."""


def _one_task_per_type(suite_id):
    suite = get_suite(suite_id)
    chosen = {}
    for split in SPLITS:
        for task in suite.tasks(split):
            chosen.setdefault((split, task.task_type), task)
    by_split = [[t for (s, _), t in chosen.items() if s == split] for split in SPLITS]
    spread = [t for row in itertools.zip_longest(*by_split) for t in row if t is not None]
    return [(suite_id, task.id) for task in spread[:MAX_CASES_PER_SUITE]]


CASES = [case for suite_id in suite_ids() for case in _one_task_per_type(suite_id)]


def test_registry_has_the_embedded_suites():
    assert {"frozenlake@1", "frozenlake-slippery@1", "sokoban@1", "minesweeper@1"} <= set(
        suite_ids())


@pytest.mark.parametrize("suite_id,task_id", CASES, ids=[f"{s}/{t}" for s, t in CASES])
def test_check_env_passes_for_every_suite_split_and_task_type(suite_id, task_id):
    env = get_suite(suite_id).make_env(task_id)
    for seed in (0, 1):
        check_env(env, seed=seed)


@pytest.mark.parametrize("suite_id", suite_ids())
def test_suite_shape(suite_id):
    suite = get_suite(suite_id)
    check_suite(suite)  # its declared capabilities have their types
    assert suite.id == suite_id
    assert suite.description
    assert suite.trivial_actions, "every embedded suite declares its trivial actions"
    ids = [t.id for t in suite.tasks()]
    assert len(ids) == len(set(ids))
    assert set(suite.published_splits) <= set(SPLITS)
    for split in SPLITS:
        assert bool(suite.tasks(split)) == (split in suite.published_splits), \
            f"{suite_id}: {split} tasks {len(suite.tasks(split))}, published {suite.published_splits}"
    split_ids = [set(t.id for t in suite.tasks(split)) for split in SPLITS]
    assert not (split_ids[0] & split_ids[1] or split_ids[0] & split_ids[2]
                or split_ids[1] & split_ids[2])


def test_unknown_suite_suggests_the_right_name():
    with pytest.raises(UnknownNameError, match="did you mean 'frozenlake'"):
        get_suite("frozenlak")
    with pytest.raises(UnknownNameError, match="frozenlake@1"):
        get_suite("frozenlake@7")
    with pytest.raises(UnknownNameError, match="unknown split"):
        get_suite("frozenlake").tasks("validation")
    with pytest.raises(UnknownNameError, match="task of frozenlake@1"):
        get_suite("frozenlake").task("no-such-task")


def test_versions_resolve_to_latest():
    assert resolve_suite_id("sokoban") == "sokoban@1"
    assert resolve_suite_id("sokoban@1") == "sokoban@1"


class _BrokenEnv:
    """Violates the contract: not deterministic and never truncates."""

    max_steps = 3

    def __init__(self):
        self.calls = 0

    def reset(self, *, seed):
        self.calls += 1
        return f"obs {self.calls}", {"won": False, "score": 0.0, "invalid": False}

    def step(self, action):
        return StepResult("x", 0.0, False, False, {"won": False, "score": 0, "invalid": False})


def test_check_env_catches_contract_violations():
    with pytest.raises(EnvCheckError) as error:
        check_env(_BrokenEnv())
    message = str(error.value)
    assert "not deterministic" in message
    assert "not flagged invalid" in message
    assert "truncated=False at step 3" in message


def test_suite_base_rejects_duplicate_ids():
    class Dupes(SuiteBase):
        name, version = "dupes", 1

    spec = TaskSpec("a", "test", "t")
    with pytest.raises(ValueError, match="duplicate"):
        Dupes([spec, spec])


class _BadSuite(SuiteBase):
    name, version, description = "bad", 1, "declares capabilities of the wrong types"
    trivial_actions = {"x": "x"}
    multiline_actions = "yes"
    exploit_policies = ["not", "a", "mapping"]
    published_splits = ("test", "holdout")

    def __init__(self):
        super().__init__([TaskSpec("t", "test", "a")])


def test_check_suite_names_every_capability_of_the_wrong_type():
    with pytest.raises(EnvCheckError) as raised:
        check_suite(_BadSuite())
    message = str(raised.value)
    assert "multiline_actions must be bool, got str" in message
    assert "exploit_policies must be Mapping or NoneType, got list" in message
    assert "unknown splits ['holdout']" in message


def test_check_env_checks_the_declared_env_flags():
    env = get_suite("frozenlake@1").make_env(get_suite("frozenlake@1").tasks("test")[0].id)
    env.free_form_actions = "sometimes"
    with pytest.raises(EnvCheckError, match="free_form_actions must be bool"):
        check_env(env)


ROOT = Path(__file__).resolve().parents[2]
DECLARED = set(SUITE_CAPABILITIES) | set(ENV_CAPABILITIES) | set(Suite.__annotations__)


def test_the_engine_reads_no_undeclared_suite_or_env_attribute():
    """No ``getattr(suite_or_env, "name", ...)`` under harness/ names an attribute that
    tasks/base.py does not declare (the declared ones go through suite_capability)."""
    found = []
    for path in sorted((ROOT / "harness").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if not (isinstance(node, ast.Call) and getattr(node.func, "id", "") == "getattr"
                    and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant)):
                continue
            target = ast.unparse(node.args[0])
            if ("suite" in target or "env" in target) and node.args[1].value not in DECLARED:
                found.append(f"{path.relative_to(ROOT)}:{node.lineno} {ast.unparse(node)}")
    assert found == []
