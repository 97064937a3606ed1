"""`harness study run` end to end with the CPU trainer on a tiny model (slow): every job
trains and evaluates, an interruption during training and one during evaluation resume to
every (cell, seed, episode) stored once, and the report is written."""

from __future__ import annotations

import json

import pytest

from harness.store import Store
from harness.study.analysis import study_frame
from harness.study.config import load_study_config
from harness.study.run import load_study_jobs, run_study

from tests.harness.study.support import write_study

pytestmark = pytest.mark.slow


@pytest.fixture(autouse=True)
def _one_thread():
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


class Boom(KeyboardInterrupt):
    pass


def test_tiny_study_resumes_after_interruptions(tmp_path, monkeypatch):
    path = write_study(tmp_path, factors='"optim.lr" = [1e-4, 1e-3]',
                       eval_section="n_tasks = 3\neval_seeds = [0, 1]\nsamples = 2\n"
                                    "concurrency = 16",
                       )
    text = open(path).read().replace("seeds = [0, 1, 2]", "seeds = [0, 1]")
    text = text.replace("updates = 2\n", "updates = 2\ncheckpoint_every = 1\n")
    # an entropy bonus: the weights move even when every group's rewards are equal
    text = text.replace("kl_coef = 0.0\n", "kl_coef = 0.0\nentropy_coef = 0.05\n")
    text += '\n[[grafts]]\nname = "g-mlp"\nsource = "lr=0.001"\ngroups = ["mlp"]\n'
    text += ('\n[[merges]]\nname = "m-ram"\nmethod = "ram"\n'
             'sources = ["lr=0.0001", "lr=0.001"]\n')
    open(path, "w").write(text)
    study = load_study_config(path)
    from harness.train import trainer as trainer_module
    from harness import runner as runner_module

    real_update, real_run = trainer_module.Trainer.update, runner_module.run_async
    calls = {"update": 0, "eval": 0}

    def update_then_stop(self, step=None):
        calls["update"] += 1
        if calls["update"] == 2:  # the second update of the first trained cell
            raise Boom()
        return real_update(self, step)

    monkeypatch.setattr(trainer_module.Trainer, "update", update_then_stop)
    with pytest.raises(Boom):
        run_study(study)
    monkeypatch.setattr(trainer_module.Trainer, "update", real_update)

    import harness.study.run as study_run

    async def eval_then_stop(config, **kwargs):
        calls["eval"] += 1
        if calls["eval"] == 3:
            await real_run(config.__class__(**{**config.__dict__, "n_tasks": 1}),
                                     **kwargs)  # a partial run, then the interruption
            raise Boom()
        return await real_run(config, **kwargs)

    monkeypatch.setattr(study_run, "run_async", eval_then_stop)
    with pytest.raises(Boom):
        run_study(study)
    monkeypatch.setattr(study_run, "run_async", real_run)
    status = run_study(study)
    assert (status["step"] == status["updates"]).all()
    assert (status["greedy_stored"] == status["greedy_expected"]).all()
    assert (status["sampled_stored"] == status["sampled_expected"]).all()
    frame = study_frame(study)
    key = ["run_id", "policy", "suite", "task_id", "eval_seed", "sample"]
    assert not frame.duplicated(key).any()
    assert len(frame) == (2 * 2 + 1 + 2 + 2) * (3 * 2 + 3 * 2 * 2)
    assert set(frame["train_seed"].dropna().astype(int)) == {0, 1}
    _resumed_jobs_record_the_work_of_their_last_part(study)
    _graft_and_weights_are_reported(study, tmp_path)


def _resumed_jobs_record_the_work_of_their_last_part(study):
    """The interrupted training job resumed at update 1 of 2 (its checkpoint of update 1)
    and the interrupted evaluation with one task's episodes stored: each row's work is what
    its timed last part did; an uninterrupted job's is its whole work (a built arm's, none)."""
    with Store(study.db) as store:
        jobs = load_study_jobs(store, study)
    work = [json.loads(w) if isinstance(w, str) else None for w in jobs["work"]]
    assert all(w is None for w, job in zip(work, jobs["job"]) if job in ("graft", "merge"))
    trained = [w for w, job in zip(work, jobs["job"]) if job == "train"]
    assert {"updates": 1, "sft_steps": 0} in trained and {"updates": 2, "sft_steps": 0} in trained
    greedy = {w["episodes"] for w, job in zip(work, jobs["job"]) if job == "greedy"}
    sampled = {w["episodes"] for w, job in zip(work, jobs["job"]) if job == "sampled"}
    assert greedy | sampled >= {6, 12} and len(greedy | sampled) == 3  # whole; one resumed


