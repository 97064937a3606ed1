"""`harness signals` end to end: every family on frozenlake and sokoban, the LLM families on a
tiny local model served by a real `harness serve` subprocess (the numbers are poor; the
pipeline is real)."""

import numpy as np
import pytest

import harness.cli
from harness.signal_eval import cli as signals_cli
from harness.signal_eval.tables import load_signal_points, load_signal_results
from harness.signal_eval.pipeline import SignalsConfig, summary_from_store
from harness.store import Store
from signals.registry import FAMILIES, signal_info, signal_names


@pytest.fixture
def harness_main(monkeypatch):
    monkeypatch.setattr(harness.cli, "COMMAND_MODULES",
                        (*harness.cli.COMMAND_MODULES, "harness.signal_eval.cli"))
    return harness.cli.main


@pytest.mark.slow
@pytest.mark.parametrize("suite", ["frozenlake", "sokoban"])
def test_all_families_run_end_to_end_through_harness_serve(suite, served_url, harness_main,
                                                           tmp_path, capsys):
    db = str(tmp_path / "signals.db")
    code = harness_main(["signals", "--suite", suite, "--points", "3", "--reference", "exact",
                         "--signals", "all", "--model", f"openai:tiny@{served_url}",
                         "--db", db, "--tasks", "2", "--eval-seeds", "2", "--resamples",
                         "200", "--report-dir", str(tmp_path)])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "failed" not in out
    with Store(db) as store:
        set_id = next(line.split()[2] for line in out.splitlines()
                      if line.startswith("point set"))
        points = load_signal_points(store, set_id)["points"]
        results = load_signal_results(store, set_id)
    assert len(points) >= 2
    assert {r["signal"] for r in results} == set(signal_names())
    assert {signal_info(r["signal"]).family for r in results} == set(FAMILIES)
    for result in results:
        assert result["info"]["error"] is None, result
        assert result["model"] == "tiny"
        for point, scores in zip(points, result["scores"]):
            assert len(scores) == len(point["candidates"]) and np.isfinite(scores).all()
    report = next(tmp_path.glob("signals-*.md")).read_text()
    assert "| baselines | reference" in report and "rank-list" in report


def test_cli_without_a_model_reports_the_model_families_as_failed(harness_main, tmp_path,
                                                                  capsys):
    db = str(tmp_path / "nomodel.db")
    code = harness_main(["signals", "--suite", "frozenlake", "--points", "5", "--signals",
                         "baselines,judge-single", "--db", db, "--tasks", "2",
                         "--resamples", "100", "--report-dir", str(tmp_path)])
    out = capsys.readouterr().out
    assert code == 0
    assert "reference*" in out and "needs a model" in out
    set_id = next(line.split()[2] for line in out.splitlines() if line.startswith("point set"))
    with Store(db) as store:
        summary, scored = summary_from_store(store, set_id)
    assert [s.name for s in scored] == ["random", "reference", "progress", "judge-single"]
    assert summary.interval("reference", "kendall_tau").estimate == 1.0
    assert "needs a model" in summary.errors["judge-single"]
    assert harness_main(["signals", "--suite", "frozenlak", "--db", db]) == 2
    assert "did you mean 'frozenlake'" in capsys.readouterr().err
    assert harness_main(["signals", "--list"]) == 0
    assert len(capsys.readouterr().out.splitlines()) == len(signal_names())


def test_cli_defaults_match_the_config():
    config = SignalsConfig()
    for name, value in signals_cli.DEFAULTS.items():
        assert getattr(config, name) == value, name
