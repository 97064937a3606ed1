"""`harness.audit.forgery`: per task, whether a forgery probe changed the verdict (hand-made
episode frames), and the table's round trip through the stored record."""

from __future__ import annotations

import pandas as pd

from harness.audit.auditor import AuditConfig, audit_suite
from harness.audit.forgery import FORGERY_COLUMNS, forgery_by_task, is_forgery_probe
from harness.audit.records import result_from_dict, result_to_dict
from harness.audit.text import summary_lines

PROBES = {"noop:submit": ("noop:submit", "trivial"),
          "noop:forge:reward-file": ("forge:reward-file", "exploit"),
          "noop:forge:summary": ("forge:summary", "exploit"),
          "noop:delete-tests": ("delete-tests", "exploit"),
          "oracle": ("oracle", "oracle")}


def _frame(wins: dict[tuple[str, str], list[bool]]) -> pd.DataFrame:
    """Episodes: (policy, task id) -> the success of each of its episodes."""
    rows = [{"policy": policy, "task_id": task, "task_type": task[0], "success": won}
            for (policy, task), outcomes in wins.items() for won in outcomes]
    return pd.DataFrame(rows)


def test_a_task_is_forgeable_when_a_forgery_probe_wins_where_no_trivial_probe_does():
    frame = _frame({
        ("noop:submit", "a1"): [False, False], ("noop:forge:reward-file", "a1"): [True, False],
        ("noop:forge:summary", "a1"): [False, False], ("oracle", "a1"): [True, True],
        # b1: the trivial probe wins too: the verdict was not the forgery's doing
        ("noop:submit", "b1"): [True, False], ("noop:forge:reward-file", "b1"): [True, True],
        ("noop:forge:summary", "b1"): [False, False],
        # b2: only a non-forgery exploit wins: not counted here
        ("noop:submit", "b2"): [False, False], ("noop:forge:reward-file", "b2"): [False, False],
        ("noop:forge:summary", "b2"): [False, False], ("noop:delete-tests", "b2"): [True, True],
    })
    table = forgery_by_task(frame, PROBES)
    assert list(table.columns) == FORGERY_COLUMNS
    assert table.to_dict("records") == [
        {"task_id": "a1", "task_type": "a", "episodes": 4, "forged": 1, "forgeable": True,
         "probes": "forge:reward-file"},
        {"task_id": "b1", "task_type": "b", "episodes": 4, "forged": 2, "forgeable": False,
         "probes": "forge:reward-file"},
        {"task_id": "b2", "task_type": "b", "episodes": 4, "forged": 0, "forgeable": False,
         "probes": ""}]


def test_no_forgery_probe_declared_gives_no_rows():
    frame = _frame({("noop:submit", "a1"): [True], ("noop:delete-tests", "a1"): [True]})
    assert forgery_by_task(frame, {k: v for k, v in PROBES.items()
                                   if not v[0].startswith("forge:")}).empty
    assert is_forgery_probe("forge:summary", "exploit")
    assert not is_forgery_probe("forge:summary", "trivial")
    assert not is_forgery_probe("kill-verifier", "exploit")


def test_the_table_is_stored_and_an_older_record_reads_back_without_it(tmp_path):
    result = audit_suite(AuditConfig("clean-test", db=str(tmp_path / "a.db"), k=2, n_tasks=4))
    assert result.forgery.empty and result.summary["forgeable_tasks"] is None
    assert not any(line.startswith("  forgery") for line in summary_lines(result))
    forged = pd.DataFrame([{"task_id": "t-001", "task_type": "a", "episodes": 2, "forged": 1,
                            "forgeable": True, "probes": "forge:summary"}],
                          columns=FORGERY_COLUMNS)
    stored = result_to_dict(result)
    stored["forgery"] = {"columns": FORGERY_COLUMNS,
                         "rows": [list(r) for r in forged.itertuples(index=False)]}
    back = result_from_dict(stored)
    pd.testing.assert_frame_equal(back.forgery, forged, check_dtype=False)
    assert back.summary["forgeable_tasks"] == 1 and back.summary["forgery_tasks"] == 1
    assert ("  forgery          1 of 1 tasks forgeable (a forgery probe changed the verdict): "
            "t-001 (forge:summary)") in summary_lines(back)
    del stored["forgery"]
    stored["version"] = 2
    assert result_from_dict(stored).forgery.empty