def _graft_and_weights_are_reported(study, tmp_path):
    from harness.study.analysis import analyse_study
    from harness.study.report import write_report
    from harness.study.run import TrainJob
    from harness.study.weights import change_norms

    graft = TrainJob(study.arm("g-mlp"), 1).checkpoint
    source = TrainJob(study.arm("lr=0.001"), 1).checkpoint
    start = TrainJob(study.arm("start"), 0).checkpoint
    to_source = change_norms(source, graft).set_index("name")
    to_start = change_norms(start, graft).set_index("name")
    mlp = to_source.index.str.contains(".mlp.")
    assert (to_source.loc[mlp, "delta_norm"] == 0).all()  # the MLP is the trained one's
    assert (to_start.loc[~mlp, "delta_norm"] == 0).all()  # everything else the start's
    assert (change_norms(start, source)["delta_norm"] > 0).any()
    report = write_report(study, analyse_study(study), tmp_path / "report")
    text = report.read_text()
    assert "## Grafting" in text and "## Weight changes" in text and "## Merging" in text
    assert "## Task-vector geometry" in text
    geometry = (tmp_path / "report" / "geometry.md").read_text()
    assert "| models |" in geometry and "| floor |" in geometry and "| ceiling |" in geometry
    merged = TrainJob(study.arm("m-ram"), 0).checkpoint
    assert json.loads((merged / "checkpoint.json").read_text())["merge"]["method"] == "ram"
    weights = (tmp_path / "report" / "weights.csv").read_text().splitlines()
    assert weights[0] == "arm,seed,step,group,delta_norm,relative,delta_rank"
    assert {line.split(",")[0] for line in weights[1:]} == {"lr=0.0001", "lr=0.001"}
    assert "g-mlp" in (tmp_path / "report" / "grafting.md").read_text()
    from harness.study.analysis import analyse_study
    from harness.study.report import write_report

    with Store(study.db) as store:
        jobs = load_study_jobs(store, study)
    assert {"train", "greedy", "sampled"} <= set(jobs["job"])
    report = write_report(study, analyse_study(study), tmp_path / "rep", jobs=jobs)
    assert "Compute" in report.read_text() and "torch" in report.read_text()


def test_the_merge_template_runs_end_to_end_at_smoke_scale(tmp_path):
    """examples/study_merge_frozenlake.toml as shipped, with the bundled tiny model instead of
    the SFT start, one training seed, 2 updates per specialist and a small evaluation: the
    specialists, the joint model and all six merges train, build, evaluate and report."""
    from pathlib import Path

    from harness.core import read_toml
    from harness.study.config import make_study_config

    examples = Path(__file__).resolve().parents[3] / "examples"
    values = read_toml(examples / "study_merge_frozenlake.toml")
    values.update(seeds=[0, 1], out_dir=str(tmp_path / "out"), db=str(tmp_path / "h.db"),
                  report_dir=str(tmp_path / "report"))
    values["base"] = {**values["base"], "updates": 2, "checkpoint_every": 1,
                      "model": {"source": "tiny", "hidden": 32, "layers": 2, "heads": 2,
                                "kv_heads": 1, "intermediate": 64, "chat_template": "compact",
                                "threads": 1},
                      "rollout": {"tasks_per_update": 2, "group_size": 3, "max_steps": 3},
                      "algorithm": {"name": "grpo", "kl_coef": 0.0, "entropy_coef": 0.05,
                                    "minibatches": 1}}
    for arm in values["arms"]:
        if arm["name"].startswith("spec-"):
            arm["recipe"]["updates"] = 1
    values["eval"] = {"split": "test", "n_tasks": 3, "eval_seeds": [0, 1], "samples": 0,
                      "concurrency": 16}
    text = _merge_template_runs_and_reports(make_study_config(values, root=examples),
                                            tmp_path)
    assert "## Task-vector geometry" in text and "| floor |" in text


def _merge_template_runs_and_reports(study, tmp_path) -> str:
    """Run a merge template's study: the joint cell and three specialists x 2 seeds, the
    start, six merges x 2 seeds all evaluated, every method in the merging table; returns
    the report's text."""
    from harness.study.analysis import analyse_study
    from harness.study.report import write_report

    status = run_study(study)
    assert (status["greedy_stored"] == status["greedy_expected"]).all() and len(status) == 21
    text = write_report(study, analyse_study(study), tmp_path / "report").read_text()
    merging = (tmp_path / "report" / "merging.md").read_text()
    for method in ("linear", "task_arithmetic", "ties", "ram", "ramplus", "ramplus_tl"):
        assert f"| {method} |" in merging
    return text


def test_the_appworld_merge_template_runs_end_to_end_at_smoke_scale(tmp_path):
    """examples/study_merge_appworld.toml as shipped, with a smaller tiny model, a few SFT
    steps, short replies and three test tasks: the supervised specialists (each on its own
    level's demonstrations), the joint model and all six merges train, build, evaluate in the
    sandboxed appworld-lite and report, with the geometry's floor and ceiling."""
    from pathlib import Path

    from harness.core import read_toml
    from harness.study.config import make_study_config

    examples = Path(__file__).resolve().parents[3] / "examples"
    values = read_toml(examples / "study_merge_appworld.toml")
    values.update(out_dir=str(tmp_path / "out"), db=str(tmp_path / "h.db"),
                  report_dir=str(tmp_path / "report"))
    values["base"] = {**values["base"],
                      "model": {**values["base"]["model"], "hidden": 32, "heads": 2,
                                "kv_heads": 1, "intermediate": 64, "threads": 1},
                      "rollout": {"max_steps": 1, "max_new_tokens": 32},
                      "sft": {**values["base"]["sft"], "steps": 6, "batch_size": 2,
                              "warmup_steps": 1}}
    for arm in values["arms"]:
        if arm["name"].startswith("spec-"):
            arm["recipe"].update({"sft.steps": 2, "sft.save_at": [1]})
    values["eval"] = {**values["eval"], "n_tasks": 3}
    study = make_study_config(values, root=examples)
    text = _merge_template_runs_and_reports(study, tmp_path)
    assert "| floor |" in text and "| ceiling |" in text
    with Store(study.db) as store:  # the supervised jobs record the SFT steps they ran
        jobs = load_study_jobs(store, study).set_index(["arm", "train_seed", "job"])
    assert json.loads(jobs.loc[("spec-d1", 0, "train"), "work"]) == {"updates": 0,
                                                                      "sft_steps": 2}
    assert json.loads(jobs.loc[("lr=0.003", 1, "train"), "work"])["sft_steps"] == 6
