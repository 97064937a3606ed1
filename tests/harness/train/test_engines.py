"""Rollout engines: HF sampling log-probs, dedup exactness, LoRA weight sync, vLLM guard."""

from __future__ import annotations

import pytest
import torch

from harness.core import MissingDependencyError
from harness.train.engine import HFEngine
from harness.policies.scaffold import BareScaffold
from harness.train.prompting import Tokenization


@pytest.fixture(scope="module")
def tiny(tmp_path_factory, tiny_shape):
    from harness.policies.tiny import TinyConfig, make_tiny_model
    from transformers import AutoModelForCausalLM, AutoTokenizer

    shape = {k: v for k, v in tiny_shape.items() if k != "chat_template"}
    path = make_tiny_model(tmp_path_factory.mktemp("tiny"), TinyConfig(**shape), seed=1)
    return path, AutoModelForCausalLM.from_pretrained(path), AutoTokenizer.from_pretrained(path)


def prompts(tokenizer, n: int) -> list[list[int]]:
    tok = Tokenization(tokenizer)
    grids = ["P___\n_O__\n__O_\n__OG", "_P__\n_O__\n__O_\n__OG", "__P_\nO___\n_G__\n__O_"]
    return [tok.prompt_ids(BareScaffold().render("Reach the goal; avoid holes.", [],
                                                 grids[i % 3] + "\nActions: Left"))
            for i in range(n)]


def test_behaviour_logprobs_equal_a_direct_forward_pass(tiny):
    _, model, tokenizer = tiny
    tok = Tokenization(tokenizer)
    engine = HFEngine(model, eos_id=tok.eos_id, pad_id=tok.pad_id)
    batch = prompts(tokenizer, 7) + [prompts(tokenizer, 1)[0][:-3]]  # ragged lengths
    for temperature in (1.0, 0.7):
        samples = engine.generate(batch, max_new_tokens=5, temperature=temperature, seed=3)
        for prompt, sample in zip(batch, samples):
            full = torch.tensor([prompt + list(sample.ids)])
            with torch.no_grad():
                logits = model(input_ids=full).logits[0].float() / temperature
            logp = torch.log_softmax(logits, -1)
            direct = [float(logp[len(prompt) - 1 + k, t]) for k, t in enumerate(sample.ids)]
            assert sample.logprobs == pytest.approx(direct, abs=1e-5)
            assert len(sample.ids) == 5 or sample.ids[-1] == tok.eos_id


def test_same_seed_same_samples_and_greedy_is_argmax(tiny):
    _, model, tokenizer = tiny
    tok = Tokenization(tokenizer)
    engine = HFEngine(model, eos_id=tok.eos_id, pad_id=tok.pad_id, batch=4)
    batch = prompts(tokenizer, 9)
    first = engine.generate(batch, max_new_tokens=4, seed=11)
    assert first == engine.generate(batch, max_new_tokens=4, seed=11)
    assert first != engine.generate(batch, max_new_tokens=4, seed=12)
    greedy = engine.generate(batch[:1], max_new_tokens=3, greedy=True)[0]
    ids = list(batch[0])
    for token in greedy.ids:
        with torch.no_grad():
            assert int(model(input_ids=torch.tensor([ids])).logits[0, -1].argmax()) == token
        ids.append(token)


def test_lora_weights_merge_for_sync_and_unmerge_after(tiny):
    import peft
    from transformers import AutoModelForCausalLM

    from harness.train.vllm_engine import merged_weights

    path, _, _ = tiny
    base = AutoModelForCausalLM.from_pretrained(path)
    names = set(base.state_dict())
    model = peft.get_peft_model(AutoModelForCausalLM.from_pretrained(path),
                                peft.LoraConfig(r=2, target_modules="all-linear",
                                                init_lora_weights=False))
    before = {k: v.clone() for k, v in model.state_dict().items()}
    weights = dict(merged_weights(model))
    assert set(weights) == names
    merged = peft.get_peft_model(AutoModelForCausalLM.from_pretrained(path),
                                 peft.LoraConfig(r=2, target_modules="all-linear",
                                                 init_lora_weights=False))
    merged.load_state_dict(before)
    expected = merged.merge_and_unload().state_dict()
    for name, tensor in weights.items():
        torch.testing.assert_close(tensor, expected[name])
    for name, tensor in model.state_dict().items():  # the training model is unchanged
        torch.testing.assert_close(tensor, before[name])


def test_vllm_engine_says_how_to_install_it(monkeypatch, tmp_path):
    """Without vLLM for the interpreter that would run it, one error says how to install it;
    with it (HARNESS_VLLM_PYTHON, as CI sets), a folder that is no model is a config error."""
    from harness.core import ConfigError
    from harness.policies.vllm_client import VLLMUnavailableError, check_vllm
    from harness.train.vllm_engine import VLLMRollout

    try:
        check_vllm()
    except VLLMUnavailableError:
        with pytest.raises(MissingDependencyError, match=r"agent-rl-harness\[gpu\]"):
            VLLMRollout(str(tmp_path), eos_id=0)
    else:
        with pytest.raises(ConfigError, match="not a model directory"):
            VLLMRollout(str(tmp_path), eos_id=0)
    monkeypatch.setenv("HARNESS_VLLM_PYTHON", str(tmp_path / "no-python"))
    with pytest.raises(MissingDependencyError, match="cannot run"):
        VLLMRollout(str(tmp_path), eos_id=0)
