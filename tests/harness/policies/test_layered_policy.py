"""Policies with harness layers: the ``?layers=`` spec, the wrapper, model policies, and the
per-step log the runner stores."""

import asyncio

import numpy as np
import pytest
from hypothesis import given, strategies as st

from harness.config import make_run_config
from harness.core import ConfigError, UnknownNameError
from harness.episodes import rng_identity
from harness.policies import make_policy
from harness.policies.base import EpisodeContext
from harness.policies.layered import LayeredPolicy, layered_spec, split_layered_spec
from harness.policies.layers import contract_text, layer_names
from harness.policies.model import ChatResult, Completion, ModelPolicy
from harness.policies.scaffold import make_scaffold
from harness.policies.specs import BACKEND_OPTIONS, ModelOptions
from harness.runner import run
from harness.store import Store
from tasks.base import TaskSpec


def _context(info=None, **fields):
    return EpisodeContext(suite_id="frozenlake@1", task=TaskSpec("4x4-0001", "test", "4x4"),
                          trivial_actions={}, env=None, rng=np.random.default_rng(0),
                          observation="P___", info=info or {}, **fields)


def test_spec_options_split_off_for_scripted_and_model_policies():
    scripted = split_layered_spec("noop:empty?layers=skills,repair&stream=2", BACKEND_OPTIONS)
    assert scripted.inner == "noop:empty" and scripted.options.layers == ("repair", "skills")
    assert scripted.options.stream == 2 and scripted.given == {"layers", "stream"}
    model = split_layered_spec("hf:m?temperature=0.5&layers=contract&stop=a&stop=b",
                               BACKEND_OPTIONS)
    assert model.inner == "hf:m?temperature=0.5&stop=a&stop=b"
    assert split_layered_spec("hf:m?temperature=0.5", BACKEND_OPTIONS) is None
    assert split_layered_spec("random", BACKEND_OPTIONS) is None


@pytest.mark.parametrize("spec, error, message", [
    ("oracle?layers=repiar", UnknownNameError, "did you mean 'repair'"),
    ("oracle?layer=repair", UnknownNameError, "option of oracle 'layer'; did you mean 'layers'"),
    ("hf:m?layers=repair&temprature=0", UnknownNameError, "did you mean 'temperature'"),
    ("oracle?layers=repair&layers=skills", ConfigError, "given twice"),
    ("oracle?layers=repair&stall_patience=x", ConfigError, "not a valid int"),
    ("oracle?layers=compaction&compact_budget=0", ConfigError, "compact_budget must be >= 1"),
])
def test_bad_harness_options_are_one_clear_error(spec, error, message):
    with pytest.raises(error, match=message):
        make_policy(spec)


@given(st.lists(st.sampled_from(sorted(layer_names())), unique=True),
       st.integers(0, 3), st.sampled_from(["random", "noop:empty", "hf:a/b?temperature=0"]))
def test_canonical_specs_round_trip(layers, stream, inner):
    spec = layered_spec(inner, layers, stream=stream or None)
    parsed = split_layered_spec(spec, BACKEND_OPTIONS)
    if not layers and not stream:
        assert spec == inner and parsed is None
        return
    assert parsed.inner == inner and set(parsed.options.layers) == set(layers)
    assert list(parsed.options.layers) == [n for n in layer_names() if n in layers]
    assert parsed.options.stream == stream


def test_layers_keep_the_sampling_stream_and_the_provenance_records_them():
    plain, layered = make_policy("random"), make_policy("random?layers=repair,skills")
    assert isinstance(layered, LayeredPolicy) and layered.id == "random?layers=repair,skills"
    assert rng_identity(layered) == rng_identity(plain) == "random"
    assert rng_identity(make_policy("random?stream=1")) == "random#stream1"
    ids = [layer["id"] for layer in layered.provenance["layers"]]
    assert ids == ["repair@1", "skills@1"] and layered.provenance["spec"] == layered.id


def test_each_turn_logs_every_layer_and_scripted_decisions_are_repaired():
    policy = make_policy("noop?layers=repair,contract,regulation")
    context = _context({"admissible_actions": ["Left", "Up"]}, step_limit=2)
    context.trivial_actions = {"empty": "left!"}
    decision = asyncio.run(policy.act(context))
    assert decision.action == "Left" and decision.raw_output == "left!"
    log = decision.layers
    assert list(log) == ["repair", "contract", "regulation"]
    assert log["repair"]["fired"] and "normalised" in log["repair"]["detail"]
    assert log["contract"] == {"fired": True, "tokens": log["contract"]["tokens"]}
    assert log["contract"]["tokens"] > 0 and log["regulation"]["detail"] == "step budget"


