"""The study file: grid expansion, recipes built per cell, one-line errors."""

from __future__ import annotations

import pytest

from harness.core import ConfigError, UnknownNameError
from harness.study.config import load_study_config
from harness.study.run import plan_study

from tests.harness.study.support import write_study


def test_full_grid_and_arms(study):
    arms = study.arms_resolved()
    cells = [a for a in arms if a.role == "cell"]
    assert [a.name for a in cells] == ["lr=0.0001,kl_coef=0", "lr=0.0001,kl_coef=0.04",
                                       "lr=0.0003,kl_coef=0", "lr=0.0003,kl_coef=0.04"]
    assert [(a.recipe.optim.lr, a.recipe.algorithm.kl_coef) for a in cells] == [
        (1e-4, 0.0), (1e-4, 0.04), (3e-4, 0.0), (3e-4, 0.04)]
    assert all(a.baseline == "start" and a.seeds == (0, 1, 2) for a in cells)
    start = study.arm("start")
    assert start.recipe.updates == 0 and start.seeds == (0,) and start.baseline == ""
    assert start.recipe.model.hidden == 32  # [base] reaches the arms too
    assert cells[0].recipe.name == "t.lr=0.0001,kl_coef=0"


def test_plan_counts_jobs(study):
    train, evals = plan_study(study)
    assert len(train) == 4 * 3 + 1
    assert train[0].arm.name == "start"  # baselines first
    greedy = [j for j in evals if j.mode == "greedy"]
    assert len(greedy) == 13 and greedy[0].expected == 6 * 4
    assert [j for j in evals if j.mode == "sampled"][0].expected == 6 * 4 * 2
    assert train[1].checkpoint.name == "step-000002"


def test_listed_cells(tmp_path):
    path = write_study(tmp_path, body='cells = [{"optim.lr" = 1e-4}, '
                       '{"optim.lr" = 3e-4, "algorithm.kl_coef" = 0.04}]')
    names = [a.name for a in load_study_config(path).arms_resolved() if a.role == "cell"]
    assert names == ["lr=0.0001", "lr=0.0003,kl_coef=0.04"]


@pytest.mark.parametrize("kwargs, error, match", [
    ({"factors": '"optim.lrr" = [1e-4]'}, UnknownNameError, "optim key 'lrr'.*did you mean"),
    ({"factors": '"optim.lr" = []'}, ConfigError, "non-empty list"),
    ({"factors": '"optim.lr" = [-1.0]'}, ConfigError, "optim.lr must be"),
    ({"analysis": 'multiplicity = "bonf"'}, UnknownNameError, "multiplicity"),
    ({"eval_section": "n_tasks = 4\neval_seeds = [0]\nsamples = 1"}, ConfigError, "headroom_k"),
    ({"body": "sedes = [0]"}, UnknownNameError, "study key 'sedes'"),
])
def test_bad_study_files_fail_with_one_line(tmp_path, kwargs, error, match):
    with pytest.raises(error, match=match) as caught:
        load_study_config(write_study(tmp_path, **kwargs))
    assert "\n" not in str(caught.value)


def test_unknown_baseline(tmp_path):
    path = write_study(tmp_path)
    text = open(path).read().replace('baseline = "start"', 'baseline = "strat"')
    open(path, "w").write(text)
    with pytest.raises(UnknownNameError, match="did you mean"):
        load_study_config(path)


GRAFT = ('\n[[grafts]]\nname = "g-mlp"\nsource = "lr=0.0003,kl_coef=0.04"\n'
         'groups = ["mlp", "layer:1"]\n')


def test_graft_arms_are_built_after_their_source(tmp_path):
    path = write_study(tmp_path)
    with open(path, "a") as handle:
        handle.write(GRAFT)
    study = load_study_config(path)
    graft = study.arm("g-mlp")
    assert graft.role == "graft" and graft.baseline == "start" and graft.seeds == (0, 1, 2)
    assert graft.graft.source == "lr=0.0003,kl_coef=0.04"
    assert graft.graft.groups == ("mlp", "layer:1") and graft.graft.target == "start"
    train, evals = plan_study(study)
    assert [j.arm.name for j in train[-3:]] == ["g-mlp"] * 3  # after what it is made of
    assert train[-1].checkpoint.parent.parent.name == "t.g-mlp"
    assert sum(j.arm.name == "g-mlp" for j in evals) == 6


@pytest.mark.parametrize("graft, error, match", [
    (GRAFT.replace("kl_coef=0.04", "kl_coef=0.05"), UnknownNameError, "source of graft"),
    (GRAFT.replace('"mlp"', '"mpl"'), ConfigError, "graft 'g-mlp'.*did you mean 'mlp'"),
    (GRAFT.replace('"layer:1"', '"layer:x"'), ConfigError, "group@LAYER or layer:N"),
    (GRAFT.replace('source = "lr=0.0003,kl_coef=0.04"', 'source = "start"'), ConfigError,
     "is not trained"),
    (GRAFT.replace('groups', 'grups'), UnknownNameError, "grafts key 'grups'"),
])
def test_bad_grafts_fail_with_one_line(tmp_path, graft, error, match):
    path = write_study(tmp_path)
    with open(path, "a") as handle:
        handle.write(graft)
    with pytest.raises(error, match=match) as caught:
        load_study_config(path)
    assert "\n" not in str(caught.value)


