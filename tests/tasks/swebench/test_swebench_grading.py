"""Grading: patch hygiene, the eval script's steps, and `grade_log` against the official
``get_eval_report`` on hand-made pytest logs (the same parser, the same resolution rule)."""

from __future__ import annotations

import json

import pytest

from tasks.swebench.data import Instance, instance_from_row, load_table
from tasks.swebench.grading import (
    APPLY_COMMANDS, eval_script, grade_log, official_report, patch_files, sanitize_patch)

import swebench  # noqa: E402,F401 - the swebench extra (in dev) is required here

DIFF = """diff --git a/pkg/mod.py b/pkg/mod.py
--- a/pkg/mod.py
+++ b/pkg/mod.py
@@ -1 +1 @@
-x = 1
+x = 2
diff --git a/conftest.py b/conftest.py
new file mode 100644
--- /dev/null
+++ b/conftest.py
@@ -0,0 +1 @@
+import pytest
diff --git a/tests/test_mod.py b/tests/test_mod.py
--- a/tests/test_mod.py
+++ b/tests/test_mod.py
@@ -1 +1 @@
-assert x == 1
+assert True
"""

TEST_PATCH = "diff --git a/tests/test_mod.py" + DIFF.split("diff --git a/tests/test_mod.py")[1]


def _instance(repo: str = "marshmallow-code/marshmallow", version: str = "3.0") -> Instance:
    return instance_from_row({
        "instance_id": "demo__demo-1", "repo": repo, "version": version, "base_commit": "abc",
        "patch": "", "test_patch": TEST_PATCH,
        "problem_statement": "", "FAIL_TO_PASS": json.dumps(["tests/test_mod.py::test_new"]),
        "PASS_TO_PASS": json.dumps(["tests/test_mod.py::test_old", "tests/test_mod.py::test_b"])})


def test_sanitize_drops_test_infrastructure():
    kept, dropped = sanitize_patch(DIFF)
    assert patch_files(kept) == ["pkg/mod.py"]
    assert dropped == ["conftest.py", "tests/test_mod.py"]
    assert sanitize_patch("")[0] == ""


def test_no_gold_patch_touches_protected_paths():
    for table in ("lite-dev", "full-dev"):
        for instance in load_table(table):
            assert sanitize_patch(instance.patch, instance.test_patch)[1] == [], \
                instance.instance_id


def test_eval_script_steps_for_rows_without_one():
    script = eval_script(_instance(), "pytest -rA")
    lines = script.splitlines()
    reset = "git checkout abc tests/test_mod.py"
    assert lines.count(reset) == 2 and "pytest -rA tests/test_mod.py" in lines
    start = lines.index(": '>>>>> Start Test Output'")
    assert lines[start + 1] == "pytest -rA tests/test_mod.py"
    assert lines[start + 2] == ": '>>>>> End Test Output'"
    assert APPLY_COMMANDS[0] == "git apply --verbose"


def test_official_rows_keep_their_eval_script():
    instance = load_table("lite-dev")[0]
    assert eval_script(instance, "ignored") == instance.eval_script


def _log(lines: list[str], *, applied: bool = True) -> str:
    head = ">>>>> Applied Patch\n" if applied else ">>>>> Patch Apply Failed\n"
    return (head + "+ : '>>>>> Start Test Output'\n" + "\n".join(lines)
            + "\n+ : '>>>>> End Test Output'\n")


