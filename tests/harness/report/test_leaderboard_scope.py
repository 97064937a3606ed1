"""Like with like: a leaderboard ranks evaluation runs, not audits, unless asked; runs of one
evaluation design pool with each episode key counted once; runs of different designs are
separate rows (the CLI, the report and the viewer share `scoped_episodes`)."""

import pytest

from harness.cli import main
from harness.report.leaderboard import design_of, leaderboard_table, scoped_episodes
from harness.view.boards import compute_board


def _markdown_rows(capsys, *argv) -> list[list[str]]:
    capsys.readouterr()
    assert main(["leaderboard", "--format", "markdown", *argv]) == 0
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| ")]
    return [[cell.strip() for cell in line.strip("|").split("|")] for line in lines[1:]]


def test_design_labels_by_hand():
    assert design_of({"split": "test", "samples": 1, "max_steps": None}) == (
        "split=test, samples=1, max_steps=env")
    assert design_of({"split": "dev", "samples": 4, "max_steps": 7, "n_tasks": 5}) == (
        "split=dev, samples=4, max_steps=7")


def test_a_widened_run_counts_each_key_once(tmp_path, capsys):
    db = str(tmp_path / "w.db")
    for tasks in ("5", "8"):
        assert main(["run", "--suite", "frozenlake", "--policy", "oracle,random", "--tasks",
                     tasks, "--db", db]) == 0
    episodes = scoped_episodes(db)
    assert episodes.groupby("policy").size().to_dict() == {"oracle": 8, "random": 8}
    rows = _markdown_rows(capsys, "--db", db)
    assert sorted((row[1], row[5]) for row in rows) == [("oracle", "8"), ("random", "8")]


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_the_quickstart_table_leaves_audits_out_and_designs_apart(tmp_path, capsys):
    db = str(tmp_path / "q.db")
    assert main(["quickstart", "--db", db]) == 0
    rows = _markdown_rows(capsys, "--db", db)
    assert len(rows) == 12 and {row[1] for row in rows} == {"oracle", "random", "noop"}
    assert all("—" not in row[3] and "—" not in row[4] for row in rows)  # both intervals
    assert rows == _markdown_rows(capsys, "--db", db, "--run-id", "quickstart")
    with_audits = _markdown_rows(capsys, "--db", db, "--include-audits")
    assert len(with_audits) > 12 and any(":" in row[1] for row in with_audits)

    assert main(["run", "--suite", "frozenlake", "--policy", "oracle,random", "--max-steps",
                 "5", "--db", db]) == 0
    frozen = [row for row in _markdown_rows(capsys, "--db", db) if row[0] == "frozenlake@1"]
    assert sorted(row[1] for row in frozen) == [
        "noop [max_steps=env]", "oracle [max_steps=5]", "oracle [max_steps=env]",
        "random [max_steps=5]", "random [max_steps=env]"]
    board = compute_board(db, "", "")
    assert [list(cells) for cells in board.cells] == _markdown_rows(capsys, "--db", db)
    table = leaderboard_table(scoped_episodes(db, suite="frozenlake@1"))
    capped = table[table.policy == "oracle [max_steps=5]"].iloc[0]
    assert capped.n == 100 and capped.success == 0.0  # five steps reach no goal: its own row
