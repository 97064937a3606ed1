"""Verdicts, status and report from scripted episodes in the store (no training)."""

from __future__ import annotations

import json

import numpy as np
import pytest

import harness.cli
from harness.store import Store
from harness.study.analysis import analyse_study, paired_differences, study_frame
from harness.study.config import load_study_config
from harness.study.run import run_study, study_status

from tests.harness.study.support import write_scripted_episodes, write_study

BIG_EVAL = "n_tasks = 20\neval_seeds = [0, 1, 2, 3, 4, 5, 6, 7]\nsamples = 2"
GOOD = "lr=0.0003,kl_coef=0.04"


@pytest.fixture
def big(tmp_path):
    study = load_study_config(write_study(tmp_path, eval_section=BIG_EVAL))
    rates = {a.name: 0.4 for a in study.arms_resolved()}
    rates[GOOD] = 0.75
    offsets = np.linspace(-0.2, 0.2, 20)
    write_scripted_episodes(study, rates, np.random.default_rng(0), task_rates=offsets)
    return study


def test_paired_differences_broadcast_the_one_model_baseline(big):
    d, mean_arm, mean_base = paired_differences(study_frame(big), GOOD, "start", mode="greedy")
    assert d.shape == (3, 20, 8)
    assert mean_arm - mean_base == pytest.approx(d.mean())


def test_a_strong_cell_is_better_and_null_cells_are_not(big):
    analysis = analyse_study(big)
    cells = analysis.cells
    assert set(cells["mode"]) == {"greedy", "sampled"}
    good = cells[(cells["arm"] == GOOD) & (cells["mode"] == "greedy")].iloc[0]
    assert good["verdict"] == "better" and good["low"] > 0 and good["boot_low"] > 0
    assert good["estimate"] == pytest.approx(good["mean_arm"] - good["mean_baseline"])
    others = cells[cells["arm"] != GOOD]
    assert not others["verdict"].isin(["better", "worse"]).any()
    assert (cells["family"] == 4).all() and (cells["mde"] > 0).all()
    assert "holm" in analysis.rules["greedy"]
    assert set(analysis.association["arm"]) == set(cells["arm"])
    assert analysis.headroom is not None and {"headroom", "gain"} <= set(analysis.headroom)


def test_arms_that_all_fail_are_inconclusive_not_equivalent(tmp_path):
    """Every episode of every arm fails (the floor): no cell is called equivalent, and its
    power and minimum detectable effect are unknown."""
    study = load_study_config(write_study(tmp_path))
    write_scripted_episodes(study, {a.name: -1.0 for a in study.arms_resolved()},
                            np.random.default_rng(0))
    cells = analyse_study(study).cells
    assert (cells["mean_arm"] == 0).all() and (cells["estimate"] == 0).all()
    assert (cells["verdict"] == "inconclusive").all() and cells["no_variation"].all()
    assert cells["mde"].isna().all() and cells["power_at_smallest"].isna().all()
    from harness.study.report import verdict_table

    assert (verdict_table(cells)["MDE"] == "no variation").all()


def test_a_complete_study_runs_nothing_again(big):
    before = len(study_frame(big))
    status = run_study(big)  # every episode stored: no training, no evaluation
    assert len(study_frame(big)) == before
    assert (status["greedy_stored"] == status["greedy_expected"]).all()


def test_status_counts_partial_progress(tmp_path):
    study = load_study_config(write_study(tmp_path))
    write_scripted_episodes(study, {a.name: 0.5 for a in study.arms_resolved()},
                            np.random.default_rng(1), arms=("start",))
    with Store(study.db) as store:
        status = study_status(study, store)
    start = status[status["arm"] == "start"].iloc[0]
    assert start["greedy_stored"] == start["greedy_expected"] == 24
    assert (status[status["arm"] != "start"]["greedy_stored"] == 0).all()
    assert (status["step"] == -1).all()


