"""`harness tasks generate alfworld` (`harness.tasks_cli`; the generator registered by the family)."""

import json

import pytest

import harness.cli
from harness.cli import main


@pytest.fixture(autouse=True)
def tasks_command(monkeypatch):
    monkeypatch.setattr(harness.cli, "COMMAND_MODULES",
                        (*harness.cli.COMMAND_MODULES, "harness.tasks_cli"))


def test_generate_alfworld_writes_the_official_layout(tmp_path, capsys):
    out = tmp_path / "games"
    code = main(["tasks", "generate", "alfworld", "--out", str(out), "--n", "2", "--split",
                 "valid_unseen", "--task-type", "pick_two_obj_and_place", "--workers", "1"])
    printed = capsys.readouterr().out
    assert code == 0, printed
    assert printed.startswith(f"wrote 2 ALFWorld games to {out}")
    assert "valid_unseen: pick_two_obj_and_place 2" in printed
    games = sorted(out.glob("json_2.1.1/valid_unseen/pick_two_obj_and_place-*/trial_*"))
    assert len(games) == 2
    for game in games:
        data = json.loads((game / "game.tw-pddl").read_text())
        assert data["solvable"] is True and data["walkthrough"]
        assert int(game.parent.name.rsplit("-", 1)[1]) in (10, 219, 308, 424)


@pytest.mark.parametrize("argv,fragment", [
    (["--n", "0"], "--n must be at least 1"),
    (["--n", "1", "--workers", "0"], "--workers must be at least 1"),
])
def test_bad_counts_are_one_line_errors(tmp_path, capsys, argv, fragment):
    code = main(["tasks", "generate", "alfworld", "--out", str(tmp_path), *argv])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and fragment in err[0]
    assert not list(tmp_path.iterdir())


def test_unknown_family_is_refused(tmp_path):
    with pytest.raises(SystemExit) as exit_:
        main(["tasks", "generate", "webshop2", "--out", str(tmp_path), "--n", "1"])
    assert exit_.value.code == 2
