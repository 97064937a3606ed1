"""The SQLite results store: round trips, resume keys, typed tidy view, exports, bad paths."""

import dataclasses
import json
import math
import sqlite3
import zlib

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.core import ConfigError, HarnessError
from harness.records import EpisodeKey, EpisodeRecord, StepRecord, TurnRecord
from harness.store import (EPISODE_COLUMNS, SCHEMA_VERSION, Store, decode_turns, encode_turns,
                           episode_rows, export_episodes, load_episodes, load_turns)


def _episode(task="t1", seed=0, sample=0, status="ok", success=True, train_seed=None):
    return EpisodeRecord(
        key=EpisodeKey("random", "frozenlake@1", task, seed, sample), task_type="4x4",
        split="test", status=status, success=success, score=1.0 if success else 0.0,
        total_reward=1.0, n_steps=2, n_invalid=1, terminated=True, truncated=False,
        prompt_tokens=5, completion_tokens=7, retries=2, model_latency_s=0.5, wall_s=0.01,
        train_seed=train_seed,
        error=None if status == "ok" else "Traceback ...\nValueError: boom")


STEPS = [StepRecord(0, "P_G", "Right", "<answer>Right</answer>", 0.0, False, False,
                    {"won": False, "score": 0.0, "invalid": False}),
         StepRecord(1, "_PG", "Right", "Right", 1.0, True, False,
                    {"won": True, "score": 1.0, "invalid": False, "nested": {"a": [1, 2]}})]


@pytest.fixture
def store(tmp_path):
    with Store(tmp_path / "r.db") as store:
        store.begin_run("run-1", {"policies": ["random"]}, {"code_version": "abc"})
        yield store


def test_round_trip_of_episode_and_trajectory(store):
    store.write_episode("run-1", _episode(), STEPS)
    frame = store.load_episodes()
    assert list(frame.columns) == EPISODE_COLUMNS
    row = frame.iloc[0]
    assert (row.policy, row.task_id, row.eval_seed, row["sample"]) == ("random", "t1", 0, 0)
    assert row.success is True or row.success == True  # noqa: E712 - numpy bool
    assert frame["success"].dtype == bool and frame["train_seed"].dtype == "Int64"
    assert pd.isna(row.train_seed)
    assert (row.retries, row.model_latency_s, row.prompt_tokens) == (2, 0.5, 5)
    assert store.load_steps("run-1", _episode().key) == STEPS
    assert store.count_steps("run-1") == 2


def test_wal_mode_and_schema_version(tmp_path):
    Store(tmp_path / "w.db").close()
    db = sqlite3.connect(tmp_path / "w.db")
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    stored = db.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()[0]
    assert stored == str(SCHEMA_VERSION)
    db.execute("UPDATE meta SET value='99' WHERE key='schema_version'")
    db.commit()
    with pytest.raises(HarnessError, match="schema version 99"):
        Store(tmp_path / "w.db")


def test_stored_keys_and_status_filter(store):
    store.write_episode("run-1", _episode("a"))
    store.write_episode("run-1", _episode("b", status="error", success=False))
    assert store.stored_keys("run-1") == {_episode("a").key, _episode("b").key}
    assert store.stored_keys("run-1", statuses=["error"]) == {_episode("b").key}
    assert store.stored_keys("other") == set()
    errors = store.load_episodes(statuses=["error"])
    assert list(errors.task_id) == ["b"] and errors.error.iloc[0].endswith("boom")


def test_duplicate_key_is_refused_unless_replacing(store):
    store.write_episode("run-1", _episode(), STEPS)
    with pytest.raises(sqlite3.IntegrityError):
        store.write_episode("run-1", _episode(success=False))
    store.write_episode("run-1", _episode(success=False), STEPS[:1], replace=True)
    frame = store.load_episodes()
    assert len(frame) == 1 and not frame.success.iloc[0]
    assert store.count_steps("run-1") == 1


def test_failed_batch_stores_nothing(store):
    store.write_episode("run-1", _episode("a"))
    with pytest.raises(sqlite3.IntegrityError):
        store.write_episodes([("run-1", _episode("new"), STEPS), ("run-1", _episode("a"), ())])
    assert set(store.load_episodes().task_id) == {"a"}
    assert store.count_steps("run-1") == 0


def test_same_run_id_with_other_config_is_an_error(store):
    assert store.begin_run("run-1", {"policies": ["random"]}, {}) is False
    with pytest.raises(ConfigError, match="different config"):
        store.begin_run("run-1", {"policies": ["oracle"]}, {})


def test_filters(store):
    store.write_episode("run-1", _episode("a"))
    store.begin_run("run-2", {}, {})
    store.write_episode("run-2", _episode("b"))
    assert list(store.load_episodes(run_id="run-2").task_id) == ["b"]
    assert len(store.load_episodes(run_id=["run-1", "run-2"])) == 2
    assert store.load_episodes(policy="oracle").empty


def test_export_csv_and_parquet(store, tmp_path):
    store.write_episode("run-1", _episode("a", train_seed=3))
    frame = store.load_episodes()
    back_csv = pd.read_csv(export_episodes(frame, tmp_path / "e.csv"))
    back_parquet = pd.read_parquet(export_episodes(frame, tmp_path / "e.parquet"))
    assert list(back_csv.columns) == EPISODE_COLUMNS
    assert back_parquet.train_seed.iloc[0] == 3 and back_csv.task_id.iloc[0] == "a"
    with pytest.raises(ConfigError, match=".csv or .parquet"):
        export_episodes(frame, tmp_path / "e.xlsx")


