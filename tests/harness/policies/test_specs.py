"""Model policy specs, registration, and the missing-dependency errors of each backend."""

import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.core import ConfigError, HarnessError, MissingDependencyError, UnknownNameError
from harness.policies import make_policy, policy_names
from harness.policies import register_model_backends
from harness.policies.backends import make_model_policy
from harness.policies.specs import BACKEND_OPTIONS, ModelOptions, parse_model_spec


def test_openai_spec_with_url_and_options():
    spec = parse_model_spec("openai:Qwen/Qwen2.5-7B@http://127.0.0.1:8000/v1/?temperature=0.7"
                            "&max_tokens=64&stop=%3C%2Faction%3E&stop=END&seed=3&logprobs=true")
    assert (spec.backend, spec.target, spec.url) == ("openai", "Qwen/Qwen2.5-7B",
                                                     "http://127.0.0.1:8000/v1")
    options = spec.options
    assert (options.temperature, options.max_tokens, options.seed, options.logprobs) == (
        0.7, 64, 3, True)
    assert options.stop == ("</action>", "END")


def test_openai_spec_without_url_and_model_with_colon():
    spec = parse_model_spec("openai:ft:gpt-4o-mini:org::abc")
    assert spec.target == "ft:gpt-4o-mini:org::abc" and spec.url is None
    assert spec.options == ModelOptions()


def test_local_specs_keep_their_path():
    spec = parse_model_spec("hf:/models/tiny@2?max_batch=4&threads=1&context=none")
    assert (spec.backend, spec.target, spec.options.max_batch, spec.options.threads) == (
        "hf", "/models/tiny@2", 4, 1)
    assert spec.options.context is None
    assert parse_model_spec("checkpoint:results/ckpt").target == "results/ckpt"
    assert parse_model_spec("vllm:/m?gpu_memory_utilization=0.5").options \
        .gpu_memory_utilization == 0.5


@pytest.mark.parametrize("spec, error, match", [
    ("hf:/m?temprature=0", UnknownNameError, "did you mean 'temperature'"),
    ("hf:/m?concurrency=4", UnknownNameError, "option of the hf backend"),
    ("openai:m@http://x/v1?max_batch=4", UnknownNameError, "option of the openai backend"),
    ("hf:/m?max_tokens=lots", ConfigError, "not a valid int"),
    ("hf:/m?max_tokens=0", ConfigError, "max_tokens must be >= 1"),
    ("hf:/m?logprobs=maybe", ConfigError, "not a valid bool"),
    ("hf:/m?temperature=-1", ConfigError, "temperature"),
    ("hf:/m?context=64&max_tokens=64", ConfigError, "must exceed max_tokens"),
    ("hf:/m?seed=1&seed=2", ConfigError, "given 2 times"),
    ("hf:/m?format=json", ConfigError, "format must be think or react"),
    ("openai:m?http=curl", ConfigError, "http must be"),
    ("hf:", ConfigError, "needs a path"),
    ("openai:@http://x/v1", ConfigError, "needs a model name"),
    ("hff:/m", UnknownNameError, "did you mean 'hf'"),
])
def test_bad_specs_are_one_line_errors(spec, error, match):
    with pytest.raises(error, match=match) as caught:
        parse_model_spec(spec)
    assert "\n" not in str(caught.value)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=60))
def test_parsing_arbitrary_specs_raises_only_harness_errors(spec):
    try:
        parse_model_spec(spec)
    except HarnessError:
        pass


def test_every_backend_option_is_a_field():
    names = set(ModelOptions.__dataclass_fields__)
    for options in BACKEND_OPTIONS.values():
        assert set(options) <= names


def test_registration_makes_specs_buildable(monkeypatch, tmp_path):
    register_model_backends()
    names = policy_names()
    assert {"openai", "hf", "vllm", "checkpoint"} <= set(names)
    with pytest.raises(ConfigError, match="not a model directory"):
        make_policy(f"hf:{tmp_path}")
    with pytest.raises(ConfigError, match="not a harness checkpoint"):
        make_policy(f"checkpoint:{tmp_path}")


def test_openai_policy_needs_no_torch(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)
    monkeypatch.setitem(sys.modules, "transformers", None)
    policy = make_model_policy("openai:m@http://127.0.0.1:9/v1")
    assert policy.id == "openai:m@http://127.0.0.1:9/v1"
    assert policy.provenance["base_url"] == "http://127.0.0.1:9/v1"


@pytest.mark.parametrize("module, spec, extra", [
    ("openai", "openai:m@http://127.0.0.1:9/v1", "llm"),
    ("torch", "hf:TINY", "train"),
    ("transformers", "checkpoint:/nonexistent", "train"),
    ("vllm", "vllm:/nonexistent", "gpu"),
])
def test_missing_packages_name_the_extra(monkeypatch, tmp_path, module, spec, extra):
    (tmp_path / "config.json").write_text("{}")  # looks like a model directory
    monkeypatch.delenv("HARNESS_VLLM_PYTHON", raising=False)  # vLLM: this interpreter's
    spec = spec.replace("TINY", str(tmp_path))
    monkeypatch.setitem(sys.modules, module, None)  # import raises ImportError
    if spec.startswith("checkpoint"):
        from harness.policies.checkpoint import write_checkpoint_metadata

        write_checkpoint_metadata(tmp_path, train_seed=1, step=2)
        spec = f"checkpoint:{tmp_path}"
    with pytest.raises(MissingDependencyError, match=rf"agent-rl-harness\[{extra}\]"):
        make_model_policy(spec)
