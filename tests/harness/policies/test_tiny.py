"""Tiny local models: HF layout, size, determinism, byte-level tokenizer and chat template."""

import json

import pytest
import torch
import transformers

from harness.core import ConfigError
from harness.policies.tiny import (CHAT_TEMPLATE, SPECIAL_TOKENS, TinyConfig, byte_tokenizer,
                                   count_parameters, make_tiny_model)


def test_saved_in_hugging_face_layout(tiny_path):
    names = {p.name for p in tiny_path.iterdir()}
    assert {"config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json",
            "harness_tiny.json"} <= names
    assert json.loads((tiny_path / "config.json").read_text())["model_type"] == "qwen2"
    model = transformers.AutoModelForCausalLM.from_pretrained(tiny_path, local_files_only=True)
    assert 1_000_000 <= count_parameters(model) <= 5_000_000


def test_tokenizer_is_byte_level_with_chat_template(tiny_path):
    tokenizer = transformers.AutoTokenizer.from_pretrained(tiny_path, local_files_only=True)
    assert tokenizer("Left [2 3]\x00", add_special_tokens=False).input_ids == [
        76, 101, 102, 116, 32, 91, 50, 32, 51, 93, 0]
    assert tokenizer.convert_tokens_to_ids(list(SPECIAL_TOKENS)) == [256, 257, 258]
    assert tokenizer.eos_token == "<|im_end|>" and tokenizer.pad_token == "<|endoftext|>"
    text = tokenizer.apply_chat_template([{"role": "system", "content": "rules"},
                                          {"role": "user", "content": "obs"}],
                                         tokenize=False, add_generation_prompt=True)
    assert text == ("<|im_start|>system\nrules<|im_end|>\n<|im_start|>user\nobs<|im_end|>\n"
                    "<|im_start|>assistant\n")
    assert tokenizer.decode([104, 105, 258], skip_special_tokens=True) == "hi"


def test_fresh_tokenizer_matches_the_saved_one(tiny_path):
    fresh = byte_tokenizer()
    assert fresh.chat_template == CHAT_TEMPLATE and len(fresh) == 259
    assert fresh("héllo").input_ids == list("héllo".encode())


def test_same_seed_same_weights_other_seed_other_weights(tmp_path):
    small = TinyConfig(hidden=32, layers=1, heads=2, kv_heads=1, intermediate=64, context=128)
    paths = [make_tiny_model(tmp_path / name, small, seed=seed)
             for name, seed in (("a", 7), ("b", 7), ("c", 8))]
    weights = [transformers.AutoModelForCausalLM.from_pretrained(p).state_dict() for p in paths]
    assert all(torch.equal(weights[0][k], weights[1][k]) for k in weights[0])
    assert not all(torch.equal(weights[0][k], weights[2][k]) for k in weights[0])
    assert (paths[0] / "model.safetensors").read_bytes() == \
        (paths[1] / "model.safetensors").read_bytes()


def test_gpt2_architecture(tmp_path):
    path = make_tiny_model(tmp_path / "gpt2", TinyConfig(arch="gpt2"), seed=0)
    model = transformers.AutoModelForCausalLM.from_pretrained(path)
    assert model.config.model_type == "gpt2"
    assert 1_000_000 <= count_parameters(model) <= 5_000_000


def test_bad_configs():
    with pytest.raises(ConfigError, match="qwen2 or gpt2"):
        TinyConfig(arch="llama")
    with pytest.raises(ConfigError, match="divisible"):
        TinyConfig(hidden=100, heads=3)


def test_imprinted_model_answers_with_actions(imprinted_path):
    """The fixture the end-to-end tests rely on: its greedy replies parse as moves."""
    from harness.policies.hf import LocalModel
    from harness.policies.model import Sampling
    from tests.harness.policies.llm_support import IMPRINT_SCAFFOLD, frozenlake_prompts

    model = LocalModel(imprinted_path, threads=1)
    record = json.loads((imprinted_path / "harness_tiny.json").read_text())
    assert record["imprinted"][0]["final_loss"] < 0.2
    prompts = frozenlake_prompts(2, IMPRINT_SCAFFOLD)
    outputs = model.generate([(model.encode_chat(m), Sampling(max_tokens=32)) for m, _ in prompts])
    parsed = [IMPRINT_SCAFFOLD.parse(choices[0].text) for choices in outputs]
    assert all(p.ok and p.action in ("Left", "Down", "Right", "Up") for p in parsed)
