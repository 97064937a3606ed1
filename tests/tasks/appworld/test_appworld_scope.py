"""appworld-lite@3's scope templates: near-identical entries declared with in-scope labels
and per-app sub-goals; @2 unchanged; the oracle reaches scope F1 1 and progress 1, a policy
that acts on every near-identical entry gets the hand-computed scope precision and recall,
through the runner, the store, `harness leaderboard --metric`, `harness compare --metric` and
`harness report`."""

from __future__ import annotations

import pytest

from harness.cli import SCOPE_METRICS, main
from harness.config import RunConfig
from harness.runner import run
from harness.stats.scope import METRICS
from tasks import get_suite
from tasks.appworld.suite import task_world
from tasks.appworld.world import world_bytes
from tasks.sandbox import sandbox_available
from tests.tasks.appworld.scope_support import NAME, act_on_all_expectation, \
    register_act_on_all

SUITE = "appworld-lite@3"
TASKS = ("delete-paid-receipts-08", "delete-paid-receipts-09", "deny-friend-requests-08",
         "deny-friend-requests-09")
needs_sandbox = pytest.mark.skipif(sandbox_available() is not None,
                                   reason=f"sandbox unavailable: {sandbox_available()}")


def test_version_3_adds_scope_templates_and_leaves_version_2_alone():
    old, new = get_suite("appworld-lite@2"), get_suite(SUITE)
    assert [t.id for t in old.tasks()] == [t.id for t in new.tasks()][:90]
    assert len(new.tasks()) == 110 and all(t.scope is None for t in old.tasks())
    for spec in new.tasks():
        template, world_seed = new._where[spec.id]
        if spec.scope is None:  # the nine old templates set nothing up: the same world
            assert task_world(template, world_seed)[1].serialize() == world_bytes(world_seed)
            continue
        entries = spec.scope.entries
        assert 2 <= sum(entries.values()) < len(entries), spec.id  # near misses exist
        assert all(goal.split(":")[0] in ("simple_note", "phone", "venmo")
                   for goal in spec.scope.subgoals)


def test_parser_offers_every_scope_metric():
    assert SCOPE_METRICS == METRICS


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    register_act_on_all()
    path = tmp_path_factory.mktemp("scope") / "scope.db"
    run(RunConfig(policies=("oracle", NAME), suites=(SUITE,), split="test",
                  task_ids=TASKS, eval_seeds=(0,), db=str(path), concurrency=2))
    return path


def _cells(out: str) -> dict[str, list[str]]:
    rows = [[c.strip() for c in line.split("│")[1:-1]] for line in out.splitlines()
            if "│" in line and SUITE in line]
    return {row[1]: row for row in rows}


@needs_sandbox
def test_oracle_and_act_on_all_through_the_leaderboard(db, capsys):
    specs = [get_suite(SUITE).task(t) for t in TASKS]
    expected = act_on_all_expectation(specs)
    # the four tasks declare 2+2+3+4 = 11 in-scope entries among 6+6+12+13 = 37
    assert expected["scope_precision"] == pytest.approx(11 / 37)
    assert expected["app_progress"] == pytest.approx(0.75)
    for metric in METRICS:
        assert main(["leaderboard", "--db", str(db), "--metric", metric]) == 0
        by_policy = _cells(capsys.readouterr().out)
        assert by_policy["oracle"][2] == "100.0", metric
        assert by_policy[NAME][2] == f"{100 * expected[metric]:.1f}", metric
    assert main(["leaderboard", "--db", str(db), "--metric", "scope_f1",
                 "--format", "markdown"]) == 0
    assert "scope-aware F1" in capsys.readouterr().out


@needs_sandbox
def test_compare_on_a_scope_metric(db, capsys):
    """The oracle against act-on-all: precision 1 against 11/37 on the same four tasks."""
    assert main(["compare", "--db", str(db), "--a", "oracle", "--b", NAME,
                 "--metric", "scope_precision", "--resamples", "500"]) == 0
    out = capsys.readouterr().out
    assert f"A - B {1 - 11 / 37:+.4f}" in out
    assert "4 paired keys over 4 tasks" in out and "exact over all task swaps" in out


@needs_sandbox
def test_report_writes_the_scope_table(db, tmp_path):
    out = tmp_path / "report"
    assert main(["report", "--db", str(db), "--out", str(out), "--no-figures"]) == 0
    markdown = (out / "tables" / "scope.md").read_text()
    assert "Scope F1" in markdown and "App progress" in markdown and NAME in markdown
    assert f"{100 * 11 / 37:.1f}" in markdown
    latex = (out / "tables" / "scope.tex").read_text()
    assert r"\begin{tabular}" in latex and "100.0" in latex
    assert r"\input{scope}" in (out / "tables" / "tables.tex").read_text()


def test_no_scope_is_one_clear_line(tmp_path, capsys):
    path = tmp_path / "plain.db"
    assert main(["run", "--policy", "noop", "--suite", "minesweeper", "--tasks", "2",
                 "--db", str(path)]) == 0
    capsys.readouterr()
    assert main(["leaderboard", "--db", str(path), "--metric", "scope_recall"]) == 2
    assert "no episode reports its scope" in capsys.readouterr().err


@needs_sandbox
@pytest.mark.slow
def test_oracle_acts_on_exactly_the_in_scope_entries_of_every_scope_task():
    """On each of the 20 scope tasks the reference program wins, acts on exactly the in-scope
    entries and reaches every sub-goal; completing at once acts on none and reaches none."""
    suite = get_suite(SUITE)
    for spec in (t for t in suite.tasks() if t.scope is not None):
        env = suite.make_env(spec.id)
        try:
            env.reset(seed=0)
            snap = env.snapshot()
            info = env.step(env.oracle_action()).info
            in_scope = sorted(e for e, inside in spec.scope.entries.items() if inside)
            assert info["won"] and info["scope"]["acted"] == in_scope, spec.id
            assert info["subgoals"] == dict.fromkeys(spec.scope.subgoals, True), spec.id
            env.restore(snap)
            info = env.step(suite.trivial_actions["complete"]).info
            assert info["scope"]["acted"] == [] and not any(info["subgoals"].values())
        finally:
            env.close()
