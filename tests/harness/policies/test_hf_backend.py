"""The hf backend: exact log-probabilities, batched generation, seeds, stops, the policy."""

import asyncio
import shutil

import numpy as np
import pytest
import torch

from harness.core import ConfigError
from harness.policies.base import EpisodeContext
from harness.policies.checkpoint import resolve_checkpoint, write_checkpoint_metadata
from harness.policies.hf import ContextOverflowError, HFBackend
from harness.policies.model import Sampling
from harness.policies.backends import make_model_policy
from tasks import get_suite
from tests.harness.policies.llm_support import IMPRINT_OPTIONS, direct_logprobs

MESSAGES = [{"role": "system", "content": "You play a game."},
            {"role": "user", "content": "Current observation: P__G\nAnswer:"}]


@pytest.mark.parametrize("temperature", [0.0, 1.0])
def test_generated_logprobs_equal_a_direct_forward_pass(tiny_model, temperature):
    prompt = tiny_model.encode_chat(MESSAGES)
    (choice,), = tiny_model.generate([(prompt, Sampling(temperature=temperature, seed=11,
                                                         max_tokens=24, logprobs=True))])
    assert len(choice.token_ids) == len(choice.logprobs) > 0
    np.testing.assert_allclose(choice.logprobs, direct_logprobs(tiny_model, prompt,
                                                                choice.token_ids), atol=1e-5)


def test_score_equals_a_direct_forward_pass_in_a_padded_batch(tiny_model):
    rng = np.random.default_rng(0)
    pairs = [(list(rng.integers(0, 256, size=n)), list(rng.integers(0, 259, size=m)))
             for n, m in ((5, 9), (40, 3), (17, 17), (1, 30))]
    scores = tiny_model.score(pairs)
    for (prompt, continuation), score in zip(pairs, scores):
        assert score.shape == (len(continuation),)
        np.testing.assert_allclose(score, direct_logprobs(tiny_model, prompt, continuation),
                                   atol=1e-5)


def test_scoring_needs_a_prompt(tiny_model):
    with pytest.raises(ConfigError, match="non-empty prompt"):
        tiny_model.score([([], [1, 2])])


def test_batched_greedy_decoding_equals_one_at_a_time(tiny_model):
    prompts = [tiny_model.encode_chat([MESSAGES[0], {"role": "user", "content": text}])
               for text in ("short", "a much longer observation " * 4, "mid length one")]
    sampling = Sampling(max_tokens=16, logprobs=True)
    batched = tiny_model.generate([(p, sampling) for p in prompts])
    for prompt, (together,) in zip(prompts, batched):
        (alone,), = tiny_model.generate([(prompt, sampling)])
        assert together.token_ids == alone.token_ids and together.text == alone.text
        np.testing.assert_allclose(together.logprobs, alone.logprobs, atol=1e-5)


def test_seeded_samples_do_not_depend_on_the_batch(tiny_model):
    prompt = tiny_model.encode_chat(MESSAGES)
    other = tiny_model.encode_chat([{"role": "user", "content": "something else entirely"}])
    sampling = Sampling(temperature=1.0, top_p=0.95, seed=5, n=3, max_tokens=12)
    alone = tiny_model.generate([(prompt, sampling)])[0]
    mixed = tiny_model.generate([(other, Sampling(max_tokens=4)), (prompt, sampling)])[1]
    assert [c.token_ids for c in alone] == [c.token_ids for c in mixed]
    assert len({c.token_ids for c in alone}) > 1  # the n choices are different samples
    reseeded = tiny_model.generate([(prompt, Sampling(temperature=1.0, seed=6, n=3,
                                                      max_tokens=12))])[0]
    assert [c.token_ids for c in reseeded] != [c.token_ids for c in alone]


def test_stop_strings_and_length(tiny_model):
    prompt = tiny_model.encode_chat(MESSAGES)
    (free,), = tiny_model.generate([(prompt, Sampling(max_tokens=20))])
    assert free.finish_reason in ("length", "stop")
    stop = free.text[3:5]
    (cut,), = tiny_model.generate([(prompt, Sampling(max_tokens=20, stop=(stop,)))])
    assert cut.finish_reason == "stop" and cut.text == free.text[:free.text.find(stop)]
    assert stop not in cut.text
    (short,), = tiny_model.generate([(prompt, Sampling(max_tokens=3))])
    assert short.finish_reason == "length" and len(short.token_ids) == 3


def test_top_logprobs_are_the_best_tokens(tiny_model):
    prompt = tiny_model.encode_chat(MESSAGES)
    (choice,), = tiny_model.generate([(prompt, Sampling(max_tokens=4, logprobs=True,
                                                         top_logprobs=3))])
    with torch.no_grad():
        logits = tiny_model.model(input_ids=torch.tensor([prompt])).logits[0, -1].double()
    best = torch.topk(torch.log_softmax(logits, -1), 3)
    assert list(choice.top_ids[0]) == best.indices.tolist()
    np.testing.assert_allclose([lp for _, lp in choice.top_logprobs[0]], best.values.numpy(),
                               atol=1e-5)
    assert choice.top_ids[0][0] == choice.token_ids[0]  # greedy picks the best