def test_a_version_1_jobs_table_is_upgraded_and_keeps_its_rows(tmp_path):
    """A database a study wrote before the ``work`` column: its row reads with no work (the
    whole job), and a new row records its work."""
    import sqlite3

    from harness.study.run import STUDY_TABLES, _record, load_study_jobs

    study = load_study_config(write_study(tmp_path))
    with Store(study.db):
        pass  # the core tables
    with sqlite3.connect(study.db) as db:
        db.executescript(STUDY_TABLES.migrations[0])
        db.execute("INSERT INTO meta VALUES ('tables:study_jobs', '1')")
        db.execute("INSERT INTO study_jobs VALUES ('t', 'start', 0, 'greedy', 'r', 2.5, '{}', 1)")
    with Store(study.db) as store:
        _record(store, study, study.arm("start"), 0, "sampled", "r", 4.0, {"episodes": 3})
        jobs = load_study_jobs(store, study).set_index("job")
    assert jobs.loc["greedy", "wall_s"] == 2.5 and not isinstance(jobs.loc["greedy", "work"], str)
    assert json.loads(jobs.loc["sampled", "work"]) == {"episodes": 3}


@pytest.fixture
def cli(monkeypatch):
    if "harness.study.cli" not in harness.cli.COMMAND_MODULES:
        monkeypatch.setattr(harness.cli, "COMMAND_MODULES",
                            (*harness.cli.COMMAND_MODULES, "harness.study.cli"))
    return harness.cli.main


def test_cli_status_and_report(cli, big, tmp_path, capsys):
    path = str(tmp_path / "study.toml")
    assert cli(["study", "status", path]) == 0
    assert "greedy_stored" in capsys.readouterr().out
    out_dir = tmp_path / "rep"
    assert cli(["study", "report", path, "--out", str(out_dir)]) == 0
    out = capsys.readouterr().out
    assert "better" in out and "rule (greedy)" in out
    for name in ("report.md", "verdicts.md", "verdicts.tex", "verdicts.csv", "forest.png",
                 "heatmap-greedy.png", "headroom.png", "methods.md"):
        assert (out_dir / name).stat().st_size > 0, name
    methods = (out_dir / "methods.md").read_text()
    assert "3 training seeds" in methods and "holm" in methods and "8 evaluation seeds" in methods


def test_cli_user_errors_exit_2(cli, tmp_path, capsys):
    assert cli(["study", "status", str(tmp_path / "missing.toml")]) == 2
    assert "does not exist" in capsys.readouterr().err
    path = write_study(tmp_path)
    assert cli(["study", "report", path]) == 2
    assert "no results database" in capsys.readouterr().err


def test_a_graft_is_compared_with_its_target_and_its_source(tmp_path):
    from harness.study.report import grafting_table

    path = write_study(tmp_path, eval_section=BIG_EVAL)
    with open(path, "a") as handle:
        handle.write(f'\n[[grafts]]\nname = "g-mlp"\nsource = "{GOOD}"\ngroups = ["mlp"]\n')
    study = load_study_config(path)
    rates = {a.name: 0.4 for a in study.arms_resolved()}
    rates[GOOD] = rates["g-mlp"] = 0.75  # the graft carries the whole effect
    write_scripted_episodes(study, rates, np.random.default_rng(0),
                            task_rates=np.linspace(-0.2, 0.2, 20))
    cells = analyse_study(study).cells
    mine = cells[(cells["arm"] == "g-mlp") & (cells["mode"] == "greedy")].set_index("role")
    assert mine.loc["graft", "baseline"] == "start" and mine.loc["graft", "verdict"] == "better"
    assert mine.loc["graft-vs-source", "baseline"] == GOOD
    assert mine.loc["graft-vs-source", "verdict"] in ("equivalent", "inconclusive")
    assert (cells.loc[cells["role"] == "cell", "family"] == 4).all()  # grafts not in the family
    table = grafting_table(study, cells).set_index("mode")
    assert table.loc["greedy", "groups"] == "mlp" and table.loc["greedy", "source"] == GOOD
    assert table.loc["greedy", "vs target"].endswith("better")
    assert table.loc["greedy", "vs source"].startswith(
        f"{mine.loc['graft-vs-source', 'estimate']:+.3f}")


