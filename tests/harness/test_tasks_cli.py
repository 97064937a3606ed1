"""`harness tasks generate alfworld` (`harness.tasks_cli`; the generator registered by the
family), `harness tasks unsupported SUITE` and `harness tasks build SUITE` on a folder of tiny
Terminal-Bench tasks (one builds, one's RUN exits 1, one is unsupported)."""

import json

import pytest

import harness.cli
from harness.cli import main
from tests.tasks.terminal.test_build_failures import private_layers, replays  # noqa: F401


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


# ---- harness tasks unsupported / build, on a folder of tiny Terminal-Bench tasks -------------

@pytest.fixture
def terminal_bench(tmp_path, monkeypatch):
    """``terminal-bench@1`` over `write_tasks`' folder (good, bad, offline), registered for
    this test only."""
    import tasks.base
    from tasks.base import register_suite
    from tests.tasks.terminal.test_build_failures import write_tasks

    monkeypatch.setattr(tasks.base, "_REGISTRY", {k: dict(v)
                                                  for k, v in tasks.base._REGISTRY.items()})
    monkeypatch.setattr(tasks.base, "_CACHE", {})
    monkeypatch.setenv("TERMINAL_BENCH_TASKS", str(write_tasks(tmp_path / "tasks")))
    register_suite("terminal-bench", 1, "tasks.terminal:TerminalBenchSuite")
    return tmp_path / "tasks"


def _rows(printed: str) -> dict[str, list[str]]:
    return {line.split("\t")[0]: line.split("\t")[1:] for line in printed.splitlines()
            if "\t" in line}


def test_unsupported_lists_each_task_with_its_reason_and_a_count(terminal_bench, capsys):
    from tasks.terminal import TerminalBenchSuite

    reason = TerminalBenchSuite(terminal_bench).unsupported["offline"]
    assert reason.startswith("RUN 'wget https://x/y' needs")
    assert main(["tasks", "unsupported", "terminal-bench"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines == [f"offline\t{reason}", "1 of 3 tasks of terminal-bench@1 unsupported"]
    from tasks import get_suite

    assert main(["tasks", "unsupported", "frozenlake"]) == 0  # no mapping: none unsupported
    total = len(get_suite("frozenlake").tasks())
    assert capsys.readouterr().out.splitlines() == [f"0 of {total} tasks of frozenlake@1 "
                                                    "unsupported"]


@pytest.mark.parametrize("argv,fragment", [
    (["unsupported", "terminal-bnch"], "unknown suite 'terminal-bnch'; did you mean "
                                       "'terminal-bench'"),
    (["build", "terminal-bench@1", "--only", "godo"], "unknown task of terminal-bench@1 "
                                                      "'godo'; did you mean 'good'"),
    (["build", "terminal-bench", "--only", "offline"], "task offline of terminal-bench@1 is "
                                                       "unsupported, not built: RUN"),
    (["build", "terminal-bench", "--jobs", "0"], "--jobs must be at least 1"),
    (["build", "frozenlake"], "frozenlake@1 has no task environments to build"),
])
def test_tasks_user_errors_are_one_line(terminal_bench, capsys, argv, fragment):
    code = main(["tasks", *argv])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and fragment in err[0], err


def test_build_records_a_failure_and_does_not_retry_it_until_asked(terminal_bench,
                                                                  private_layers, replays,
                                                                  capsys):
    from tasks import get_suite
    from tasks.base import EnvironmentNotBuilt

    assert main(["tasks", "build", "terminal-bench", "--jobs", "2"]) == 1
    printed = capsys.readouterr().out
    rows = _rows(printed)
    assert set(rows) == {"good", "bad"} and rows["good"][0] == "built"
    assert rows["bad"][0] == "failed" and "cannot build this" in rows["bad"][1]
    assert printed.splitlines()[-1] == ("terminal-bench@1: 1 built, 1 failed of 2 tasks; 1 "
                                        "unsupported not built (`harness tasks unsupported "
                                        "terminal-bench@1` lists them)")
    assert sorted(replays) == ["bad", "good"]
    assert main(["tasks", "build", "terminal-bench"]) == 1  # nothing is built again
    rows = _rows(capsys.readouterr().out)
    assert rows["good"][0] == "built" and "build failure recorded" in rows["bad"][1]
    with pytest.raises(EnvironmentNotBuilt, match="failure recorded"):  # nor by an episode
        get_suite("terminal-bench").make_env("bad")
    assert sorted(replays) == ["bad", "good"]
    assert main(["tasks", "build", "terminal-bench", "--only", "bad,good",
                 "--retry-failed"]) == 1
    out = capsys.readouterr().out
    assert "recorded" not in _rows(out)["bad"][1]
    assert out.splitlines()[-1] == "terminal-bench@1: 1 built, 1 failed of 2 tasks"
    assert sorted(replays) == ["bad", "bad", "good"]  # only the failure was built again
