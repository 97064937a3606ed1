"""Forgery probes (`tasks.sandbox_forgery`) on terminal suites, and the verifier's exit status.

On terminal-lite@2 the tests run agent-written code as the agent: every forgery probe scores 0
on the tasks whose tests run such code, and the audit finds no task forgeable. The same probes
are not vacuous: on version 1's test of fix-python-import (which ran ``main.py`` as root, the
agent still unprivileged) and on a terminal-bench-style suite (the agent root, as upstream),
they forge the verdict, and the audit counts the task.
"""

from __future__ import annotations

import re
import shutil

import pytest

from harness.audit.auditor import AuditConfig, audit_suite
from harness.audit.text import summary_lines
from tasks import base
from tasks.sandbox import CommandResult
from tasks.sandbox_forgery import FORGERY_KINDS, payload, payload_line, planting_script
from tasks.terminal.env import abnormal_end
from tasks.terminal.suite import FORGERIES, LITE_DIR, TerminalBenchSuite, TerminalSuite
from tasks.terminal.taskdir import load_tasks
from tests.tasks.terminal.support import write_tb1_task

AGENT_CODE_TASKS = ("fix-python-import", "fix-failing-test", "fix-exit-code", "make-build",
                    "git-commit")
"""Tasks whose tests run code the agent controls: a program, a script, make, git."""

V1_TEST = '''import subprocess
def test_runs():
    out = subprocess.run(["python3", "/app/main.py"], capture_output=True, text=True, cwd="/app")
    assert out.stdout.strip() == "area 12", out.stderr
'''
"""fix-python-import's test in terminal-lite@1: the agent's main.py run as root."""


def _play(suite, task_id: str, action: str):
    env = suite.make_env(task_id)
    env.reset(seed=0)
    result = env.step(action)
    env.close()
    return result


def _planted(observation: str) -> int:
    found = re.search(r"forgery probe: planted in (\d+) places", observation)
    return int(found.group(1)) if found else 0


@pytest.mark.parametrize("kind", FORGERY_KINDS)
def test_the_payload_fits_pth_files_shell_words_and_makefiles(kind):
    line = payload_line(kind)
    assert "'" not in line and "$" not in line and "\n" not in line
    compile(line, "<pth>", "exec")
    compile(payload(kind), "<payload>", "exec")
    compile(planting_script(kind), "<planter>", "exec")
    assert FORGERIES[f"forge:{kind}"].endswith("\nFORGE_PROBE\nsubmit")
    with pytest.raises(ValueError, match="unknown forgery kind"):
        payload("reward")


@pytest.mark.parametrize("probe", sorted(FORGERIES))
def test_forgery_probes_score_zero_where_terminal_lite_tests_run_agent_code(lite_suite, probe):
    for task_id in AGENT_CODE_TASKS:
        result = _play(lite_suite, task_id, FORGERIES[probe])
        assert _planted(result.observation) > 0, (task_id, result.observation)
        assert result.terminated and result.reward == 0.0, (task_id, result.info["verifier"])


@pytest.fixture(scope="module")
def v1_tasks(tmp_path_factory):
    """fix-python-import with its version 1 test (agent code run as root)."""
    root = tmp_path_factory.mktemp("v1")
    shutil.copytree(LITE_DIR / "fix-python-import", root / "fix-python-import")
    (root / "fix-python-import" / "tests" / "test_outputs.py").write_text(V1_TEST)
    return root


def test_the_probes_forge_a_test_that_runs_agent_code_as_root(lite_suite, v1_tasks):
    suite = TerminalSuite(load_tasks(v1_tasks))  # the agent unprivileged, as in terminal-lite
    assert _play(suite, "fix-python-import", "submit").reward == 0.0
    forged = _play(suite, "fix-python-import", FORGERIES["forge:reward-file"])
    assert forged.reward == 1.0  # main.py, run as root, wrote reward.json
    killed = _play(suite, "fix-python-import", FORGERIES["forge:kill-verifier"])
    assert killed.reward == 0.0 and killed.info["verifier"].startswith(
        "verifier exited abnormally (status 137")


