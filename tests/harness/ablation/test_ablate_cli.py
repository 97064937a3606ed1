"""`harness ablate` end to end: a scripted policy whose layers have known effects (repair
helps, skills hurts, contract does nothing; see ablation_support) on frozenlake 4x4."""

from harness.ablation.analysis import analyse_ablation
from harness.ablation.plan import AblationConfig, plan_ablation
from harness.cli import main
from harness.config import make_run_config
from harness.store import Store
from tests.harness.ablation.ablation_support import (FORMAT_SLIP, GARBAGE_SLIP,
                                                     register_follower, write_skill_store)

LAYERS = "repair,skills,contract"


def _flags(tmp_path, store):
    base = f"procedure-follower?skills_store={store}&repair_retries=0"
    return ["--policy", base, "--layers", LAYERS, "--suite", "frozenlake", "--task-type", "4x4",
            "--eval-seeds", "4", "--max-steps", "7", "--db", str(tmp_path / "h.db"),
            "--resamples", "4000"], base


def test_ablate_recovers_each_layers_sign_and_the_control_arm_is_noise(tmp_path, capsys):
    register_follower()
    flags, base = _flags(tmp_path, write_skill_store(tmp_path))
    assert main(["ablate", *flags, "--out", str(tmp_path / "report")]) == 0
    printed = capsys.readouterr()
    run = make_run_config({"suites": ["frozenlake"], "task_types": ["4x4"], "eval_seeds": 4,
                           "max_steps": 7, "db": str(tmp_path / "h.db")})
    plan = plan_ablation(AblationConfig(base, tuple(LAYERS.split(",")), run, resamples=4000))
    with Store(tmp_path / "h.db", readonly=True) as store:
        result = analyse_ablation(plan, store)
    found = {f.layer: f for f in result.layers}
    for variant in ("off", "on"):
        assert getattr(found["repair"], variant).interval.low > 0          # helps
        assert getattr(found["skills"], variant).interval.high < 0         # hurts
        nothing = getattr(found["contract"], variant).interval             # does nothing
        assert nothing.estimate == nothing.low == nothing.high == 0
    control = result.control.interval
    assert control.low <= control.estimate <= control.high and control.low <= 0 <= control.high
    assert result.control.n_keys == 200 and result.plan.run_ids[0] != result.plan.run_ids[1]
    assert result.maturity == 2 / 3 and result.n_credible == 2
    assert [f.layer for f in result.layers] == ["repair", "contract", "skills"]  # run order
    assert [f.credibly_non_negative for f in result.layers] == [True, True, False]
    # activation from the stored per-step logs: contract and skills every step, repair on slips
    assert found["contract"].activation == found["skills"].activation == 1.0
    assert 0.5 * (FORMAT_SLIP + GARBAGE_SLIP) < found["repair"].activation \
        < 1.5 * (FORMAT_SLIP + GARBAGE_SLIP)
    assert found["contract"].tokens_per_episode > found["skills"].tokens_per_episode > 0
    assert found["repair"].tokens_per_episode == 0  # repairs in place; no retries asked for
    report = (tmp_path / "report" / "ablation.md").read_text()
    assert report in printed.out
    lines = report.splitlines()
    final = next(line for line in lines if line.startswith("- Final success"))
    maturity = next(line for line in lines if line.startswith("- Maturity score: 0.67"))
    assert "Maturity" not in final and "success (all" not in maturity
    assert f"{100 * result.final_success.estimate:.1f}%" in final
    for name in ("layers.tex", "arms.tex", "ablation.tex"):
        assert "\\begin{" in (tmp_path / "report" / name).read_text()


def test_ablate_resumes_its_runs(tmp_path, capsys):
    register_follower()
    flags, _ = _flags(tmp_path, write_skill_store(tmp_path))
    flags += ["--tasks", "4", "--variants", "off", "--out", str(tmp_path / "r")]
    assert main(["ablate", *flags]) == 0  # 5 arms (all, 3 off, none) x 16 keys + the control
    err = capsys.readouterr().err
    assert "played 80 episodes" in err and "played 16 episodes" in err
    assert main(["ablate", *flags]) == 0
    assert capsys.readouterr().err.count("played 0 episodes") == 2


def test_unknown_layer_is_one_line_suggesting_the_right_name(tmp_path, capsys):
    assert main(["ablate", "--policy", "random", "--layers", "repiar", "--suite",
                 "frozenlake", "--db", str(tmp_path / "h.db")]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "unknown harness layer 'repiar'; did you mean 'repair'?" in err
    assert main(["run", "--policy", "oracle?layers=contrat", "--suite", "frozenlake",
                 "--db", str(tmp_path / "h.db")]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "did you mean 'contract'?" in err


def test_harness_list_layers_names_every_registered_layer(capsys):
    from harness.policies.layers import layer_names

    assert main(["list", "layers"]) == 0
    listed = [line.split()[0] for line in capsys.readouterr().out.splitlines()]
    assert listed == list(layer_names())
