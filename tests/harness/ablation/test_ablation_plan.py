"""The arms of an ablation, and its analysis on hand-made episodes."""

import pytest

from harness.ablation.analysis import analyse_ablation, layer_activity
from harness.ablation.plan import AblationConfig, arm_policies, plan_ablation
from harness.ablation.report import ablation_latex, ablation_markdown, summary_lines
from harness.config import make_run_config
from harness.core import ConfigError, UnknownNameError
from harness.records import EpisodeKey, EpisodeRecord, StepRecord
from harness.store import Store


def _config(tmp_path, base="random", layers=("repair", "contract"), **options):
    run = make_run_config({"suites": ["frozenlake"], "n_tasks": 4,
                           "db": str(tmp_path / "h.db"), **options.pop("run", {})})
    return AblationConfig(base, tuple(layers), run, **options)


def test_arms_switch_each_layer_off_and_on_and_keep_the_bases_own_layers(tmp_path):
    plan = plan_ablation(_config(tmp_path, "random?layers=regulation&stall_patience=3"))
    specs = {(arm.kind, arm.layer): arm.spec for arm in plan.arms}
    tail = "&stall_patience=3"
    assert specs == {
        ("all", None): f"random?layers=repair,contract,regulation{tail}",
        ("off", "repair"): f"random?layers=contract,regulation{tail}",
        ("off", "contract"): f"random?layers=repair,regulation{tail}",
        ("none", None): f"random?layers=regulation{tail}",
        ("on", "repair"): f"random?layers=repair,regulation{tail}",
        ("on", "contract"): f"random?layers=contract,regulation{tail}",
        ("control", None): f"random?layers=repair,contract,regulation{tail}&stream=1",
    }
    assert len(plan.main.policies) == 4  # only L is "without" the other L: played once
    assert plan.control.policies == (specs["control", None],)
    main_id, control_id = plan.run_ids
    assert main_id != control_id and {a.run_id for a in plan.arms} == {main_id, control_id}
    assert plan.main.n_tasks == plan.control.n_tasks == 4  # the same episode keys


def test_every_arm_wraps_one_base_policy_built_once(tmp_path):
    plan = plan_ablation(_config(tmp_path, "noop:empty"))
    policies = arm_policies(plan)
    assert set(policies) == {arm.spec for arm in plan.arms}
    base = policies["noop:empty"]  # the no-layers arm is the base itself
    assert all(p is base or p.inner is base for p in policies.values())
    assert {p.id for p in policies.values()} == set(policies)


def test_variants_and_run_ids(tmp_path):
    off = plan_ablation(_config(tmp_path, variants="off", run={"run_id": "abl"}))
    assert {a.kind for a in off.arms} == {"all", "off", "none", "control"}
    assert off.run_ids == ("abl", "abl-repeat")
    on = plan_ablation(_config(tmp_path, variants="on"))
    assert {a.kind for a in on.arms} == {"all", "on", "none", "control"}


@pytest.mark.parametrize("base, layers, options, error, message", [
    ("random", (), {}, ConfigError, "at least one layer"),
    ("random", ("repiar",), {}, UnknownNameError, "did you mean 'repair'"),
    ("random?stream=2", ("repair",), {}, ConfigError, "leave it out"),
    ("random", ("repair",), {"variants": "sideways"}, ConfigError, "variants must be"),
])
def test_bad_ablation_configs_say_what_to_fix(tmp_path, base, layers, options, error, message):
    with pytest.raises(error, match=message):
        plan_ablation(_config(tmp_path, base, layers, **options))


OUTCOMES = {  # per arm kind/layer: success on tasks t0..t3
    ("all", None): (1, 1, 1, 0),
    ("off", "repair"): (0, 0, 1, 0),      # repair adds +0.5, never hurts: credible
    ("off", "contract"): (1, 1, 1, 1),    # contract costs -0.25: not credible
    ("none", None): (0, 0, 0, 0),
    ("control", None): (1, 1, 0, 0),      # the rerun differs by +0.25
}


def _layer_log(t, task):
    return {"repair": {"fired": t == 0 and task < 2, "tokens": 0},
            "contract": {"fired": True, "tokens": 10}}


def _store_episodes(store, plan):
    for arm in plan.arms:
        outcomes = OUTCOMES[arm.kind, arm.layer]
        store.begin_run(arm.run_id, {"arm": arm.spec}, {}) if arm.kind in ("all", "control") \
            else None
        for task, won in enumerate(outcomes):
            key = EpisodeKey(arm.spec, "frozenlake@1", f"t{task}", 0, 0)
            steps = [StepRecord(t, "obs", "Left", "Left", 0.0, t == 1, False,
                                {"won": bool(won), "layers": _layer_log(t, task)})
                     for t in range(2)]
            store.write_episode(arm.run_id, EpisodeRecord(
                key, "4x4", "test", "ok", bool(won), float(won), float(won), 2, 0, True, False,
                prompt_tokens=3, completion_tokens=1), steps)


def test_analysis_on_hand_made_episodes(tmp_path):
    plan = plan_ablation(_config(tmp_path, variants="off", resamples=2000))
    with Store(tmp_path / "h.db") as store:
        _store_episodes(store, plan)
        result = analyse_ablation(plan, store)
        activity = layer_activity(store, plan.run_ids[0], plan.arm("all").spec)
    repair, contract = result.layers
    assert repair.off.interval.estimate == 0.5 and repair.off.interval.low >= 0
    assert contract.off.interval.estimate == -0.25 and contract.off.interval.low < 0
    assert repair.on is None and repair.off.n_keys == 4 and repair.off.n_tasks == 4
    assert repair.activation == 2 / 8 and repair.tokens_per_episode == 0
    assert contract.activation == 1.0 and contract.tokens_per_episode == 20
    assert activity.set_index("layer").loc["contract"].tolist() == [8, 8, 80]
    assert result.control.interval.estimate == 0.25
    assert result.maturity == 0.5 and result.final_success.estimate == 0.75
    assert [s.tokens_per_episode for s in result.arms] == [4.0] * len(result.arms)
    lines = summary_lines(result)
    assert lines[0].startswith("Final success (all layers): 75.0%")
    assert lines[1].startswith("Maturity score: 0.50 (1 of 2 layers")
    assert "difference +25.0 points" in lines[2]
    markdown = ablation_markdown(result)
    rows = {line.split(" | ")[0]: line for line in markdown.splitlines()}
    assert "+50.0" in rows["| repair"] and "-25.0 [" in rows["| contract"]
    assert r"\begin{tabular}{lrrrrc}" in ablation_latex(result)


def test_analysis_before_the_arms_were_played_says_so(tmp_path):
    plan = plan_ablation(_config(tmp_path))
    with Store(tmp_path / "h.db") as store, pytest.raises(Exception, match="play the ablation"):
        analyse_ablation(plan, store)
