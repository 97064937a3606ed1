"""The model adapters against each other: exact local scoring equals `LocalModel.score`, and
the served adapter (a real `harness serve`) reproduces the local log-probabilities and
greedy generations of the same model."""

import numpy as np
import pytest

from harness.signal_eval.models import chatml, load_language_model, topk_entropy

MESSAGES = [[{"role": "system", "content": "Move to G."},
             {"role": "user", "content": "P__\n_OG\nAnswer with one action."}],
            [{"role": "system", "content": "Push boxes."},
             {"role": "user", "content": "#P X O#"}]]
ACTIONS = ["Left", "No-op"]


def test_local_scores_equal_the_backend_and_entropies_are_exact(local_model):
    scored = local_model.score(MESSAGES, ACTIONS, with_entropy=True)
    inner = local_model.model
    for messages, action, result in zip(MESSAGES, ACTIONS, scored):
        expected = inner.score([(inner.encode_chat(messages), inner.encode(action))])[0]
        np.testing.assert_allclose(result.logprobs, expected, atol=1e-5)
        assert result.entropies.shape == result.logprobs.shape
        vocab = len(inner.tokenizer)
        assert ((result.entropies > 0) & (result.entropies <= np.log(vocab) + 1e-9)).all()
    again = local_model.score(MESSAGES[:1], ACTIONS[:1])
    assert again[0] is scored[0]  # memoised


def test_chatml_is_the_tiny_models_template(local_model):
    tokenizer = local_model.model.tokenizer
    for messages in MESSAGES:
        assert chatml(messages) == tokenizer.apply_chat_template(
            messages, tokenize=False, add_generation_prompt=True)


def test_topk_entropy_by_hand():
    assert topk_entropy({"a": np.log(0.25), "b": np.log(0.25)}) == pytest.approx(np.log(2))
    assert np.isnan(topk_entropy(None))


def test_served_model_matches_the_local_model(served_url, local_model):
    served = load_language_model(f"openai:tiny@{served_url}")
    remote = served.score(MESSAGES, ACTIONS, with_entropy=True)
    local = local_model.score(MESSAGES, ACTIONS)
    for r, l in zip(remote, local):
        np.testing.assert_allclose(r.logprobs, l.logprobs, atol=1e-4)
        # top-20 renormalised entropies, from one next-token request per position
        assert r.entropies.shape == r.logprobs.shape and np.isfinite(r.entropies).all()
        assert (r.entropies <= np.log(20) + 1e-9).all()
    assert served.generate(MESSAGES, max_tokens=6) == local_model.generate(MESSAGES,
                                                                           max_tokens=6)


def test_checkpoint_specs_load_the_same_model(tiny_model_path, tmp_path, local_model):
    import shutil

    from harness.core import ConfigError
    from harness.policies.checkpoint import write_checkpoint_metadata

    step = tmp_path / "run" / "step-3"
    shutil.copytree(tiny_model_path, step)
    write_checkpoint_metadata(step, train_seed=0, step=3)
    model = load_language_model(f"checkpoint:{tmp_path / 'run'}")
    np.testing.assert_allclose(model.score(MESSAGES, ACTIONS)[0].logprobs,
                               local_model.score(MESSAGES, ACTIONS)[0].logprobs, atol=1e-6)
    with pytest.raises(ConfigError, match="not 'vllm'"):
        load_language_model(f"vllm:{tiny_model_path}")
