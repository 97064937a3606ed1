"""Tasks whose environment does not build are listed apart by `harness audit`: not oracle
failures, left out of every rate, stored and printed with their ids next to the tasks the
oracle fails.

The suite here declares ``build_task`` as a Terminal-Bench suite does: tasks t-000 and t-001
never build (their failure is "recorded": `build_task` and `make_env` raise it at once);
t-002 builds but its goal lies beyond the step limit, so the oracle fails it."""

from __future__ import annotations

import pytest

from harness.audit import AuditConfig, audit_suite
from harness.audit.ceilings import ALL
from harness.audit.records import load_audits, result_from_dict, result_to_dict
from harness.cli import main
from harness.core import HarnessError
from tasks.base import EnvironmentNotBuilt, register_suite
from tests.harness.audit.conftest import CleanSuite, WalkEnv

UNBUILT = ("t-000", "t-001")
FAR = "t-002"


class FarEnv(WalkEnv):
    goal = 100  # out of reach in 8 steps: the oracle fails


class UnbuiltSuite(CleanSuite):
    name = "unbuilt-test"
    unbuilt = UNBUILT

    def __init__(self):
        super().__init__()
        self.build_calls: list[str] = []

    def build_task(self, task_id: str, *, retry_failed: bool = False) -> None:
        self.build_calls.append(task_id)
        self.task(task_id)
        if task_id in self.unbuilt:
            raise EnvironmentNotBuilt(f"RUN 'make {task_id}' failed in the build sandbox: "
                                      "exit 1\n(build failure recorded)")

    def make_env(self, task_id: str):
        if task_id in self.unbuilt:
            raise EnvironmentNotBuilt(f"RUN 'make {task_id}' failed (build failure recorded)")
        index = self.task(task_id).metadata["index"]
        return FarEnv(index) if task_id == FAR else WalkEnv(index)


class MostlyUnbuiltSuite(UnbuiltSuite):
    """5 of the 8 tasks audited do not build: more errors than the base run's budget."""

    name = "mostly-unbuilt-test"
    unbuilt = ("t-000", "t-001", "t-003", "t-010", "t-011")


class NothingBuiltSuite(UnbuiltSuite):
    name = "nothing-built-test"

    def make_env(self, task_id: str):
        raise EnvironmentNotBuilt("no rootfs")

    def build_task(self, task_id: str, *, retry_failed: bool = False) -> None:
        raise EnvironmentNotBuilt("no rootfs")


@pytest.fixture(scope="module", autouse=True)
def unbuilt_suites():
    """Registered for this module only: other tests make an env of every registered suite."""
    from tasks import base

    suites = (UnbuiltSuite, MostlyUnbuiltSuite, NothingBuiltSuite)
    for suite in suites:
        register_suite(suite.name, suite.version, suite)
    yield
    for suite in suites:
        base._REGISTRY.get(suite.name, {}).pop(suite.version, None)
        if not base._REGISTRY.get(suite.name, True):
            del base._REGISTRY[suite.name]


def test_unbuilt_tasks_are_apart_from_oracle_failures_and_out_of_every_rate(tmp_path):
    from tasks import get_suite

    # 8 tasks, round-robin over the two types: t-000..t-003 and t-010..t-013
    result = audit_suite(AuditConfig("unbuilt-test", db=str(tmp_path / "a.db"), k=2,
                                     n_tasks=8))
    assert result.unbuilt["task_id"].tolist() == list(UNBUILT)
    assert result.unbuilt["reason"].iloc[0] == ("RUN 'make t-000' failed in the build sandbox: "
                                                "exit 1 (build failure recorded)")
    assert result.oracle_failures["task_id"].tolist() == [FAR]
    summary = result.summary
    assert summary["unbuilt_tasks"] == 2 and summary["oracle_failing_tasks"] == 1
    oracle = result.rates[(result.rates["kind"] == "oracle") & (result.rates["task_type"] == ALL)]
    assert int(oracle["n"].iloc[0]) == (8 - 2) * 2  # 6 built tasks x 2 eval seeds
    assert summary["oracle_success"] == pytest.approx(5 / 6)
    learn = result.learnability[result.learnability["task_type"] == ALL]
    assert int(learn["n_tasks"].iloc[0]) == 6
    assert any("did not build are left out of every rate" in n for n in result.notes)
    # asked only about tasks none of whose episodes played (a recorded failure answers at once)
    assert set(get_suite("unbuilt-test").build_calls) == set(UNBUILT)
    back = result_from_dict(result_to_dict(result))
    assert back.unbuilt.equals(result.unbuilt) and back.summary == summary
    assert load_audits(str(tmp_path / "a.db"))[0].unbuilt["task_id"].tolist() == list(UNBUILT)


def test_unbuilt_tasks_beyond_the_error_budget_and_a_rerun_do_not_stop_the_audit(tmp_path):
    """The base run's errors, over half of its episodes, are the unbuilt tasks': the audit
    plays on and judges the built ones; a rerun (which replays only the errored episodes,
    all of them unbuilt) gives the same audit."""
    config = AuditConfig("mostly-unbuilt-test", db=str(tmp_path / "a.db"), k=2, n_tasks=8)
    first = audit_suite(config)
    assert first.unbuilt["task_id"].tolist() == list(MostlyUnbuiltSuite.unbuilt)
    assert int(first.learnability.loc[first.learnability["task_type"] == ALL,
                                      "n_tasks"].iloc[0]) == 3
    again = audit_suite(config)
    assert again.unbuilt.equals(first.unbuilt) and again.summary == first.summary


def test_a_suite_without_build_task_has_none_unbuilt_and_old_records_read_back(tmp_path):
    result = audit_suite(AuditConfig("clean-test", db=str(tmp_path / "a.db"), k=2, n_tasks=4))
    assert result.unbuilt.empty and result.summary["unbuilt_tasks"] == 0
    stored = result_to_dict(result)
    del stored["unbuilt"]
    stored["version"] = 1
    assert result_from_dict(stored).unbuilt.empty


def test_the_command_prints_both_lists_with_their_ids(tmp_path, capsys):
    assert main(["audit", "unbuilt-test", "--k", "2", "--tasks", "8", "--db",
                 str(tmp_path / "a.db")]) == 0
    out = capsys.readouterr().out
    assert "  oracle failed    1 tasks: t-002\n" in out
    assert ("  not built        2 tasks' environment did not build (not oracle failures, left "
            "out of every rate): t-000, t-001\n") in out
    assert "| environment did not build | t-000 | a | RUN 'make t-000' failed" in out
    assert "| oracle failure | t-002 |" in out


def test_an_audit_where_no_environment_builds_says_so(tmp_path):
    with pytest.raises(HarnessError, match=r"the environments of 4 tasks did not build "
                                           r"\(t-000, t-001, t-010, t-011\); `harness tasks "
                                           r"build nothing-built-test@1` says why"):
        audit_suite(AuditConfig("nothing-built-test", db=str(tmp_path / "a.db"), k=2,
                                n_tasks=4))
