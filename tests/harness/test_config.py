"""Run configs: TOML and flag values become a validated frozen dataclass."""

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
                                        "max_error_rate", "episode_timeout_s", "bogus"]),
                       _VALUE, max_size=4))
def test_any_input_gives_a_config_or_a_harness_error(values):
    try:
        config = make_run_config(values)
    except HarnessError:
        return
    assert isinstance(config, RunConfig)
    assert config.samples >= 1 and config.concurrency >= 1 and config.eval_seeds
    assert all(isinstance(s, int) and s >= 0 for s in config.eval_seeds)