def test_error_episode_score_is_nan_not_success(store):
    store.write_episode("run-1", EpisodeRecord(
        key=EpisodeKey("p", "s@1", "t", 0, 0), task_type="x", split="test", status="error",
        success=False, score=float("nan"), total_reward=0.0, n_steps=0, n_invalid=0,
        terminated=False, truncated=False, error="boom"))
    row = store.load_episodes().iloc[0]
    assert not row.success and math.isnan(row.score) and row.status == "error"


def test_unwritable_or_missing_paths_are_clear_errors(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    with pytest.raises(HarnessError, match="cannot open results database"):
        Store(blocker / "sub" / "r.db")
    with pytest.raises(HarnessError, match="no results database"):
        load_episodes(tmp_path / "missing.db")


def test_a_batch_split_over_several_statements_stores_every_row(store, monkeypatch):
    """26 episode columns with at most 60 parameters per statement: 2 rows per statement,
    so 5 episodes take 3 statements per table, in one transaction."""
    import harness.sqlite_batch

    monkeypatch.setattr(harness.sqlite_batch, "MAX_BOUND_PARAMETERS", 60)
    statements = []
    store._db.set_trace_callback(statements.append)
    store.write_episodes([("run-1", _episode(f"t{i}"), STEPS) for i in range(5)])
    store._db.set_trace_callback(None)
    inserts = [s for s in statements if s.startswith("INSERT INTO episodes")]
    assert len(inserts) == 3
    frame = store.load_episodes()
    assert sorted(frame.task_id) == [f"t{i}" for i in range(5)]
    assert store.load_steps("run-1", EpisodeKey("random", "frozenlake@1", "t4", 0, 0)) == STEPS


SYSTEM = {"role": "system", "content": "You play frozenlake. " * 40}
TURNS = (TurnRecord(0, [SYSTEM, {"role": "user", "content": "P_G\nYour move?"}],
                    "<think>go</think><action>Right</action>", 120, 9, 0.25),
         TurnRecord(1, [SYSTEM, {"role": "user", "content": "P_G Right\n_PG\nYour move?"}],
                    "no tags, ünïcode ✓", 131, 4, 0.5, parsed=False))


def _with_turns(record, turns=TURNS):
    return dataclasses.replace(record, turns=turns)


def test_turns_round_trip_compressed_and_read_back_by_key(store, tmp_path):
    store.write_episode("run-1", _with_turns(_episode("a")), STEPS)
    store.write_episode("run-1", _episode("scripted"), STEPS)
    assert store.load_turns("run-1", _episode("a").key) == list(TURNS)
    assert store.load_turns("run-1", _episode("scripted").key) == []  # no model turn
    with pytest.raises(HarnessError, match="no episode"):
        store.load_turns("run-1", _episode("never").key)
    n_turns, data = store._db.execute("SELECT n_turns, data FROM turns").fetchone()
    plain = json.dumps([[t.t, t.messages, t.raw_output, t.prompt_tokens, t.completion_tokens,
                         t.latency_s, t.parsed] for t in TURNS]).encode()
    assert n_turns == 2 and len(data) < len(plain) / 3  # the repeated system prompt packs
    assert json.loads(zlib.decompress(data)) == json.loads(plain)
    key = _episode("a").key
    assert load_turns(tmp_path / "r.db", "run-1", key) == list(TURNS)
    assert load_turns(tmp_path / "r.db", "run-1", tuple(key)) == list(TURNS)


def test_turns_can_be_left_out_and_a_replaced_attempt_takes_its_turns_along(store):
    record = _with_turns(_episode("a", status="error", success=False))
    assert episode_rows("run-1", record, STEPS, turns=False).turns is None
    assert episode_rows("run-1", _episode("a"), STEPS).turns is None  # none to store
    store.write_episode("run-1", record, ())
    assert len(store.load_turns("run-1", record.key)) == 2  # a failure keeps its turns
    store.write_episode("run-1", _with_turns(_episode("a"), TURNS[:1]), STEPS, replace=True)
    assert store.load_turns("run-1", record.key) == [TURNS[0]]
    store.write_episode("run-1", _episode("a"), STEPS, replace=True)  # e.g. --no-turns now
    assert store.load_turns("run-1", record.key) == []
    with pytest.raises(sqlite3.IntegrityError):  # without replace a key is stored once
        store.write_episode("run-1", _with_turns(_episode("a")), STEPS)
    assert store.load_turns("run-1", record.key) == []


_texts = st.text(max_size=60)
_turns = st.lists(st.builds(
    TurnRecord, t=st.integers(0, 10**6),
    messages=st.lists(st.fixed_dictionaries({"role": st.sampled_from(["system", "user",
                                                                       "assistant"]),
                                             "content": _texts}), max_size=4),
    raw_output=_texts, prompt_tokens=st.integers(0, 2**40),
    completion_tokens=st.integers(0, 2**40),
    latency_s=st.floats(0, 1e6, allow_nan=False), parsed=st.booleans()), max_size=5)


@settings(max_examples=200, deadline=None)
@given(turns=_turns)
def test_any_turns_decode_to_what_was_encoded(turns):
    assert decode_turns(encode_turns(turns)) == turns
