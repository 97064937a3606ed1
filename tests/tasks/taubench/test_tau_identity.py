"""The τ-bench user simulator is part of a run: another user gives another run id (the
settings stored with the run's identity), and a user that is not upstream's is named under
every leaderboard of the run."""

from __future__ import annotations

import pytest

import tasks.base
from harness.cli import main
from harness.config import make_run_config
from harness.orchestrator import plan_run
from harness.report.leaderboard import comparability_notes

OPENAI_USER = "openai:qwen2.5-7b@http://127.0.0.1:9/v1"


def _plan(monkeypatch, user: str | None):
    monkeypatch.setattr(tasks.base, "_CACHE", {})  # the suite reads TAUBENCH_USER when built
    if user is None:
        monkeypatch.delenv("TAUBENCH_USER", raising=False)
    else:
        monkeypatch.setenv("TAUBENCH_USER", user)
    config = make_run_config({"policies": ["random"], "suites": ["taubench-retail@1"],
                              "n_tasks": 2, "db": "unused.db"})
    return plan_run(config)


def test_another_user_simulator_is_another_run(monkeypatch):
    scripted, model, again = (_plan(monkeypatch, u) for u in (None, OPENAI_USER, "scripted"))
    assert scripted.identity["suite_settings"] == {"taubench-retail@1": {"user": "scripted"}}
    assert model.identity["suite_settings"] == {"taubench-retail@1": {"user": OPENAI_USER}}
    assert scripted.run_id != model.run_id and scripted.run_id == again.run_id


def test_suites_without_settings_keep_their_run_ids():
    config = make_run_config({"policies": ["random"], "suites": ["frozenlake@1"],
                              "n_tasks": 2, "db": "unused.db"})
    plan = plan_run(config)
    assert "suite_settings" not in plan.identity and plan.run_id == config.resolved_run_id()


@pytest.mark.parametrize("user,note", [
    ("scripted", "scripted user simulator (upstream's user is GPT-4o)"),
    (OPENAI_USER, "user simulator qwen2.5-7b (upstream's user is GPT-4o)"),
    ("openai:gpt-4o-2024-08-06@http://127.0.0.1:9/v1", None)])
def test_the_user_is_named_where_it_departs_from_upstreams(user, note):
    from tasks.taubench.users import parse_user_spec

    assert parse_user_spec(user).comparability_note == note


def test_the_leaderboard_names_the_scripted_user(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(tasks.base, "_CACHE", {})
    monkeypatch.delenv("TAUBENCH_USER", raising=False)
    db = str(tmp_path / "tau.db")
    assert main(["run", "--policy", "random", "--suite", "taubench-airline", "--tasks", "2",
                 "--db", db]) == 0
    notes = comparability_notes(db)
    assert notes == ["† taubench-airline@1 / random: 2 episodes not comparable: scripted user "
                     "simulator (upstream's user is GPT-4o)"]
    capsys.readouterr()
    assert main(["leaderboard", "--db", db]) == 0
    assert "scripted user simulator" in capsys.readouterr().out
