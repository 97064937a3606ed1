"""The refusal-rule policy ``refuse:T[:NAME]``: its spec, its threshold family, and the clear
errors of a bad threshold or a task without declared answerability."""

from __future__ import annotations

import hashlib

import pytest

from harness.config import RunConfig
from harness.core import ConfigError
from harness.orchestrator import RunAborted
from harness.policies import make_policy
from harness.policies.scripted import refusal_threshold, task_confidence
from harness.runner import run
from harness.store import load_episodes


def test_spec_threshold_and_family():
    policy = make_policy("refuse:0.25:done")
    assert (policy.threshold, policy.trivial) == (0.25, "done")
    assert policy.provenance["refusal_threshold"] == 0.25
    assert refusal_threshold("refuse:0.25:done") == ("refuse:*:done", 0.25)
    assert refusal_threshold("refuse:1") == ("refuse:*", 1.0)
    assert refusal_threshold("oracle") is None and refusal_threshold("refuse:x") is None
    for bad in ("refuse", "refuse:1.5", "refuse:-0.1", "refuse:often"):
        with pytest.raises(ConfigError, match="refusal threshold"):
            make_policy(bad)


def test_confidence_is_the_documented_hash_draw():
    digest = hashlib.blake2b(b"task-7", digest_size=8).hexdigest()
    assert task_confidence("task-7") == int(digest, 16) / 2**64
    draws = [task_confidence(f"t{i}") for i in range(2000)]
    assert 0 <= min(draws) and max(draws) < 1
    assert abs(sum(d < 0.25 for d in draws) / 2000 - 0.25) < 0.04  # uniform over ids


def test_a_task_without_answerability_is_an_errored_episode(tmp_path):
    db = tmp_path / "r.db"
    with pytest.raises(RunAborted, match="declares no answerability"):
        run(RunConfig(policies=("refuse:0.5",), suites=("frozenlake@1",), n_tasks=1,
                      db=str(db)))
    episode = load_episodes(db).iloc[0]
    assert episode["status"] == "error" and "declares no answerability" in episode["error"]
    assert episode[["answerable", "abstained", "correct"]].isna().all()
