"""The leaderboard's list of errored episodes (issue 40): every (suite, policy) with episodes
that errored or timed out gets one line under the table, with the reasons a user can act on."""

import dataclasses
import re

import pandas as pd

from harness.cli import main
from harness.report.leaderboard import error_notes
from harness.store import Store, load_episodes
from tests.harness.test_store import STEPS, _episode


def _stored(tmp_path, records):
    with Store(tmp_path / "e.db") as store:
        store.begin_run("r", {}, {})
        for record in records:
            store.write_episode("r", record, STEPS)
    return load_episodes(tmp_path / "e.db")


def test_errors_are_counted_with_their_reasons_most_frequent_first(tmp_path):
    timeout = dataclasses.replace(_episode("t3", status="timeout"),
                                  error="episode exceeded 600.0s")
    other = dataclasses.replace(_episode("t4", status="error"),
                                error="Traceback ...\nSandboxError: git diff ran past 120 s\n\n")
    episodes = _stored(tmp_path, [_episode("t0"), _episode("t1", status="error"),
                                  _episode("t2", status="error"), timeout, other])
    assert error_notes(episodes) == [
        "! frozenlake@1 / random: 4 of 5 episodes errored (counted as failures): "
        "error: ValueError: boom (2); error: SandboxError: git diff ran past 120 s (1); "
        "timeout: episode exceeded 600.0s (1)"]
    assert error_notes(episodes, reasons=1)[0].endswith(
        "error: ValueError: boom (2); 2 more with 2 other reasons")


def test_no_errors_no_lines_and_long_or_missing_reasons_stay_one_line():
    frame = pd.DataFrame({"suite": ["s@1"] * 3, "policy": ["p"] * 3,
                          "status": ["ok", "error", "error"],
                          "error": [None, "x" * 500 + "\x1b[2J", None]})
    assert error_notes(frame[frame.status == "ok"]) == []
    (line,) = error_notes(frame)
    assert line.startswith("! s@1 / p: 2 of 3 episodes errored (counted as failures): ")
    assert "error: no reason stored (1)" in line and "\x1b" not in line and "\n" not in line
    assert f"error: {'x' * 199}… (1)" in line


def test_the_leaderboard_lists_timed_out_episodes_with_their_reason(tmp_path, capsys):
    """A run whose episodes time out (a limit of 0.1 ms): the leaderboard counts them in its
    errors column and names the reason under the table, in both formats."""
    db = str(tmp_path / "t.db")
    assert main(["run", "--policy", "oracle", "--suite", "sokoban", "--tasks", "6",
                 "--timeout", "0.0001", "--max-error-rate", "1", "--db", db]) == 0
    frame = load_episodes(db)
    errored = int((frame.status != "ok").sum())
    assert errored > 0 and set(frame.status) <= {"ok", "timeout"}
    capsys.readouterr()
    for form in ("markdown", "terminal"):
        assert main(["leaderboard", "--db", db, "--format", form]) == 0
        out = capsys.readouterr().out
        assert re.search(rf"^! sokoban@1 / oracle: {errored} of 6 episodes errored \(counted as "
                         rf"failures\): timeout: episode exceeded 0\.0001s \({errored}\)$", out,
                         re.MULTILINE), out


def test_the_viewer_board_carries_the_same_lines(tmp_path):
    from harness.view.boards import compute_board

    episodes = _stored(tmp_path, [_episode("t0"), _episode("t1", status="error")])
    board = compute_board(tmp_path / "e.db", "", "")
    assert board.notes[:1] == tuple(error_notes(episodes))
    assert board.notes[0].startswith("! frozenlake@1 / random: 1 of 2 episodes errored")
