"""``python -m tasks.terminal.validate``: rows per task, resumed from the results file."""

from __future__ import annotations

import json

import pytest

from tasks.terminal.base_images import BASE_IMAGES
from tasks.terminal.validate import main, summary, validate_tasks
from tests.tasks.terminal.test_terminal_loader import make_tb2


def _suite(tmp_path):
    from tasks.terminal import TerminalBenchSuite

    if not (tmp_path / "tasks").exists():
        make_tb2(tmp_path / "tasks", "no-image", dockerfile="FROM alpine:3\nRUN true\n")
        make_tb2(tmp_path / "tasks", "needs-net",
                 dockerfile="FROM debian:12\nRUN wget https://x/y\n")
    return TerminalBenchSuite(tmp_path / "tasks")


@pytest.mark.parametrize("jobs", [1, 2])
def test_rows_are_written_and_a_rerun_keeps_rows_whose_translation_is_unchanged(tmp_path, jobs):
    results = tmp_path / "rows.json"
    rows = validate_tasks(_suite(tmp_path), results, jobs=jobs)
    assert [(r.task_id, r.stage) for r in rows] == [("needs-net", "unsupported"),
                                                   ("no-image", "unsupported")]
    assert summary(rows) == {"tasks": 2, "unsupported": 2, "supported": 0, "built": 0,
                             "oracle_passes": 0, "submit_passes": 0}
    stored = json.loads(results.read_text())
    stored["tasks"]["no-image"]["reason"] = "kept from the first run"
    stored["tasks"]["needs-net"]["key"] = "stale"
    results.write_text(json.dumps(stored))
    again = {r.task_id: r for r in validate_tasks(_suite(tmp_path), results, jobs=jobs)}
    assert again["no-image"].reason == "kept from the first run"  # resumed, not re-measured
    assert "needs the network" in again["needs-net"].reason  # its key changed: measured again


def test_the_command_writes_a_manifest_with_provenance(tmp_path, capsys):
    _suite(tmp_path)
    manifest = tmp_path / "manifest.json"
    code = main(["--tasks", str(tmp_path / "tasks"), "--results", str(tmp_path / "r.json"),
                 "--manifest", str(manifest), "--commit", "abc123"])
    written = json.loads(manifest.read_text())
    assert code == 0 and written["commit"] == "abc123"
    assert written["environments_on_disk"] == {"rootfs": 0, "layers": 0, "bytes": 0}
    assert written["tasks"]["no-image"] == {
        "builds": None, "oracle": None, "submit": None, "stage": "unsupported",
        "reason": "base image alpine:3 is not emulated (known: "
                  + ", ".join(image.label for image in BASE_IMAGES) + ")"}
    assert "unsupported=2" in capsys.readouterr().out


def test_an_unknown_task_id_is_one_line_and_exit_2(tmp_path, capsys):
    _suite(tmp_path)
    code = main(["--tasks", str(tmp_path / "tasks"), "--only", "no-imag",
                 "--results", str(tmp_path / "r.json")])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "no-image" in err