class _Backend:
    """A `ChatBackend` that replies from a list and counts one token per word."""

    context_tokens = None

    def __init__(self, *replies):
        self.replies, self.sent = list(replies), []

    async def chat(self, messages, sampling):
        self.sent.append(messages)
        text = self.replies.pop(0)
        return ChatResult((Completion(text),), prompt_tokens=self.count_tokens(messages),
                          completion_tokens=len(text.split()))

    def count_tokens(self, messages):
        return sum(len(m["content"].split()) for m in messages)

    def describe(self):
        return {"model": "list"}


def _model(backend, scaffold="think@1"):
    inner = ModelPolicy("chat:list", backend, ModelOptions(),
                        scaffold=make_scaffold(scaffold, history=2), scaffold_pinned=True)
    return LayeredPolicy("chat:list?layers=repair,contract,regulation", inner,
                         split_layered_spec("x?layers=repair,contract,regulation",
                                            {}).options)


def test_a_model_policy_sees_the_guidance_and_is_asked_again_with_the_reason():
    backend = _Backend("<action>Jump</action>", "<think>ok</think><action>Up</action>")
    policy = _model(backend)
    context = _context({"admissible_actions": ["Left", "Up"]}, step_limit=2)
    decision = asyncio.run(policy.act(context))
    system, user = backend.sent[0][0]["content"], backend.sent[0][1]["content"]
    assert "Action contract:" in system and "at most 200 characters" in system
    assert "Note: 2 steps left of 2" in user
    retry = backend.sent[1][1]["content"]
    assert "'Jump' was rejected" in retry and decision.action == "Up"
    first = backend.count_tokens(backend.sent[0]) + 1  # each reply is one "word"
    second = backend.count_tokens(backend.sent[1]) + 1
    assert decision.layers["repair"]["tokens"] == second
    assert decision.prompt_tokens + decision.completion_tokens == first + second
    contract = contract_text(context, 200)  # counted by the backend: one token per word
    assert contract in system and decision.layers["contract"]["tokens"] == len(contract.split())
    assert decision.messages == backend.sent[1]


def test_bare_and_terminal_scaffolds_show_the_notes_after_the_observation():
    for scaffold, reply in (("bare@2", "Up"), ("terminal@1", "```bash\nls\n```")):
        backend = _Backend(reply)
        asyncio.run(_model(backend, scaffold).act(_context(step_limit=1)))
        assert backend.sent[0][-1]["content"].startswith("P___")
        assert "Note: 1 step left of 1: finish the task." in backend.sent[0][-1]["content"]
    plain = make_scaffold("think@1").messages(_context())
    assert "Note:" not in plain[1]["content"]


def test_the_runner_stores_each_steps_layer_log_with_the_episode(tmp_path):
    config = make_run_config({"policies": ["oracle?layers=contract,regulation", "oracle"],
                              "suites": ["frozenlake"], "n_tasks": 2, "max_steps": 4,
                              "db": str(tmp_path / "h.db")})
    summary = run(config)
    with Store(config.db, readonly=True) as store:
        logs = store.step_info("layers", run_id=summary.run_id)
        frame = store.load_episodes(run_id=summary.run_id)
        provenance = store.query("SELECT DISTINCT policy_provenance FROM episodes WHERE "
                                 "policy_id=?", ("oracle?layers=contract,regulation",))
    layered = frame[frame.policy != "oracle"]
    assert set(logs.policy) == {"oracle?layers=contract,regulation"}
    assert len(logs) == layered.n_steps.sum() and list(logs.t[:2]) == [0, 1]
    assert all(v["contract"]["fired"] and v["contract"]["tokens"] > 0 for v in logs.value)
    last = logs.groupby(["task_id"]).tail(1)
    assert all(v["regulation"]["detail"] == "step budget" for v in last.value
               if v["regulation"]["fired"])
    assert '"regulation@1"' in provenance[0][0]
    assert (frame.groupby("task_id").success.nunique() == 1).all()  # oracle unchanged
