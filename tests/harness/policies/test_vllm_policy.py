"""The ``vllm:`` policy on vLLM's CPU build: greedy equal to the ``hf:`` backend's greedy
token for token (float32), runs through the runner equal to ``hf:`` runs, sampled runs
repeated by seed, a device asked for that the build does not run on refused."""

from __future__ import annotations

import numpy as np
import pytest

from harness.core import ConfigError
from harness.policies.model import Sampling
from harness.policies.specs import ModelOptions
from tests.harness.policies.llm_support import IMPRINT_OPTIONS, IMPRINT_SCAFFOLD, \
    frozenlake_prompts
from tests.harness.policies.vllm_support import TOLERANCE, VLLM_MARKS, make_random_model, \
    make_vllm_model

pytestmark = VLLM_MARKS


@pytest.fixture(scope="module")
def model_path(tmp_path_factory):
    return make_vllm_model(tmp_path_factory.mktemp("vllm-model") / "tiny")


@pytest.fixture(scope="module")
def random_path(tmp_path_factory):
    return make_random_model(tmp_path_factory.mktemp("vllm-random") / "tiny")


def test_greedy_equals_hf_greedy_token_for_token_on_50_prompts(random_path):
    from harness.policies.hf import LocalModel
    from harness.policies.vllm_backend import VLLMEngine

    engine = VLLMEngine(str(random_path), ModelOptions())
    try:
        _compare_greedy(engine, LocalModel(random_path, threads=1))
    finally:
        engine.close()


def _compare_greedy(engine, hf):
    chats = [messages for messages, _ in frozenlake_prompts(3, IMPRINT_SCAFFOLD)]
    assert [engine.encode_chat(m) for m in chats] == [hf.encode_chat(m) for m in chats]
    rng = np.random.default_rng(0)  # 50 prompts of 4-39 random byte tokens
    prompts = [[int(t) for t in rng.integers(0, 256, size=int(rng.integers(4, 40)))]
               for _ in range(50)]
    sampling = Sampling(temperature=0.0, max_tokens=24, logprobs=True)
    ours = engine.generate([(p, sampling) for p in prompts])
    theirs = hf.generate([(p, sampling) for p in prompts])
    assert len(ours) == len(theirs) == 50
    assert [c[0].token_ids for c in ours] == [c[0].token_ids for c in theirs]
    assert len({c[0].token_ids for c in ours}) > 40  # the model answers differently per prompt
    worst = max(np.max(np.abs(np.subtract(a[0].logprobs, b[0].logprobs)))
                for a, b in zip(ours, theirs))
    assert worst < TOLERANCE
    targets = [c[0].token_ids for c in ours[:5]]
    scored = engine.score(list(zip(prompts[:5], targets)))
    expected = hf.score(list(zip(prompts[:5], targets)))
    assert max(np.max(np.abs(a - np.asarray(b))) for a, b in zip(scored, expected)) < TOLERANCE
    print(f"greedy: 50 of 50 equal; max |log-prob difference| {worst:.2e}")


def _outputs(db, run_id):
    from harness.records import EpisodeKey
    from harness.store import load_episodes, load_turns

    frame = load_episodes(db)
    frame = frame[frame.run_id == run_id]
    assert len(frame) and (frame.status == "ok").all()
    return {(row.task_id, row.eval_seed): [t.raw_output for t in load_turns(
        db, run_id, EpisodeKey(row.policy, row.suite, row.task_id, row.eval_seed, 0))]
        for row in frame.itertuples()}


def test_runs_equal_hf_greedy_and_sampled_runs_repeat_by_seed(model_path, tmp_path):
    from harness.config import RunConfig
    from harness.policies.backends import make_model_policy
    from harness.runner import run

    db = str(tmp_path / "runs.db")
    options = f"max_tokens=16&{IMPRINT_OPTIONS}"
    outputs = {}
    for name, spec in (("hf", f"hf:{model_path}?{options}&threads=1&temperature=0"),
                       ("vllm", f"vllm:{model_path}?{options}&temperature=0")):
        config = RunConfig(policies=(spec,), suites=("frozenlake@1",), n_tasks=8,
                           eval_seeds=(0, 1), max_steps=4, db=db, run_id=f"greedy-{name}")
        summary = run(config, policies=[make_model_policy(spec)])
        outputs[name] = _outputs(db, summary.run_id)
    assert outputs["vllm"] == outputs["hf"] and len(outputs["hf"]) == 16
    assert any(turn.startswith("Action: ") for turns in outputs["hf"].values() for turn in turns)

    spec = f"vllm:{model_path}?{options}&temperature=1.5"
    policy = make_model_policy(spec)
    sampled = []
    for repeat in range(2):
        config = RunConfig(policies=(spec,), suites=("frozenlake@1",), n_tasks=8,
                           eval_seeds=(0, 1), max_steps=4, db=db, run_id=f"sampled-{repeat}")
        sampled.append(_outputs(db, run(config, policies=[policy]).run_id))
    assert sampled[0] == sampled[1]
    assert sampled[0] != outputs["vllm"]  # sampling did happen
    assert policy.provenance["vllm_device"] == "cpu"


def test_a_device_the_build_does_not_run_on_is_refused(model_path):
    from harness.policies.backends import make_model_policy

    with pytest.raises(ConfigError, match="device=cuda asked for, but the vLLM build"):
        make_model_policy(f"vllm:{model_path}?device=cuda")
