"""τ-bench answerability: declared only for tasks graded by the database alone, answerable
exactly when the gold actions change the database (checked with upstream's hash, apart from
the grader's digest, on the write tasks whose gold writes change nothing and a few others),
cached on disk, and the outcome classes of the gold agent and an always-refusing policy
played through the runner."""

from __future__ import annotations

import dataclasses

import pytest

from harness.config import RunConfig
from harness.runner import run
from harness.store import load_episodes
from tasks import get_suite
from tasks.taubench import answerability
from tasks.taubench.data import database_hash
from tasks.taubench.grading import replay

SUITE = "taubench-retail@1"
NO_OP_WRITES = ("retail-test-12", "retail-test-106")
"""Test-split tasks whose gold actions call write tools that change nothing."""


@pytest.fixture(scope="module")
def suite():
    return get_suite(SUITE)


def test_declared_only_where_the_database_decides(suite):
    for spec in suite.tasks():
        has_outputs = spec.metadata["outputs"] > 0
        assert (spec.answerability is None) == has_outputs, spec.id
        if spec.answerability is not None:
            assert spec.answerability.abstain_action == answerability.ABSTAIN_ACTION
            if spec.task_type == "read-only":
                assert not spec.answerability.answerable, spec.id
    no_op = sorted(t.id for t in suite.tasks() if t.task_type == "write"
                   and not t.answerability.answerable)
    assert len(no_op) == 7 and set(NO_OP_WRITES) <= set(no_op)


def test_answerable_is_whether_the_gold_actions_change_the_database(suite):
    domain = suite.domain
    fresh = database_hash(domain.fresh_database())
    chosen = [t for t in suite.tasks() if t.task_type == "write"
              and not t.answerability.answerable][:7]
    chosen += [t for t in suite.tasks("test") if t.task_type == "write"
               and t.answerability.answerable][:4]
    for spec in chosen:  # upstream's canonical hash, not the grader's digest
        changed = database_hash(replay(domain, suite.record(spec.id))) != fresh
        assert changed == spec.answerability.answerable, spec.id


def test_the_cache_is_read_and_keyed_by_the_data(suite, monkeypatch):
    domain = suite.domain
    path = answerability._cache_file(domain)
    assert path.is_file()

    def replay_again(_):
        raise AssertionError("replayed although the cache holds the answers")

    monkeypatch.setattr(answerability, "_compute", replay_again)
    changes = answerability.changes_database(domain)
    assert set(changes) == {t.id for t in suite.tasks()}
    for spec in suite.tasks():
        if spec.answerability is not None:
            assert changes[spec.id] == spec.answerability.answerable, spec.id
    (name, raw), *rest = domain.tables
    edited = dataclasses.replace(domain, tables=((name, raw + b" "), *rest))
    assert answerability._cache_file(edited) != path


def test_outcome_classes_through_the_runner(suite, tmp_path):
    answerable = next(t.id for t in suite.tasks("test") if t.task_type == "write"
                      and t.answerability.answerable)
    task_ids = (*NO_OP_WRITES, answerable)
    db = tmp_path / "r.db"
    run(RunConfig(policies=("oracle", "refuse:1"), suites=(SUITE,), split="test",
                  task_ids=task_ids, eval_seeds=(0,), db=str(db)))
    frame = load_episodes(db).set_index(["policy", "task_id"])
    for task_id in NO_OP_WRITES:  # the gold agent's writes change nothing: it abstained
        row = frame.loc[("oracle", task_id)]
        assert row.success and not row.answerable and row.abstained and not row.correct
    row = frame.loc[("oracle", answerable)]
    assert row.success and row.answerable and not row.abstained and row.correct
    refused = frame.loc["refuse:1"]
    assert refused["abstained"].all() and not refused["correct"].any()
