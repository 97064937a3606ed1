"""The quickstart's ending: an audit of each embedded suite and a report folder."""

from harness.audit.records import load_audits
from harness.quickstart import QUICKSTART_SUITES, finish_quickstart, next_steps, \
    quickstart_config
from harness.runner import run
from tasks import resolve_suite_id


def test_finish_quickstart_audits_every_suite_and_writes_a_report(tmp_path):
    db = str(tmp_path / "q.db")
    summary = run(quickstart_config(db, n_tasks=4))
    out = tmp_path / "reports" / "quickstart"
    lines = finish_quickstart(summary, db, out=out, n_tasks=4)
    assert [line.split(":")[0] for line in lines[:4]] == [f"audit {s}" for s in
                                                          QUICKSTART_SUITES]
    assert "audit frozenlake@1: oracle 100.0%" in lines[0]
    assert "audit sokoban@1: oracle 100.0%" in lines[2]
    assert lines[4].startswith(f"report: {out}/") and (out / "index.html").is_file()
    assert lines[5] == f"browse runs, episodes and comparisons: harness view --db {db}"
    assert lines[6:] == next_steps(db)
    assert {a.suite for a in load_audits(db)} == set(QUICKSTART_SUITES)
    board = (out / "tables" / "leaderboard.md").read_text()
    assert "| oracle |" in board and "audit:empty" not in board


def test_next_steps_name_tau_bench_and_db_bench_with_one_command_each():
    lines = next_steps("results/harness.db")
    assert lines[0] == "next steps:" and len(lines) == 3
    assert "τ-bench" in lines[1] and lines[1].endswith(
        ": harness run --policy oracle,random --suite taubench-retail --tasks 20 "
        "--db results/harness.db")
    assert "DB-Bench" in lines[2] and "mariadb-server" in lines[2] and lines[2].endswith(
        ": harness run --policy oracle,random --suite dbbench --tasks 20 --db results/harness.db")
    for line in lines[1:]:  # each command names a registered suite
        words = line.split()
        resolve_suite_id(words[words.index("--suite") + 1])
