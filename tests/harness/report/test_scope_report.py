"""`with_scope`: the scope counts read back from the stored graded steps, an errored episode
counted as acting on nothing with its task's declaration, tasks without scope left NaN; and
the scope table's cells."""

from __future__ import annotations

import math

from harness.records import EpisodeKey, EpisodeRecord, StepRecord
from harness.report.scope import scope_report_tables, with_scope
from harness.stats.scope import COLUMNS
from harness.store import Store

SUITE = "appworld-lite@3"


def _episode(policy, task, status="ok"):
    return EpisodeRecord(
        key=EpisodeKey(policy, SUITE, task, 0, 0), task_type="difficulty-2", split="test",
        status=status, success=status == "ok", score=0.0, total_reward=0.0, n_steps=1,
        n_invalid=0, terminated=status == "ok", truncated=False)


def _steps(acted, entries, reached):
    info = {"won": False, "score": 0.0, "invalid": False,
            "scope": {"entries": entries, "acted": acted}, "subgoals": reached}
    return [StepRecord(0, "obs", "act", "act", 0.0, False, False,
                       {"won": False, "score": 0.0, "invalid": False}),
            StepRecord(1, "obs", "act", "act", 0.0, True, False, info)]


ENTRIES = {"note:1": True, "note:2": True, "note:3": False, "note:4": False}
GOALS = {"simple_note: expected changes made": True, "phone: expected changes made": False}


def test_counts_from_the_stored_steps(tmp_path):
    with Store(tmp_path / "r.db") as store:
        store.begin_run("run-1", {"policies": ["p"]}, {"code_version": "abc"})
        store.write_episode("run-1", _episode("p", "a"),
                            _steps(["note:1", "note:3", "note:4"], ENTRIES, GOALS))
        store.write_episode("run-1", _episode("q", "a", status="error"), [])
        store.write_episode("run-1", _episode("p", "plain"), [
            StepRecord(0, "obs", "act", "act", 0.0, True, False,
                       {"won": True, "score": 1.0, "invalid": False})])
        frame = with_scope(store, store.load_episodes()).set_index(["policy", "task_id"])
    # p acted on note:1 (in scope) and note:3, note:4 (out of scope); 1 of 2 sub-goals
    assert list(frame.loc[("p", "a"), list(COLUMNS)]) == [1.0, 3.0, 2.0, 1.0, 2.0]
    # q errored: acted on nothing, the task's two in-scope entries and two sub-goals
    assert list(frame.loc[("q", "a"), list(COLUMNS)]) == [0.0, 0.0, 2.0, 0.0, 2.0]
    assert all(math.isnan(v) for v in frame.loc[("p", "plain"), list(COLUMNS)])
    (table,) = scope_report_tables(frame.reset_index(), n_resamples=200)
    cells = {row[1].main: row for row in table.rows}
    assert cells["p"][2].main == "33.3" and cells["p"][3].main == "50.0"  # 1/3, 1/2
    assert cells["q"][3].main == "0.0" and cells["q"][5].main == "0.0"
