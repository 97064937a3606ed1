"""Schema migration: a database written by the schema-2 store (the release before table sets)
is upgraded in place by today's store and reads back exactly what the old code read."""

import json
import sqlite3
from pathlib import Path

import pytest

from harness.core import HarnessError
from harness.records import EpisodeKey
from harness.audit.tables import load_audit_rows
from harness.signal_eval.tables import SIGNAL_TABLES, load_signal_points, load_signal_results
from harness.store import SCHEMA_VERSION, Store, TableSet, load_episodes, load_turns
from harness.train.metrics_table import load_train_metrics

DATA = Path(__file__).parent / "data" / "store_v2"
EXPECTED = json.loads((DATA / "store_v2_expected.json").read_text())


@pytest.fixture
def old_db(tmp_path):
    path = tmp_path / "v2.db"
    with sqlite3.connect(path) as db:
        db.executescript((DATA / "store_v2.sql").read_text())
    db.close()
    return path


OUTCOMES = ["answerable", "answered", "abstained", "correct"]


def _old_columns(frame):
    """The frame as the old code read it: the outcome columns (schema 6) are undeclared in
    an older database, and left out of the comparison with the old golden table."""
    assert frame[OUTCOMES].isna().all().all()
    return frame.drop(columns=OUTCOMES).to_json(orient="split")


def _meta(path):
    with sqlite3.connect(path) as db:
        return dict(db.execute("SELECT key, value FROM meta"))


def test_version_2_database_is_upgraded_and_reads_back_identical(old_db):
    assert _meta(old_db) == {"schema_version": "2"}
    with Store(old_db) as store:
        assert _old_columns(store.load_episodes()) == EXPECTED["episodes"]
        assert store.runs().to_json(orient="split") == EXPECTED["runs"]
        assert store.run_config("fixture-run") == EXPECTED["run_config"]
        assert store.count_steps("fixture-run") == EXPECTED["count_steps"]
        assert sorted(list(k) for k in store.stored_keys("fixture-run")) == \
            EXPECTED["stored_keys"]
        for key, steps in EXPECTED["steps"].items():
            loaded = store.load_steps("fixture-run", EpisodeKey(*json.loads(key)))
            assert json.loads(json.dumps([list(s) for s in loaded])) == steps
        assert json.loads(json.dumps(load_audit_rows(store))) == EXPECTED["audits"]
        assert load_train_metrics(store).to_json(orient="split") == EXPECTED["train_metrics"]
        assert load_signal_points(store, "set-1") == EXPECTED["signal_points"]
        assert load_signal_results(store, "set-1") == EXPECTED["signal_results"]
    assert _meta(old_db) == {"schema_version": str(SCHEMA_VERSION), "tables:audits": "1",
                             "tables:train_metrics": "1", "tables:signals": "1"}
    assert _old_columns(load_episodes(old_db)) == EXPECTED["episodes"]


def test_read_only_store_reads_an_old_database_without_upgrading_it(old_db):
    before = old_db.read_bytes()
    assert _old_columns(load_episodes(old_db)) == EXPECTED["episodes"]
    with Store(old_db, readonly=True) as store:
        assert load_signal_results(store, "set-1") == EXPECTED["signal_results"]
    assert old_db.read_bytes() == before


def test_a_fresh_database_creates_subsystem_tables_on_first_use(tmp_path):
    with Store(tmp_path / "new.db") as store:
        tables = {r[0] for r in store._db.execute("SELECT name FROM sqlite_master WHERE "
                                                   "type='table'")}
        assert tables == {"meta", "runs", "episodes", "trajectories", "turns"}
        assert load_signal_results(store, "none") == []  # creates the signal tables
        assert _meta(tmp_path / "new.db")[SIGNAL_TABLES.meta_key] == "1"


def test_a_table_set_migrates_step_by_step_and_refuses_newer_versions(tmp_path):
    v1 = TableSet("notes", ("CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT)",))
    v2 = TableSet("notes", (*v1.migrations, "ALTER TABLE notes ADD COLUMN author TEXT;"
                            "UPDATE notes SET author = 'unknown'"))
    with Store(tmp_path / "n.db") as store:
        store.tables(v1).execute("INSERT INTO notes (text) VALUES ('kept')")
    with Store(tmp_path / "n.db") as store:
        rows = store.tables(v2).execute("SELECT text, author FROM notes").fetchall()
        assert rows == [("kept", "unknown")]
    with Store(tmp_path / "n.db") as store, pytest.raises(HarnessError, match="version 2"):
        store.tables(v1)
    with Store(tmp_path / "n.db", readonly=True) as store:
        assert store.tables(TableSet("absent", ("CREATE TABLE absent (x)",))) is None


def _indices(path) -> set[str]:
    with sqlite3.connect(path) as db:
        rows = db.execute("SELECT name FROM sqlite_master WHERE type='index' AND tbl_name="
                          "'episodes' AND name NOT LIKE 'sqlite_autoindex%'").fetchall()
    db.close()
    return {row[0] for row in rows}


VIEW_INDICES = {"episodes_by_policy", "episodes_by_suite", "episodes_by_status"}