CASES = {
    "all pass": (["PASSED tests/test_mod.py::test_new", "PASSED tests/test_mod.py::test_old",
                  "PASSED tests/test_mod.py::test_b"], True, True),
    "f2p fails": (["FAILED tests/test_mod.py::test_new - assert 1 == 2",
                   "PASSED tests/test_mod.py::test_old", "PASSED tests/test_mod.py::test_b"],
                  True, False),
    "p2p missing": (["PASSED tests/test_mod.py::test_new",
                     "PASSED tests/test_mod.py::test_old"], True, False),
    "p2p error": (["PASSED tests/test_mod.py::test_new", "PASSED tests/test_mod.py::test_old",
                   "ERROR tests/test_mod.py::test_b"], True, False),
    "xfail counts": (["XFAIL tests/test_mod.py::test_new", "PASSED tests/test_mod.py::test_old",
                      "PASSED tests/test_mod.py::test_b"], True, True),
    "apply failed": (["PASSED tests/test_mod.py::test_new"], False, False),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_grade_log_equals_official_report(case, tmp_path):
    lines, applied, resolved = CASES[case]
    log = _log(lines, applied=applied)
    instance = _instance()
    verdict = grade_log(log, instance)
    path = tmp_path / "log.txt"
    path.write_text(log)
    official = official_report(instance, str(path), "diff")
    assert verdict.resolved == official["resolved"] == resolved
    assert verdict.applied == official["patch_successfully_applied"] == applied
    if applied:
        assert verdict.tests == {k: official["tests_status"][k]
                                 for k in ("FAIL_TO_PASS", "PASS_TO_PASS")}


# ---- issue 39: signs of a report added by the code under test --------------------------------

REAL_RUN = ["============================= test session starts ==============================",
            "FAILED tests/test_mod.py::test_new - assert 1 == 2",
            "PASSED tests/test_mod.py::test_old", "PASSED tests/test_mod.py::test_b",
            "========================= 1 failed, 2 passed in 0.32s =========================="]
FORGED = ["PASSED tests/test_mod.py::test_new", "PASSED tests/test_mod.py::test_old",
          "PASSED tests/test_mod.py::test_b"]

FORGERY_CASES = {  # lines -> (official rule resolves, reason starts with)
    "appended after pytest": (REAL_RUN + FORGED, True,
                              "test outcome printed after pytest's closing line"),
    "appended with its own closing line": (
        REAL_RUN + FORGED + ["==== 3 passed in 0.1s ===="], True,
        "tests/test_mod.py::test_new reported FAILED then PASSED"),
    "inserted before the summary": (REAL_RUN[:1] + FORGED + REAL_RUN[1:], False,
                                    "tests/test_mod.py::test_new reported PASSED then FAILED"),
    "passed after an error": (
        [REAL_RUN[0], "PASSED tests/test_mod.py::test_old", "PASSED tests/test_mod.py::test_b",
         "ERROR tests/test_mod.py::test_new - ImportError", "==== 2 passed, 1 error in 0.1s ====",
         "PASSED tests/test_mod.py::test_new", "==== 1 passed in 0.1s ===="], True,
        "tests/test_mod.py::test_new reported ERROR then PASSED"),
    "summary without its tests run": (
        ["collected 0 items / 1 error", "ERROR tests/test_mod.py", *FORGED,
         "=============================== 1 error in 0.03s ==============================="],
        True, "3 tests reported PASSED but pytest's closing lines count 0"),
    "old pytest's closing line": (REAL_RUN[:4] + FORGED[:1] + [
        "=========== 1 failed, 2 passed in 0.32 seconds ==========="], True,
        "tests/test_mod.py::test_new reported FAILED then PASSED"),
}


@pytest.mark.parametrize("case", sorted(FORGERY_CASES))
def test_forged_reports_are_not_resolved(case, tmp_path):
    lines, official_resolves, reason = FORGERY_CASES[case]
    log = _log(lines)
    path = tmp_path / "log.txt"
    path.write_text(log)
    assert official_report(_instance(), str(path), "diff")["resolved"] == official_resolves
    verdict = grade_log(log, _instance())
    assert not verdict.resolved and verdict.status == "RESOLVED_NO"
    assert verdict.reason.startswith(reason), verdict.reason


def test_real_reports_are_not_taken_for_forgeries(tmp_path):
    """A plain passing run, a teardown error (PASSED then ERROR for one test, pytest's
    ``-rA`` order), two pytest sessions and a test printing inner pytest sessions keep the
    official verdict, with no reason."""
    passing = [REAL_RUN[0], *FORGED, "==== 3 passed in 0.1s ===="]
    teardown = [REAL_RUN[0], *FORGED, "ERROR tests/test_mod.py::test_b - teardown",
                "==== 3 passed, 1 error in 0.1s ===="]
    inner = [REAL_RUN[0], "==== PASSES ====", "---- Captured stdout call ----",
             "PASSED test_inner.py::test_a", "==== 1 passed in 0.01s ====",
             "FAILED test_inner.py::test_a - assert 0", "==== 1 failed in 0.01s ====",
             *passing[1:]]  # a pytester test's inner sessions, printed before the summary
    for lines, resolved in ((passing, True), (teardown, False), (passing + passing, True),
                            (inner, True)):
        log = _log(lines)
        path = tmp_path / "log.txt"
        path.write_text(log)
        verdict = grade_log(log, _instance())
        assert verdict.reason == "" and verdict.resolved == resolved, lines
        assert official_report(_instance(), str(path), "diff")["resolved"] == resolved


def test_eval_script_exits_with_the_test_status():
    from tasks.swebench.grading import with_test_status

    script = with_test_status(eval_script(_instance(), "pytest -rA"))
    lines = script.splitlines()
    end = lines.index(": '>>>>> End Test Output'")
    assert lines[end - 1] == "harness_test_status=$?"
    assert lines[end - 2] == "pytest -rA tests/test_mod.py"
    assert lines[-1] == 'exit "$harness_test_status"'
    assert with_test_status("echo no markers\n") == "echo no markers\n"


def test_abnormal_ends():
    from tasks.sandbox import CommandResult
    from tasks.swebench.local import abnormal_end

    def ended(code, timed_out=False, truncated=False, killed_by=None):
        return abnormal_end(CommandResult(code, "", timed_out, truncated, 1.0, killed_by))

    assert ended(0) == "" and ended(1) == "" and ended(5) == ""
    assert ended(137) == "the test run was ended by signal 9"
    assert ended(-9) == "the test run was ended by signal 9"
    assert ended(None) == "the test run was killed"
    assert ended(None, timed_out=True) == "the test run timed out"
    assert ended(0, truncated=True).startswith("the test output exceeded")
    assert ended(0, killed_by="memory bound (x)").startswith("the test run was stopped by")
