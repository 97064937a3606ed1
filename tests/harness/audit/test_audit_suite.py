"""`audit_suite` end to end: real runs through the runner into a real SQLite store."""

import pandas as pd
import pytest

from harness.audit import AuditConfig, BasePolicyFailed, audit_suite
from harness.audit.ceilings import ALL
from harness.audit.tables import load_audit_rows
from harness.audit.records import latest_audits, load_audits, result_from_dict, result_to_dict
from harness.core import ConfigError, UnknownNameError
from harness.store import Store, load_episodes


def _overall(table, column):
    return float(table.loc[table["task_type"] == ALL, column].iloc[0])


def test_leaky_grader_is_flagged(tmp_path):
    db = str(tmp_path / "a.db")
    result = audit_suite(AuditConfig("leaky-test", db=db, k=4))
    ceiling = result.ceiling.set_index("task_type")
    assert ceiling.loc["all", "success"] == pytest.approx(0.4)  # 8 of 20 tasks, both seeds
    assert ceiling.loc["all", "probe"] == "noop:finish"
    assert ceiling.loc["a", "success"] == pytest.approx(0.8) and ceiling.loc["a", "flagged"]
    assert ceiling.loc["b", "success"] < 0.10 and not ceiling.loc["b", "flagged"]
    assert ceiling.loc["all", "flagged"] and ceiling.loc["all", "significant"]
    assert "a" in result.summary["flagged_types"]
    exploit = result.rates[(result.rates["kind"] == "exploit") & (result.rates["task_type"] == ALL)]
    assert exploit["probe"].tolist() == ["spam finish"]
    assert exploit["success"].iloc[0] == pytest.approx(0.4)
    assert result.summary["exploit_max"] == pytest.approx(0.4)
    assert result.summary["oracle_success"] == 1.0 and result.oracle_failures.empty


def test_clean_grader_is_not_flagged_and_the_rest_is_measured(tmp_path):
    db = str(tmp_path / "a.db")
    result = audit_suite(AuditConfig("clean-test", db=db, k=4, n_tasks=10))
    trivial = result.ceiling[result.ceiling["probe"] != "random"]
    assert (trivial["success"] == 0).all()
    # 140 finished episodes (base 10 x 4, five probes x 10 tasks x 2 seeds); 100 re-graded
    assert result.summary["n_flaky"] == 0 and result.n_regraded == 100
    frame = load_episodes(db)
    base = frame[frame["run_id"] == result.run_ids[0]]
    assert len(base) == 10 * 4 and set(base["sample"]) == {0, 1, 2, 3}
    # the zero-gradient share is recomputed from the stored episodes by hand
    wins = base.groupby("task_id")["success"].sum()
    assert _overall(result.learnability, "zero_gradient") == pytest.approx(
        ((wins == 0) | (wins == 4)).mean())
    assert _overall(result.headroom, "pass_at_k") == pytest.approx(
        _overall(result.learnability, "pass_at_k"))


def test_flaky_grader_is_listed(tmp_path):
    result = audit_suite(AuditConfig("flaky-test", db=str(tmp_path / "a.db"), k=2,
                                     max_regraded=1000))
    assert result.summary["n_flaky"] >= 1
    assert set(result.flaky["task_id"]) == {"t-003"}
    assert "re-grade" in result.flaky["detail"].iloc[0]


def test_suite_without_trivial_actions_runs_the_rest(tmp_path):
    result = audit_suite(AuditConfig("no-trivial-test", db=str(tmp_path / "a.db"), k=2,
                                     n_tasks=4))
    assert any("declares no trivial actions" in note for note in result.notes)
    probes = set(result.rates["probe"])
    assert {"empty answer", "invalid output", "random", "oracle"} == probes
    assert result.summary["oracle_success"] == 1.0


def test_base_policy_failing_everywhere_stops_with_a_clear_message(tmp_path):
    with pytest.raises(BasePolicyFailed, match="base policy 'always-fails'"):
        audit_suite(AuditConfig("clean-test", base_policy="always-fails",
                                db=str(tmp_path / "a.db")))
    with pytest.raises(BasePolicyFailed, match="errored on every one of its 4 episodes"):
        audit_suite(AuditConfig("clean-test", base_policy="always-fails", k=2, n_tasks=2,
                                db=str(tmp_path / "b.db")))


def test_unknown_names_and_bad_config(tmp_path):
    with pytest.raises(UnknownNameError, match="did you mean 'sokoban'"):
        audit_suite(AuditConfig("sokobna", db=str(tmp_path / "a.db")))
    with pytest.raises(UnknownNameError, match="unknown policy"):
        audit_suite(AuditConfig("clean-test", base_policy="randm", db=str(tmp_path / "a.db")))
    with pytest.raises(ConfigError, match="k must be an integer >= 2"):
        AuditConfig("clean-test", k=1)


def test_audit_is_stored_and_round_trips(tmp_path):
    db = str(tmp_path / "a.db")
    first = audit_suite(AuditConfig("leaky-test", db=db, k=2, n_tasks=6))
    again = audit_suite(AuditConfig("leaky-test", db=db, k=2, n_tasks=6))  # resumes, replaces
    assert again.audit_id == first.audit_id
    with Store(db) as store:
        rows = load_audit_rows(store, suite="leaky-test@1")
        assert len(rows) == 1 and rows[0]["config"]["k"] == 2
        assert len(store.load_episodes()) == len(load_episodes(db))
    loaded = latest_audits(load_audits(db))
    assert [a.audit_id for a in loaded] == [first.audit_id]
    back = result_from_dict(result_to_dict(first))
    for name in ("rates", "ceiling", "oracle_failures", "learnability", "headroom"):
        pd.testing.assert_frame_equal(getattr(back, name), getattr(first, name),
                                      check_dtype=False)
    assert back.summary == first.summary
    assert loaded[0].summary == first.summary


@pytest.mark.parametrize("suite", ["frozenlake@1", "sokoban@1", "frozenlake-slippery@1",
                                   "minesweeper@1"])
def test_embedded_suites(tmp_path, suite):
    result = audit_suite(AuditConfig(suite, db=str(tmp_path / "a.db"), n_tasks=8, k=8))
    s = result.summary
    if suite in ("frozenlake@1", "sokoban@1"):  # deterministic dynamics, exact solvers
        assert s["oracle_success"] == 1.0 and result.oracle_failures.empty
    oracle = result.rates[(result.rates["kind"] == "oracle") & (result.rates["task_type"] == ALL)]
    assert oracle["successes"].iloc[0] == oracle["n"].iloc[0] - result.oracle_failures.eval(
        "n - successes").sum()
    assert 0 <= s["zero_gradient"] <= 1 and s["n_flaky"] == 0 and s["n_regraded"] > 0
    never = result.rates[result.rates["probe"].isin(["empty answer", "invalid output"])]
    assert (never["success"] == 0).all()  # an empty or unparseable answer never wins
