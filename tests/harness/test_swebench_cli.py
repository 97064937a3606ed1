"""``harness swebench validate`` and ``crosscheck`` end to end on the bundled suite."""

from __future__ import annotations

import pytest

from harness.cli import main
from tasks.sandbox import sandbox_available

import swebench  # noqa: E402,F401 - the swebench extra (in dev) is required here


def test_unknown_instance_is_one_line_with_a_suggestion(capsys):
    assert main(["swebench", "validate", "--table", "swe-lite", "--instances",
                 "swe-lite__verkit-77"]) == 2
    assert "did you mean" in capsys.readouterr().err


@pytest.mark.skipif(sandbox_available() is not None, reason="needs the sandbox")
def test_validate_prints_the_table_and_keeps_logs(capsys, tmp_path):
    code = main(["swebench", "validate", "--table", "swe-lite", "--instances",
                 "swe-lite__verkit-1,swe-lite__collkit-4", "--logs", str(tmp_path)])
    out = capsys.readouterr().out
    assert code == 0
    assert "| swe-lite__verkit-1 | 1 | yes | yes |" in out
    assert "2 of 2 instances reproduced here" in out
    assert sorted(p.name for p in tmp_path.glob("*.log")) == [
        "swe-lite__collkit-4.empty.log", "swe-lite__collkit-4.gold.log",
        "swe-lite__verkit-1.empty.log", "swe-lite__verkit-1.gold.log"]
    assert main(["swebench", "crosscheck", "--logs", str(tmp_path)]) == 0
    assert "0 of 0 verdicts agree" in capsys.readouterr().out  # swe-lite: not upstream's repos
