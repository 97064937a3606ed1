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


@pytest.mark.parametrize("flags, says", [
    (["--instances", ",,,"], "names no instance"),
    (["--instances", " , "], "names no instance"),
    (["--timeout", "-1"], "--timeout -1.0: must be a positive"),
    (["--timeout", "0"], "--timeout 0.0: must be a positive"),
    (["--timeout", "nan"], "--timeout nan: must be a positive"),
    (["--timeout", "inf"], "--timeout inf: must be a positive"),
    (["--jobs", "0"], "--jobs 0: must be at least 1"),
    (["--limit", "0"], "--limit must be positive"),
    (["--all", "--instances", "swe-lite__verkit-1"], "--all and --instances conflict"),
])
def test_bad_validate_flags_are_one_line_and_exit_2(capsys, flags, says):
    assert main(["swebench", "validate", "--table", "swe-lite", *flags]) == 2
    err = capsys.readouterr().err.strip()
    assert says in err
    assert len(err.splitlines()) == 1


@pytest.mark.parametrize("flag", ["--logs", "--results"])
def test_a_log_or_results_path_that_is_a_file_is_one_line(capsys, tmp_path, flag):
    existing = tmp_path / "notes.txt"
    existing.write_text("x")
    assert main(["swebench", "validate", "--table", "swe-lite", "--instances",
                 "swe-lite__verkit-1", flag, str(existing)]) == 2
    err = capsys.readouterr().err.strip()
    assert f"{flag} {existing}: is a file, not a folder" in err
    assert len(err.splitlines()) == 1
    assert main(["swebench", "crosscheck", "--logs", str(existing)]) == 2
    assert "not a folder" in capsys.readouterr().err


def test_a_manifest_path_that_is_a_folder_is_one_line(capsys, tmp_path):
    assert main(["swebench", "validate", "--table", "swe-lite", "--manifest",
                 str(tmp_path)]) == 2
    assert "is a folder, not a file" in capsys.readouterr().err


@pytest.mark.skipif(sandbox_available() is not None, reason="needs the sandbox")
def test_validate_stores_results_resumes_and_writes_a_manifest(capsys, tmp_path):
    import json

    argv = ["swebench", "validate", "--table", "swe-lite", "--instances",
            "swe-lite__verkit-1", "--results", str(tmp_path / "results"),
            "--manifest", str(tmp_path / "manifest.json")]
    assert main(argv) == 0
    stored = json.loads((tmp_path / "results" / "swe-lite__verkit-1.result.json").read_text())
    assert stored["reproduced"] is True and stored["harness_version"]
    capsys.readouterr()
    assert main(argv) == 0  # resumed: nothing runs again
    captured = capsys.readouterr()
    assert "resuming: 1 instances already validated" in captured.err
    assert "| swe-lite__verkit-1 | 1 | yes | yes |" in captured.out
    assert "| swe-lite/verkit | 1 | 1 |" in captured.out
    written = json.loads((tmp_path / "manifest.json").read_text())
    assert written["summary"] == {"attempted": 1, "reproduced": 1}
    assert written["instances"]["swe-lite__verkit-1"]["reproduced"] is True
    assert written["provenance"]["command"].startswith("harness swebench validate")
