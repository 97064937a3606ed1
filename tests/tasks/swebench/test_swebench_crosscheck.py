"""Resolution-rule cross-check: on test logs the local backend recorded for real instances,
the project's verdicts equal the `swebench` package's own ``get_eval_report``."""

from __future__ import annotations

from pathlib import Path

import pytest

from tasks.swebench.data import load_table
from tasks.swebench.grading import grade_log, official_report

import swebench  # noqa: E402,F401 - the swebench extra (in dev) is required here
RECORDED = Path(__file__).parent / "fixtures" / "recorded"
LOGS = sorted(RECORDED.glob("*.log"))


@pytest.fixture(scope="module")
def instances():
    return {i.instance_id: i for i in load_table("full-dev")}


def test_there_are_gold_and_empty_logs():
    kinds = {p.name.split(".")[1] for p in LOGS}
    assert {"gold", "empty"} <= kinds and len(LOGS) >= 6


@pytest.mark.parametrize("log_path", LOGS, ids=[p.name for p in LOGS])
def test_verdict_equals_get_eval_report(log_path, instances):
    instance = instances[log_path.name.split(".")[0]]
    verdict = grade_log(log_path.read_text(), instance)
    official = official_report(instance, str(log_path), "patch")
    assert verdict.resolved == official["resolved"]
    assert verdict.applied == official["patch_successfully_applied"]
    if verdict.applied:
        assert verdict.tests == {k: official["tests_status"][k]
                                 for k in ("FAIL_TO_PASS", "PASS_TO_PASS")}
    kind = log_path.name.split(".")[1]
    assert verdict.resolved == (kind == "gold")  # what validate observed here
