"""`checkpoint:PATH` evaluates a checkpoint with the scaffold and completion budget it was
trained with; an explicit scaffold overrides them with a warning kept in the provenance."""

from __future__ import annotations

import pytest

from harness.policies import make_policy
from harness.policies.checkpoint import write_checkpoint_metadata


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    from harness.policies.tiny import TinyConfig, make_tiny_model

    path = make_tiny_model(tmp_path_factory.mktemp("ckpt"), TinyConfig(
        hidden=16, layers=1, heads=2, kv_heads=1, intermediate=32))
    write_checkpoint_metadata(path, train_seed=3, step=7, scaffold={
        "id": "bare@1", "name": "bare", "version": 1, "history": 2, "max_action_chars": 200,
        "chat_template": "compact"}, decoding={"max_new_tokens": 8, "temperature": 1.0})
    return path


def test_the_stored_scaffold_and_budget_are_used_by_default(checkpoint):
    policy = make_policy(f"checkpoint:{checkpoint}")
    spec = policy.scaffold.spec
    assert (spec.id, spec.history, spec.chat_template) == ("bare@1", 2, "compact")
    assert policy.sampling.max_tokens == 8 and policy.train_seed == 3
    assert policy.provenance["scaffold"]["id"] == "bare@1"
    assert "scaffold_warning" not in policy.provenance


def test_an_explicit_scaffold_overrides_with_a_warning(checkpoint, caplog):
    policy = make_policy(f"checkpoint:{checkpoint}?scaffold=think@1&max_tokens=32")
    assert policy.scaffold.spec.id == "think@1" and policy.sampling.max_tokens == 32
    assert "trained with scaffold" in policy.provenance["scaffold_warning"]
    assert "trained with scaffold" in caplog.text
    history_only = make_policy(f"checkpoint:{checkpoint}?history=0")
    assert history_only.scaffold.spec.id == "bare@1" and history_only.scaffold.spec.history == 0
    assert "scaffold_warning" in history_only.provenance


def test_hf_takes_the_same_scaffold_option(checkpoint):
    policy = make_policy(f"hf:{checkpoint}?scaffold=react@1&history=1")
    assert policy.scaffold.spec.id == "react@1" and policy.scaffold.spec.history == 1


def test_train_seed_option_replaces_or_drops_the_checkpoints_seed(checkpoint):
    assert make_policy(f"checkpoint:{checkpoint}?train_seed=5").train_seed == 5
    assert make_policy(f"checkpoint:{checkpoint}?train_seed=none").train_seed is None
