"""Run configs: TOML and flag values become a validated frozen dataclass."""

import dataclasses
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.config import RunConfig, load_run_config, make_run_config
from harness.core import ConfigError, HarnessError, UnknownNameError


def test_toml_round_trip_and_overrides(tmp_path):
    path = tmp_path / "run.toml"
    path.write_text('[run]\npolicies = ["random", "oracle"]\nsuites = ["sokoban"]\n'
                    'n_tasks = 5\neval_seeds = 3\nsamples = 2\n')
    config = load_run_config(path, {"samples": 4})
    assert config.policies == ("random", "oracle") and config.suites == ("sokoban",)
    assert config.eval_seeds == (0, 1, 2) and config.samples == 4 and config.n_tasks == 5
    top_level = tmp_path / "flat.toml"
    top_level.write_text('policies = ["random"]\nsuites = ["sokoban"]\neval_seeds = [4, 9]\n')
    assert load_run_config(top_level).eval_seeds == (4, 9)


def test_run_id_is_derived_from_what_decides_the_episodes():
    a = RunConfig(policies=("random",), suites=("sokoban",))
    assert a.resolved_run_id() == RunConfig(policies=("random",), suites=("sokoban",),
                                            concurrency=3, db="x.db").resolved_run_id()
    assert a.resolved_run_id() != RunConfig(policies=("random",), suites=("sokoban",),
                                            samples=2).resolved_run_id()
    assert RunConfig(run_id="mine").resolved_run_id() == "mine"


@pytest.mark.parametrize("values,message", [
    ({"samples": -1}, "samples must be >= 1"),
    ({"n_tasks": -3}, "n_tasks must be >= 0"),
    ({"concurrency": 0}, "concurrency must be >= 1"),
    ({"eval_seeds": 0}, "eval_seeds as a count must be >= 1"),
    ({"eval_seeds": [1, 1]}, "duplicates"),
    ({"eval_seeds": [-2]}, "eval seeds must be integers >= 0"),
    ({"samples": 1.5}, "samples must be an integer"),
    ({"max_error_rate": 2}, "max_error_rate must lie in"),
    ({"policies": 3}, "policies must be a list of"),
    ({"task_ids": ["a", 3]}, "task_ids must be a list of non-empty strings"),
    ({"task_ids": ["a", "b", "a"]}, "task_ids lists 'a' more than once"),
    ({"task_ids": "a", "n_tasks": 2}, "task_ids and n_tasks both choose the tasks"),
    ({"task_ids": ["a"], "task_types": ["4x4"]}, "task_ids and task_types both choose"),
    ({"store_turns": "no"}, "store_turns must be true or false"),
    ({"store_turns": 0}, "store_turns must be true or false"),
])
def test_bad_values_are_config_errors(values, message):
    with pytest.raises(ConfigError, match=message):
        make_run_config(values)


def test_unknown_key_suggests_the_right_one():
    with pytest.raises(UnknownNameError, match="did you mean 'samples'"):
        make_run_config({"sample": 2})


def test_malformed_and_missing_files(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text("policies = [random\n")
    with pytest.raises(ConfigError, match="malformed TOML"):
        load_run_config(bad)
    with pytest.raises(ConfigError, match="does not exist"):
        load_run_config(tmp_path / "nope.toml")


_VALUE = st.one_of(st.none(), st.booleans(), st.integers(-5, 5), st.floats(allow_nan=True),
                   st.text(max_size=5), st.lists(st.integers(-2, 3), max_size=3),
                   st.lists(st.text(max_size=4), max_size=3))


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.sampled_from(["policies", "suites", "split", "n_tasks", "eval_seeds",
                                        "samples", "max_steps", "concurrency",
                                        "max_error_rate", "episode_timeout_s", "bogus",
                                        "task_ids", "task_types", "store_turns"]),
                       _VALUE, max_size=4))
def test_any_input_gives_a_config_or_a_harness_error(values):
    try:
        config = make_run_config(values)
    except HarnessError:
        return
    assert isinstance(config, RunConfig)
    assert config.samples >= 1 and config.concurrency >= 1 and config.eval_seeds
    assert all(isinstance(s, int) and s >= 0 for s in config.eval_seeds)
    assert isinstance(config.store_turns, bool)
    assert all(isinstance(i, str) and i for i in config.task_ids)
    assert len(set(config.task_ids)) == len(config.task_ids)
    assert not config.task_ids or (config.n_tasks is None and not config.task_types)


_TASK_ID = st.from_regex(r"[A-Za-z0-9_.-]{1,12}", fullmatch=True)


@settings(max_examples=200, deadline=None)
@given(ids=st.lists(_TASK_ID, min_size=1, max_size=6, unique=True),
       separator=st.sampled_from([",", ", ", " ,"]))
def test_task_ids_come_from_a_list_or_a_comma_separated_string_in_order(ids, separator,
                                                                         tmp_path_factory):
    expected = tuple(ids)
    assert make_run_config({"task_ids": ids}).task_ids == expected
    assert make_run_config({"task_ids": separator.join(ids)}).task_ids == expected
    path = tmp_path_factory.mktemp("toml") / "run.toml"
    path.write_text("[run]\npolicies = [\"random\"]\nsuites = [\"frozenlake\"]\n"
                    f"task_ids = [{', '.join(json.dumps(i) for i in ids)}]\n")
    assert load_run_config(path).task_ids == expected
    assert load_run_config(path, {"task_ids": list(reversed(ids))}).task_ids == \
        expected[::-1]


def test_task_ids_and_store_turns_in_the_run_id():
    plain = RunConfig(policies=("random",), suites=("sokoban",))
    assert "task_ids" not in plain.identity() and "store_turns" not in plain.identity()
    # the run id of a config without task_ids is what it was before the key existed
    before = {k: v for k, v in dataclasses.asdict(plain).items() if k not in (
        "concurrency", "db", "run_id", "max_error_rate", "episode_timeout_s", "store_turns",
        "task_ids")}
    assert plain.identity() == before
    chosen = RunConfig(policies=("random",), suites=("sokoban",), task_ids=("a", "b"))
    assert chosen.identity()["task_ids"] == ("a", "b")
    assert len({plain.resolved_run_id(), chosen.resolved_run_id(), RunConfig(
        policies=("random",), suites=("sokoban",), task_ids=("b", "a")).resolved_run_id()}) == 3
    assert RunConfig(policies=("random",), suites=("sokoban",),
                     store_turns=False).resolved_run_id() == plain.resolved_run_id()
