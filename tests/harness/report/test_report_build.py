"""`build_report` and `harness report`: the folder, provenance, audit runs kept apart, errors."""

import json

import pytest

import harness.cli
from harness.audit import AuditConfig, audit_suite
from harness.cli import main
from harness.core import HarnessError
from harness.report.bench import bench_report, synthetic_store
from harness.report.build import ReportOptions, build_report
from harness.store import Store, load_episodes
from harness.train.metrics_table import write_train_metrics


@pytest.fixture(autouse=True)
def report_command(monkeypatch):
    monkeypatch.setattr(harness.cli, "COMMAND_MODULES",
                        (*harness.cli.COMMAND_MODULES, "harness.report.commands"))


def test_report_command_writes_the_folder(small_db, tmp_path, capsys):
    audit = audit_suite(AuditConfig("frozenlake@1", n_tasks=4, k=2, db=str(small_db)))
    with Store(small_db) as store:  # a training log: learning curves appear
        for seed in (0, 1):
            for step in range(3):
                write_train_metrics(store, "hand-run", seed, step, {
                    "success": 0.1 * step + 0.05 * seed, "mean_reward": 0.2 * step})
    out = tmp_path / "rep"
    assert main(["report", "--db", str(small_db), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "report of 182 episodes (5 policies x 2 suites, tables on split test) and 1 audits" \
        in printed
    from harness.compute import compute_provenance, describe_compute

    assert f"  compute {describe_compute(compute_provenance())}" in printed  # the audit's runs
    for name in ("index.html", "README.md", "provenance.json", "tables/tables.tex",
                 "tables/leaderboard.md", "tables/comparisons.tex", "tables/pass-at-k.md",
                 "tables/audit-summary.tex", "figures/forest-alpha@1.pdf",
                 "figures/forest-beta@1.png", "figures/task-types.pdf",
                 "figures/performance-profile.png", "figures/probability-of-improvement.pdf",
                 "figures/pass-at-k-alpha@1.pdf", "figures/learning-curves-success.pdf",
                 "figures/learning-curves-mean_reward.png"):
        assert (out / name).is_file(), name
    page_wide = sorted(p.name for p in (out / "figures").glob("*.p*"))
    column = sorted(p.name for p in (out / "figures" / "column").glob("*.p*"))
    assert column == page_wide  # every figure also at 3.5 in: 5 policies fit a page
    provenance = json.loads((out / "provenance.json").read_text())
    assert provenance["command"] == f"harness report --db {small_db} --out {out}"
    assert [r["run_id"] for r in provenance["runs"]] == sorted(["hand-run", *audit.run_ids])
    assert provenance["audits"] == [audit.audit_id]
    assert provenance["episodes"] == 182 and provenance["packages"]["matplotlib"]
    readme = (out / "README.md").read_text()
    assert provenance["command"] in readme and "![forest-alpha@1](figures/forest-alpha@1.png)" \
        in readme
    # audit runs feed the audit tables, not the leaderboard
    board = (out / "tables" / "leaderboard.md").read_text()
    assert "noop:always-left" not in board and "| strong |" in board


def test_selected_runs_and_split(small_db, tmp_path):
    summary = build_report(small_db, tmp_path / "r", command="x",
                           options=ReportOptions(run_ids=("hand-run",), split="train",
                                                 figures=False))
    assert summary.split == "train"
    board = (tmp_path / "r" / "tables" / "leaderboard.md").read_text()
    assert "beta@1" in board and "alpha@1" not in board  # train episodes are beta only


@pytest.mark.parametrize("args,fragment", [
    (["--split", "dev"], "no episodes of split 'dev'"),
    (["--max-compare", "1"], "--max-compare must be >= 2"),
])
def test_report_user_errors(small_db, tmp_path, capsys, args, fragment):
    assert main(["report", "--db", str(small_db), "--out", str(tmp_path / "r"), *args]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and fragment in err[0]


def test_empty_and_missing_stores(tmp_path):
    with pytest.raises(HarnessError, match="no results database"):
        build_report(tmp_path / "none.db", tmp_path / "r", command="x")
    Store(tmp_path / "empty.db").close()
    with pytest.raises(HarnessError, match="holds no episodes and no audits"):
        build_report(tmp_path / "empty.db", tmp_path / "r", command="x")


def test_audit_only_store_reports_the_audit(tmp_path):
    db = tmp_path / "a.db"
    audit_suite(AuditConfig("sokoban@1", n_tasks=4, k=2, db=str(db)))
    summary = build_report(db, tmp_path / "r", command="x")
    assert summary.n_episodes == 0 and summary.n_audits == 1
    assert (tmp_path / "r" / "tables" / "audit-summary.md").read_text().count("| sokoban@1 |") == 1
    assert "Benchmark audits" in (tmp_path / "r" / "index.html").read_text()


def test_synthetic_store_and_small_bench(tmp_path):
    db = synthetic_store(tmp_path / "s.db", n_policies=3, n_suites=2, tasks_per_type=2)
    frame = load_episodes(db)
    assert len(frame) == 3 * 2 * 3 * 2 * 2  # policies x suites x types x tasks x seeds
    assert set(frame["policy"]) == {"policy-00", "policy-01", "policy-02"}
    assert set(frame["task_type"]) == {"easy", "medium", "hard"} and frame["n_steps"].eq(3).all()
    result = bench_report(n_policies=3, n_suites=2)
    assert result["episodes"] == 3 * 2 * 3 * 20 * 2 and result["render_s"] > 0
    assert result["files"] > 10
