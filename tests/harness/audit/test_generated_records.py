"""Suites that declare generated records have their ceilings marked "set by the generated
records" (audit text, audit table, leaderboard)."""

import pandas as pd

from harness.audit.ceilings import GENERATED_NOTE, generated_records
from harness.report.leaderboard import LEADERBOARD_COLUMNS, leaderboard_markdown


def test_generated_records_follows_the_suites_comparability():
    assert generated_records("medagentbench-v1@2") and generated_records("medagentbench-v2@2")
    assert not generated_records("frozenlake@1")
    assert not generated_records("no-such-suite@1")


def test_leaderboard_marks_only_suites_with_generated_records():
    rows = [{"suite": suite, "policy": "oracle", "n": 10, "errors": 0, "success": 1.0,
             "low": 0.7, "high": 1.0, "boot_low": 1.0, "boot_high": 1.0, "mean_score": 1.0,
             "best": True, "p_holm": None, "separable": None}
            for suite in ("medagentbench-v1@2", "frozenlake@1")]
    text = leaderboard_markdown(pd.DataFrame(rows, columns=LEADERBOARD_COLUMNS))
    note = [line for line in text.splitlines() if GENERATED_NOTE in line]
    assert len(note) == 1 and "medagentbench-v1@2" in note[0] and "frozenlake" not in note[0]