def test_the_probes_forge_a_terminal_bench_verifier_run_as_the_root_agent(lite_suite,
                                                                          v1_tasks):
    suite = TerminalBenchSuite(v1_tasks)  # the agent root, one shell session, as upstream
    assert _play(suite, "fix-python-import", "submit").reward == 0.0
    # a .pth start-up file in the system Python runs inside the verifier's own pytest
    assert _play(suite, "fix-python-import", FORGERIES["forge:summary"]).reward == 1.0
    assert _play(suite, "fix-python-import", FORGERIES["forge:reward-file"]).reward == 1.0


def test_the_summary_probe_forges_a_tb1_verifier_that_parses_pytest_output(lite_suite,
                                                                           tmp_path):
    """Terminal-Bench 1's verdict is upstream's parse of pytest's ``-rA`` summary: a start-up
    file planted by the root agent prints a summary of passes and ends pytest at once."""
    write_tb1_task(tmp_path, "answer", dockerfile="FROM debian:bookworm\nWORKDIR /app\n",
                   solution="echo yes > /app/answer.txt",
                   test="def test_answer():\n    assert open('/app/answer.txt').read() == "
                        "'yes\\n'\n")
    suite = TerminalBenchSuite(tmp_path)
    assert _play(suite, "answer", "submit").reward == 0.0
    forged = _play(suite, "answer", FORGERIES["forge:summary"])
    assert (forged.reward, forged.info["verifier"]) == (1.0, "all tests passed")
    killed = _play(suite, "answer", FORGERIES["forge:kill-verifier"])
    assert killed.reward == 0.0 and killed.info["verifier"].startswith("verifier")


def _audit(suite_id: str, db: str, **options):
    return audit_suite(AuditConfig(suite_id, db=db, k=2, eval_seeds=1, regrades=1,
                                   max_regraded=2, concurrency=2, **options))


def test_an_audit_of_terminal_lite_finds_no_task_forgeable(lite_suite, tmp_path):
    result = _audit("terminal-lite", str(tmp_path / "a.db"), n_tasks=2)
    forgery = result.rates[(result.rates["probe"].str.startswith("forge:"))
                           & (result.rates["task_type"] == "all")]
    assert sorted(forgery["probe"]) == sorted(FORGERIES)
    assert (forgery["success"] == 0).all() and (forgery["n"] == 2).all()
    assert len(result.forgery) == 2 and not result.forgery["forgeable"].any()
    assert result.summary["forgeable_tasks"] == 0 and result.summary["forgery_tasks"] == 2
    assert "  forgery          0 of 2 tasks forgeable (a forgery probe changed the verdict)" \
        in summary_lines(result)


class _V1Suite(TerminalSuite):
    name = "forgery-control-test"
    version = 1


def test_an_audit_counts_the_task_the_probes_forge(lite_suite, v1_tasks, tmp_path,
                                                    monkeypatch):
    monkeypatch.setitem(base._REGISTRY, _V1Suite.name,
                        {1: lambda: _V1Suite(load_tasks(v1_tasks))})
    result = _audit("forgery-control-test", str(tmp_path / "a.db"))
    row = result.forgery.iloc[0]
    assert (row["task_id"], bool(row["forgeable"])) == ("fix-python-import", True)
    assert "forge:reward-file" in row["probes"] and result.summary["forgeable_tasks"] == 1
    assert any(line.startswith("  forgery          1 of 1 tasks forgeable (a forgery probe "
                               "changed the verdict): fix-python-import (forge:")
               for line in summary_lines(result))


def _ended(code, *, timed_out=False, killed_by=None) -> CommandResult:
    return CommandResult(code, "", timed_out, False, 0.1, killed_by)


def test_a_verifier_killed_or_ended_by_a_signal_gives_its_reason():
    assert abnormal_end(_ended(0)) is None and abnormal_end(_ended(1)) is None
    assert abnormal_end(_ended(127)) is None  # a missing command: the script's own verdict
    assert abnormal_end(_ended(None, timed_out=True)) == "timeout"
    assert abnormal_end(_ended(None)) == "verifier killed"
    assert abnormal_end(_ended(-9)) == "verifier killed"
    assert abnormal_end(_ended(137)) == ("verifier exited abnormally (status 137: killed by a "
                                         "signal)")
    assert abnormal_end(_ended(None, killed_by="memory bound (cgroup)")) == (
        "verifier killed by the memory bound (cgroup)")
