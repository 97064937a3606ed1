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


def test_sampled_episodes_do_not_depend_on_where_the_checkpoint_is(checkpoint, tmp_path):
    """The same weights in two directories: the same sampling RNG key (the path replaced by
    the weights' digest) and the same sampled episodes through `harness run`; other weights
    get another key."""
    import shutil

    from harness.cli import main
    from harness.store import Store, load_episodes

    moved = shutil.copytree(checkpoint, tmp_path / "elsewhere" / "ckpt")
    options = "?temperature=1&max_tokens=4&max_batch=8"
    here, there = (make_policy(f"checkpoint:{p}{options}") for p in (checkpoint, moved))
    assert here.id != there.id and here.rng_key == there.rng_key
    assert here.rng_key.startswith("checkpoint:sha256:") and here.rng_key.endswith(options)
    steps = {}
    for name, path in (("a", checkpoint), ("b", moved)):
        db = tmp_path / f"{name}.db"
        assert main(["run", "--policy", f"checkpoint:{path}{options}", "--suite",
                     "frozenlake-random@1", "--tasks", "6", "--samples", "2", "--run-id", "r",
                     "--db", str(db)]) == 0
        frame = load_episodes(db)
        with Store(db) as store:
            steps[name] = [[(s.action, s.raw_output) for s in store.load_steps("r", key)]
                           for key in map(_key, frame.itertuples())]
    assert steps["a"] == steps["b"] and len(steps["a"]) == 12
    outputs = {raw for episode in steps["a"] for _, raw in episode}
    assert len(outputs) > 1  # sampling really happened
    other = make_tiny_model_copy(tmp_path / "other", checkpoint)
    assert make_policy(f"checkpoint:{other}{options}").rng_key != here.rng_key


def _key(row):
    from harness.records import EpisodeKey

    return EpisodeKey(row.policy, row.suite, row.task_id, int(row.eval_seed), int(row.sample))


def make_tiny_model_copy(path, checkpoint):
    """A checkpoint with the same metadata and other weights (another init seed)."""
    import shutil

    from harness.policies.tiny import TinyConfig, make_tiny_model

    made = make_tiny_model(path, TinyConfig(hidden=16, layers=1, heads=2, kv_heads=1,
                                            intermediate=32), seed=1)
    shutil.copy(checkpoint / "checkpoint.json", made / "checkpoint.json")
    return made