def test_the_grafts_comparisons_are_one_family_adjusted_together(tmp_path):
    from statsmodels.stats.multitest import multipletests

    from harness.study.report import methods_paragraph

    path = write_study(tmp_path, eval_section=BIG_EVAL)
    with open(path, "a") as handle:
        for name, group in (("g-mlp", "mlp"), ("g-emb", "embeddings")):
            handle.write(f'\n[[grafts]]\nname = "{name}"\nsource = "{GOOD}"\n'
                         f'groups = ["{group}"]\n')
    study = load_study_config(path)
    rates = {a.name: 0.4 for a in study.arms_resolved()}
    rates[GOOD] = rates["g-mlp"] = 0.75
    rates["g-emb"] = 0.45  # a small effect: alone it may pass, in the family of four less so
    write_scripted_episodes(study, rates, np.random.default_rng(0),
                            task_rates=np.linspace(-0.2, 0.2, 20))
    cells = analyse_study(study).cells
    for mode in ("greedy", "sampled"):
        grafts = cells[cells["role"].isin(["graft", "graft-vs-source"])
                       & (cells["mode"] == mode)]
        assert len(grafts) == 4 and (grafts["family"] == 4).all()
        holm = multipletests(grafts["p_value"], alpha=0.05, method="holm")[1]
        np.testing.assert_allclose(grafts["p_adjusted"], holm, rtol=1e-9)
    assert (cells.loc[cells["role"] == "cell", "family"] == 4).all()  # the grid's own family
    methods = methods_paragraph(study, analyse_study(study), [])
    assert "these 4 comparisons were adjusted as one family (holm)" in methods


def test_merges_are_read_against_their_baseline_and_each_other(tmp_path):
    from harness.study.report import merging_table

    path = write_study(tmp_path, eval_section=BIG_EVAL)
    merges = "".join(f'\n[[merges]]\nname = "{name}"\nmethod = "{name}"\nsources = '
                     f'["lr=0.0001,kl_coef=0", "{GOOD}"]\nbaseline = "{GOOD}"\n'
                     for name in ("ties", "ram"))
    with open(path, "a") as handle:
        handle.write(merges)
    study = load_study_config(path)
    rates = {a.name: 0.4 for a in study.arms_resolved()}
    rates[GOOD] = rates["ties"] = 0.75  # ties matches the joint model, ram falls short
    write_scripted_episodes(study, rates, np.random.default_rng(1),
                            task_rates=np.linspace(-0.2, 0.2, 20))
    cells = analyse_study(study).cells
    greedy = cells[cells["mode"] == "greedy"].set_index(["arm", "baseline"])
    assert greedy.loc[("ties", GOOD), "role"] == "merge"
    assert greedy.loc[("ties", GOOD), "verdict"] in ("equivalent", "inconclusive")
    assert greedy.loc[("ram", GOOD), "verdict"] == "worse"
    assert greedy.loc[("ties", "ram"), "role"] == "merge-vs-merge"
    assert greedy.loc[("ties", "ram"), "verdict"] == "better"
    assert greedy.loc[("ties", "ram"), "family"] == 1  # one pair: a family of one
    table = merging_table(study, cells)
    assert set(zip(table["merge"], table["vs"])) == {("ties", GOOD), ("ram", GOOD),
                                                     ("ties", "ram")}
    assert set(table["method"]) == {"ties", "ram"}


def test_merge_pairs_are_adjusted_as_one_family(tmp_path):
    path = write_study(tmp_path, eval_section=BIG_EVAL)
    names = ("ties", "ram", "linear")
    with open(path, "a") as handle:
        handle.write("".join(f'\n[[merges]]\nname = "{name}"\nmethod = "{name}"\nsources = '
                             f'["lr=0.0001,kl_coef=0", "{GOOD}"]\nbaseline = "{GOOD}"\n'
                             for name in names))
    study = load_study_config(path)
    write_scripted_episodes(study, {a.name: 0.5 for a in study.arms_resolved()},
                            np.random.default_rng(2), task_rates=np.linspace(-0.2, 0.2, 20))
    cells = analyse_study(study).cells
    pairs = cells[(cells["role"] == "merge-vs-merge") & (cells["mode"] == "greedy")]
    assert len(pairs) == 3 and (pairs["family"] == 3).all()
    assert (pairs["p_adjusted"] >= pairs["p_value"]).all()  # Holm over the three pairs