def test_context_overflow_is_a_clear_error(tiny_model):
    with pytest.raises(ContextOverflowError, match="exceeds the model's context of 4096"):
        tiny_model.check_length(4000, 100)


def test_backend_batches_concurrent_requests(tiny_model):
    backend = HFBackend(tiny_model, max_batch=8, wait_s=0.01)
    conversations = [[{"role": "user", "content": f"observation {i}"}] for i in range(4)]
    sampling = Sampling(max_tokens=6)

    async def together():
        return await asyncio.gather(*(backend.chat(c, sampling) for c in conversations))

    results = asyncio.run(together())
    assert max(backend.queue.batches) > 1
    for conversation, result in zip(conversations, results):
        (alone,), = tiny_model.generate([(tiny_model.encode_chat(conversation), sampling)])
        assert result.choices[0].text == alone.text
        assert result.prompt_tokens == len(tiny_model.encode_chat(conversation))
        assert result.completion_tokens == len(alone.token_ids)


def _context(suite_id="frozenlake@1"):
    suite = get_suite(suite_id)
    task = suite.tasks("test")[0]
    env = suite.make_env(task.id)
    obs, info = env.reset(seed=0)
    return EpisodeContext(suite.id, task, suite.trivial_actions, env,
                          np.random.default_rng(0), obs, info, instructions=suite.instructions)


def test_hf_policy_decision(imprinted_path):
    policy = make_model_policy(f"hf:{imprinted_path}?max_tokens=32&logprobs=1&threads=1&"
                               + IMPRINT_OPTIONS)
    context = _context()
    decision = asyncio.run(policy.act(context))
    model = policy.backend.model
    assert decision.parsed and decision.action in ("Left", "Down", "Right", "Up")
    assert decision.raw_output == f"Action: {decision.action}"
    assert decision.prompt_tokens == len(model.encode_chat(policy.prompt(context)))
    assert decision.completion_tokens == len(decision.logprobs) > 0
    assert decision.latency_s > 0 and decision.retries == 0
    assert decision.messages == policy.prompt(context)  # what the runner stores as the turn
    assert policy.provenance["kind"] == "hf" and policy.provenance["architecture"] == "qwen2"


def test_a_run_stores_the_turns_the_model_was_given(imprinted_path, tmp_path):
    from harness.config import RunConfig
    from harness.records import EpisodeKey
    from harness.runner import run
    from harness.store import load_episodes, load_turns

    spec = f"hf:{imprinted_path}?max_tokens=32&threads=1&" + IMPRINT_OPTIONS
    task_ids = ("4x4-0252", "4x4-0250")
    config = RunConfig(policies=(spec,), suites=("frozenlake@1",), task_ids=task_ids,
                       max_steps=3, db=str(tmp_path / "r.db"))
    policy = make_model_policy(spec)
    summary = run(config, policies=[policy])
    frame = load_episodes(config.db)
    assert sorted(frame.task_id) == sorted(task_ids) and (frame.status == "ok").all()
    model = policy.backend.model
    for row in frame.itertuples():
        turns = load_turns(config.db, summary.run_id,
                           EpisodeKey(row.policy, row.suite, row.task_id, row.eval_seed, 0))
        assert len(turns) == row.n_steps and sum(t.prompt_tokens for t in turns) == \
            row.prompt_tokens
        for turn in turns:  # the stored messages are exactly the prompt the model read
            assert turn.prompt_tokens == len(model.encode_chat(turn.messages))
            assert turn.raw_output.startswith("Action: ") and turn.parsed


def test_hf_policy_trims_the_prompt_to_the_context(imprinted_path):
    policy = make_model_policy(f"hf:{imprinted_path}?max_tokens=32&context=800&history=8"
                               "&threads=1")
    context = _context()
    context.history.extend([(context.observation, "Left")] * 8)
    context.step = 8
    prompt = policy.prompt(context)
    assert policy.backend.count_tokens(prompt) <= 800 - 32
    assert "Your last" not in prompt[1]["content"] or "of 8 steps" in prompt[1]["content"]


def test_checkpoint_policy_carries_its_train_seed(imprinted_path, tmp_path):
    for step in (10, 30, 20):
        target = tmp_path / "run" / f"step-{step}"
        shutil.copytree(imprinted_path, target)
        write_checkpoint_metadata(target, train_seed=4, step=step, algorithm="grpo")
    assert resolve_checkpoint(tmp_path / "run").name == "step-30"
    policy = make_model_policy(f"checkpoint:{tmp_path / 'run'}?max_tokens=32&threads=1&"
                               + IMPRINT_OPTIONS)
    assert policy.train_seed == 4
    assert policy.provenance["checkpoint_meta"]["step"] == 30
    decision = asyncio.run(policy.act(_context()))
    assert decision.parsed