def test_version_3_gains_the_episode_indices_and_stays_readable_without_them(tmp_path):
    path = tmp_path / "v3.db"
    with Store(path) as store:
        store.begin_run("r", {"a": 1}, {})
    assert _indices(path) == VIEW_INDICES  # a fresh store has them
    with sqlite3.connect(path) as db:  # make it a version-3 database
        for name in VIEW_INDICES:
            db.execute(f"DROP INDEX {name}")
        db.execute("UPDATE meta SET value='3' WHERE key='schema_version'")
    db.close()
    assert load_episodes(path).empty  # read-only: read as it is, not upgraded
    assert _indices(path) == set() and _meta(path)["schema_version"] == "3"
    with Store(path) as store:
        assert store.run_config("r") == {"a": 1}
    assert _indices(path) == VIEW_INDICES
    assert _meta(path)["schema_version"] == str(SCHEMA_VERSION)
    with sqlite3.connect(path) as db:
        plan = " ".join(row[3] for row in db.execute(
            "EXPLAIN QUERY PLAN SELECT COUNT(*) FROM episodes WHERE status = 'error'"))
    db.close()
    assert "episodes_by_status" in plan


def test_version_2_database_gains_the_episode_indices(old_db):
    with Store(old_db):
        pass
    assert VIEW_INDICES <= _indices(old_db)


def _tables(path) -> set[str]:
    with sqlite3.connect(path) as db:
        rows = db.execute("SELECT name FROM sqlite_master WHERE type='table'").fetchall()
    db.close()
    return {row[0] for row in rows}


def test_version_4_gains_the_turns_table_and_reads_as_having_no_turns(tmp_path):
    import dataclasses

    from tests.harness.test_store import STEPS, TURNS, _episode

    path = tmp_path / "v4.db"
    with Store(path) as store:
        store.begin_run("r", {"a": 1}, {})
        store.write_episode("r", _episode("old"), STEPS)
    with sqlite3.connect(path) as db:  # make it a version-4 database
        db.execute("DROP TABLE turns")
        db.execute("UPDATE meta SET value='4' WHERE key='schema_version'")
    db.close()
    old_key = _episode("old").key
    assert load_turns(path, "r", old_key) == []  # read-only: read as it is, not upgraded
    with Store(path, readonly=True) as store, pytest.raises(HarnessError, match="no episode"):
        store.load_turns("r", _episode("missing").key)
    assert "turns" not in _tables(path) and _meta(path)["schema_version"] == "4"
    with Store(path) as store:
        assert store.load_steps("r", old_key) == STEPS
        store.write_episode("r", dataclasses.replace(_episode("new"), turns=TURNS), STEPS)
    assert "turns" in _tables(path) and _meta(path)["schema_version"] == str(SCHEMA_VERSION)
    assert load_turns(path, "r", _episode("new").key) == list(TURNS)
    assert load_turns(path, "r", old_key) == []


def test_version_2_database_gains_the_turns_table(old_db):
    with Store(old_db) as store:
        keys = store.stored_keys("fixture-run")
        assert keys and all(store.load_turns("fixture-run", key) == [] for key in keys)
    assert "turns" in _tables(old_db)


def test_version_5_gains_the_outcome_columns_and_reads_them_as_undeclared(tmp_path):
    """Schema 6 adds ``answerable``, ``abstained`` and ``correct``: a version-5 database read
    as it is gives <NA> outcomes; opened writable it gains the columns, keeps its episodes
    undeclared and stores new outcomes, ``answered`` being not ``abstained``."""
    import dataclasses

    from tests.harness.test_store import STEPS, _episode

    path = tmp_path / "v5.db"
    with Store(path) as store:
        store.begin_run("r", {"a": 1}, {})
    with sqlite3.connect(path) as db:  # make it a version-5 database holding one episode
        for column in ("answerable", "abstained", "correct"):
            db.execute(f"ALTER TABLE episodes DROP COLUMN {column}")
        db.execute("UPDATE meta SET value='5' WHERE key='schema_version'")
        old = _episode("old")
        db.execute("INSERT INTO episodes VALUES (" + ",".join("?" * 26) + ")",
                   ("r", *old.key, old.task_type, old.split, None, "ok", 1, 1.0, 1.0, 2, 1,
                    1, 0, 5, 7, 2, 0.5, 0.01, None, "", "{}", 0.0))
    db.close()
    frame = load_episodes(path)  # read-only: read as it is
    assert frame[OUTCOMES].isna().all().all() and _meta(path)["schema_version"] == "5"
    declared = [dataclasses.replace(_episode(task), answerable=answerable,
                                    abstained=abstained, correct=correct)
                for task, answerable, abstained, correct in
                (("a", True, False, True), ("b", False, True, False),
                 ("c", True, True, False))]
    with Store(path) as store:
        for record in declared:
            store.write_episode("r", record, STEPS)
    assert _meta(path)["schema_version"] == str(SCHEMA_VERSION)
    frame = load_episodes(path).set_index("task_id")
    assert frame.loc["old", OUTCOMES].isna().all()
    rows = frame.loc[["a", "b", "c"], OUTCOMES].astype(bool).values.tolist()
    assert rows == [[True, True, False, True], [False, False, True, False],
                    [True, False, True, False]]
    assert str(frame["answerable"].dtype) == "boolean"
