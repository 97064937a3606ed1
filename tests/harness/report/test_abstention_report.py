"""The abstention metrics in `harness leaderboard --metric`, `harness report` and its LaTeX
tables, on episodes of the refusal rule on medagentbench-v1's potassium and HbA1C tasks,
against the rule's hand-computed coverage (see tests/tasks/medagentbench/
test_mab_abstention.py)."""

from __future__ import annotations

import pytest

from harness.cli import ABSTENTION_METRICS, main
from harness.stats.abstention import METRICS
from tasks.base import get_suite
from tests.tasks.abstention_support import confidence, play_thresholds

SUITE = "medagentbench-v1@1"
TYPES = ("task9", "task10")
THRESHOLDS = (0.0, 0.5, 1.0)


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    path = tmp_path_factory.mktemp("abstention-report") / "r.db"
    play_thresholds(path, SUITE, THRESHOLDS, task_types=TYPES)
    run_noop = tmp_path_factory.mktemp("plain") / "plain.db"  # no declared answerability
    assert main(["run", "--policy", "noop", "--suite", "minesweeper", "--tasks", "2",
                 "--db", str(run_noop)]) == 0
    return path, run_noop


def _coverage(threshold: float) -> float:
    answerable = [t for t in get_suite(SUITE).tasks("test")
                  if t.task_type in TYPES and t.answerability.answerable]
    return sum(confidence(t.id, True) >= threshold for t in answerable) / len(answerable)


def test_parser_offers_every_metric():
    assert ABSTENTION_METRICS == METRICS


def test_leaderboard_metric(db, capsys):
    path, plain = db
    assert main(["leaderboard", "--db", str(path), "--metric", "coverage"]) == 0
    out = capsys.readouterr().out
    assert "coverage (correct / answerable)" in out
    cells = [[c.strip() for c in line.split("│")[1:-1]] for line in out.splitlines()
             if "refuse:" in line]
    by_policy = {row[1]: row for row in cells}
    for threshold in THRESHOLDS:
        row = by_policy[f"refuse:{threshold:g}"]
        assert row[2] == f"{100 * _coverage(threshold):.1f}", threshold
    assert main(["leaderboard", "--db", str(path), "--metric", "f1_answer_abstain",
                 "--format", "markdown"]) == 0
    out = capsys.readouterr().out
    assert "| refuse:0 |" in out and "RA-F1 candidate 2" in out
    assert main(["leaderboard", "--db", str(plain), "--metric", "precision"]) == 2
    assert "no episode declares answerability" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["leaderboard", "--db", str(path), "--metric", "ra_f1"])


def test_report_writes_the_abstention_and_curve_tables(db, tmp_path):
    path, _ = db
    out = tmp_path / "report"
    assert main(["report", "--db", str(path), "--out", str(out), "--no-figures"]) == 0
    tables = out / "tables"
    markdown = (tables / "abstention.md").read_text()
    assert "F1 (prec., cov.)" in markdown and "F1 (answer, abstain)" in markdown
    assert "refuse:0.5" in markdown and f"{100 * _coverage(0.5):.1f}" in markdown
    latex = (tables / "abstention.tex").read_text()
    assert r"\begin{tabular}" in latex and "refuse:0.5" in latex
    curve = (tables / "coverage-precision.md").read_text()
    # precision is 1 wherever anything is answered: the area is the coverage spanned
    assert f"{_coverage(0.0) - _coverage(0.5):.3f}" in curve
    assert "refuse:*" in curve
    master = (tables / "tables.tex").read_text()
    assert r"\input{abstention}" in master and r"\input{coverage-precision}" in master
    assert "Abstention metrics" in (out / "README.md").read_text()


def test_compare_on_an_abstention_metric(db, capsys):
    """refuse:0 answers every answerable task right, refuse:0.5 declines those whose draw is
    below 0.5: the coverage difference is the share declined."""
    path, _ = db
    assert main(["compare", "--db", str(path), "--a", "refuse:0", "--b", "refuse:0.5",
                 "--metric", "coverage", "--resamples", "500"]) == 0
    out = capsys.readouterr().out
    assert f"A - B {_coverage(0.0) - _coverage(0.5):+.4f}" in out
    assert "20 paired keys over 20 tasks" in out and "permutation p" in out