MERGE = ('\n[[merges]]\nname = "m-ties"\nmethod = "ties"\nsources = ["lr=0.0001,kl_coef=0", '
         '"lr=0.0003,kl_coef=0.04"]\nbaseline = "lr=0.0003,kl_coef=0"\ndensities = [0.5]\n')


def test_merge_arms_are_built_after_their_sources(tmp_path):
    path = write_study(tmp_path)
    with open(path, "a") as handle:
        handle.write(MERGE)
    study = load_study_config(path)
    merge = study.arm("m-ties")
    assert merge.role == "merge" and merge.baseline == "lr=0.0003,kl_coef=0"
    assert merge.merge.base == "start" and merge.merge.densities == (0.5,)
    assert merge.seeds == (0, 1, 2)
    train, _ = plan_study(study)
    assert [j.arm.name for j in train[-3:]] == ["m-ties"] * 3


@pytest.mark.parametrize("change, error, match", [
    (('"ties"', '"tis"'), UnknownNameError, "method of merge 'm-ties'.*did you mean 'ties'"),
    ((', "lr=0.0003,kl_coef=0.04"]', ']'), ConfigError, "two or more sources"),
    (('baseline = "lr=0.0003,kl_coef=0"', 'base = "begin"'), UnknownNameError,
     "arm of merge 'm-ties'"),
    (('densities', 'density'), UnknownNameError, "merges key 'density'"),
])
def test_bad_merges_fail_with_one_line(tmp_path, change, error, match):
    path = write_study(tmp_path)
    with open(path, "a") as handle:
        handle.write(MERGE.replace(*change))
    with pytest.raises(error, match=match) as caught:
        load_study_config(path)
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize("name, arms, roles", [
    ("study_smoke.toml", 3, {"cell": 2, "arm": 1}),
    ("study_grpo_null.toml", 23, {"cell": 16, "arm": 3, "positive_control": 1, "graft": 3}),
    ("study_merge_frozenlake.toml", 11, {"cell": 1, "arm": 4, "merge": 6}),
    ("study_merge_appworld.toml", 11, {"cell": 1, "arm": 4, "merge": 6}),
])
def test_the_example_studies_load(name, arms, roles):
    from collections import Counter
    from pathlib import Path

    study = load_study_config(Path(__file__).resolve().parents[3] / "examples" / name)
    resolved = study.arms_resolved()
    assert len(resolved) == arms and Counter(a.role for a in resolved) == roles
    if name == "study_grpo_null.toml":  # each initialisation against its own start
        assert {a.baseline for a in resolved if a.role == "cell"} == {"start", "start-1"}
        # two paths ending alike are told apart by as many parts as it takes
        assert study.arm("lr=0.0004,kl_coef=0.04,clip_high=0.28,source=seed-1-sft") \
            .baseline == "start-1"
        grafts = {a.name: (a.graft.source, a.baseline) for a in resolved if a.graft}
        assert grafts == {f"pc+{g}": ("pc", "pc-start") for g in ("embeddings", "attention",
                                                                  "mlp")}
    if name == "study_merge_frozenlake.toml":
        assert study.arm("spec-far").recipe.rollout.task_types == ("far",)
        assert {m.baseline for m in study.merges} == {"lr=0.0002"}
    if name == "study_merge_appworld.toml":  # the joint model's budget: the specialists' sum
        specialists = [study.arm(f"spec-d{level}").recipe for level in (1, 2, 3)]
        assert [r.rollout.task_types for r in specialists] == [
            (f"difficulty-{level}",) for level in (1, 2, 3)]
        joint = study.arm("lr=0.003").recipe
        assert joint.sft.steps == sum(r.sft.steps for r in specialists)
        assert joint.rollout.task_types == () and {m.baseline for m in study.merges} == {
            "lr=0.003"}


def test_each_initialisation_against_its_own_start(tmp_path):
    path = write_study(tmp_path, factors='"model.source" = ["tiny", "start-b"]',
                       analysis='[analysis.baseline_by."model.source"]\n"start-b" = "start-b"\n')
    text = open(path).read().replace('[eval]', '[[arms]]\nname = "start-b"\nseeds = [0]\n'
                                     'recipe = { updates = 0 }\n\n[eval]')
    open(path, "w").write(text)
    study = load_study_config(path)
    baselines = {a.name: a.baseline for a in study.arms_resolved() if a.role == "cell"}
    assert baselines == {"source=tiny": "start", "source=start-b": "start-b"}


@pytest.mark.parametrize("mapping, error, match", [
    ('[analysis.baseline_by."model.sorce"]\n"tiny" = "start"\n', UnknownNameError,
     "factor of analysis.baseline_by 'model.sorce'"),
    ('[analysis.baseline_by."model.source"]\n"tinny" = "start"\n', UnknownNameError,
     "did you mean 'tiny'"),
    ('[analysis.baseline_by."model.source"]\n"tiny" = "strt"\n', UnknownNameError,
     "baseline of source=tiny"),
])
def test_bad_baseline_by_fails_with_one_line(tmp_path, mapping, error, match):
    path = write_study(tmp_path, factors='"model.source" = ["tiny"]', analysis=mapping)
    with pytest.raises(error, match=match) as caught:
        load_study_config(path)
    assert "\n" not in str(caught.value)
