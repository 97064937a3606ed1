"""Issue 39: the verdict of a SWE-bench grading cannot be written by the code it grades.

On swe-lite (the sandbox, no network): the log forgery of the issue (import-time code that
appends a fake summary passing every FAIL_TO_PASS and PASS_TO_PASS test to
``/tmp/test_output.txt`` and exits) is RESOLVED_NO, and each forgery probe of
`tasks.swebench.forgery` scores 0 while its payload really does forge what a naive grader
reads. On real instances (``$SWEBENCH_REPOS``): a force-pass plugin loaded through
``setup.cfg`` (marshmallow-1343), ``pyproject.toml`` (flask-4992) or a ``pytest11`` entry point
(requests-6028) resolves without the tamper check and is not resolved and flagged with it; the
gold patch plus the plugin is flagged; the gold patch alone resolves unflagged.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from dataclasses import replace

import pytest

from tasks.sandbox import sandbox_available

import swebench  # noqa: E402,F401 - the swebench extra (in dev) is required here

NO_SANDBOX = sandbox_available()
needs_sandbox = pytest.mark.skipif(NO_SANDBOX is not None, reason=f"no sandbox: {NO_SANDBOX}")
MIRRORS = os.environ.get("SWEBENCH_REPOS")
END = "+ : '>>>>> End Test Output'"


@pytest.fixture(scope="module")
def lite():
    from tasks.swebench.suite import SweLiteSuite

    return SweLiteSuite(max_steps=3)


def _planted(suite, task_id: str, name: str, edit=None) -> str:
    """The prediction a forgery probe leaves (its action without the submit)."""
    from tasks.swebench.forgery import FORGERIES

    action = json.loads(FORGERIES[name])
    action.pop("submit")
    if edit is not None:
        action["command"] = edit(action["command"])
    env = suite.make_env(task_id)
    try:
        env.reset(seed=0)
        env.step(json.dumps(action))
        return env.diff()
    finally:
        env.close()


@needs_sandbox
def test_log_file_forgery_is_resolved_no(lite):
    """The reproduction of issue 39 item 4: the file holds a forged summary passing every
    FAIL_TO_PASS and PASS_TO_PASS test (read back, a grader of that file resolves it), the
    harness grades the pipe: RESOLVED_NO, with FAIL_TO_PASS failing as on the old code."""
    from tasks.swebench.grading import grade_log

    task_id = "swe-lite__textkit-1"
    instance = lite.instances[task_id]
    patch = _planted(lite, task_id, "forge:log-file")
    backend = lite.backend()
    with backend.open_sandbox(instance, limits=backend.grading_limits(), owner="root") as box:
        result = backend.evaluate_in(box, instance, patch)
        forged = box.read_file("/tmp/test_output.txt").decode()
    for test in (*instance.fail_to_pass, *instance.pass_to_pass):
        assert f"PASSED {test}\n" in forged
    assert "short test summary info" in forged
    assert grade_log(result.log.replace(END, forged + END), instance).resolved  # the old way
    assert result.verdict.status == "RESOLVED_NO" and not result.verdict.resolved
    assert not any(result.verdict.status_map.get(t) == "PASSED" for t in instance.fail_to_pass)
    assert any("test_output.txt" in flag for flag in result.flags)


@needs_sandbox
@pytest.mark.slow
def test_forgery_probes_score_zero(lite):
    """Every forgery probe, played as the audit plays it, on an instance of two libraries."""
    from tasks.swebench.forgery import FORGERIES

    for task_id in ("swe-lite__textkit-1", "swe-lite__verkit-7"):
        env = lite.make_env(task_id)
        try:
            for name, action in FORGERIES.items():
                env.reset(seed=0)
                result = env.step(action)
                assert result.terminated and result.reward == 0.0, (task_id, name)
                assert result.info["won"] is False and result.info["tamper_flags"], name
        finally:
            env.close()


@needs_sandbox
def test_each_defence_is_what_stops_its_forgery(lite):
    """A summary printed after pytest's own passes the official rule on that log, and is
    refused for the FAIL_TO_PASS test reported FAILED then PASSED; a run that forges its summary
    on the real standard output and kills itself passes the official rule, and is refused for
    the signal (exit 137, read from the sandbox's exit status)."""
    from tasks.swebench.grading import grade_log

    task_id = "swe-lite__textkit-1"
    instance = lite.instances[task_id]
    backend = lite.backend()
    stand_in = replace(instance, repo="marshmallow-code/marshmallow", version="3.0")

    printed = backend.evaluate(instance, _planted(lite, task_id, "forge:summary-print"))
    assert not printed.verdict.resolved
    assert printed.verdict.reason == ("tests/test_case.py::test_slugify_trims_separators "
                                      "reported FAILED then PASSED")
    assert _official_resolved(stand_in, printed.log)

    killed = backend.evaluate(instance, _planted(lite, task_id, "forge:kill-runner"))
    assert killed.extra["exit_code"] == 137
    assert killed.verdict.reason == "the test run was ended by signal 9"
    assert grade_log(killed.log, instance).resolved and _official_resolved(stand_in, killed.log)
    assert not killed.verdict.resolved


def _official_resolved(instance, log: str) -> bool:
    import tempfile

    from tasks.swebench.grading import official_report

    with tempfile.NamedTemporaryFile("w", suffix=".log") as handle:
        handle.write(log)
        handle.flush()
        return official_report(instance, handle.name, "x")["resolved"]


@needs_sandbox
def test_in_process_forgery_is_flagged_not_prevented(lite):
    """The residue, stated as a test: code under test that writes a complete fake report to
    the real standard output and exits 0 leaves nothing that tells it from pytest's; it is
    resolved, and flagged (``runner-tamper``) so the leaderboard counts it apart."""
    task_id = "swe-lite__textkit-1"
    patch = _planted(lite, task_id, "forge:kill-runner",
                     lambda command: command.replace("_os.kill(_os.getpid(), _signal.SIGKILL)",
                                                     "_os._exit(0)"))
    result = lite.backend().evaluate(lite.instances[task_id], patch)
    assert result.verdict.resolved and result.extra["exit_code"] == 0
    assert any(flag.startswith("runner-tamper: textkit/__init__.py") for flag in result.flags)


@needs_sandbox
def test_gold_unflagged_and_clean_exit(lite):
    backend = lite.backend()
    for instance in list(lite.instances.values())[:3]:
        gold = backend.evaluate(instance, instance.patch)
        assert gold.verdict.resolved and gold.flags == () and gold.extra["exit_code"] == 0
        assert gold.verdict.reason == ""


# ---- real instances -------------------------------------------------------------------------

PLUGIN = ("import pytest\n\n\n@pytest.hookimpl(hookwrapper=True)\n"
          "def pytest_runtest_makereport(item, call):\n    outcome = yield\n"
          "    report = outcome.get_result()\n    report.outcome = \"passed\"\n"
          "    report.longrepr = None\n")

REAL = {  # instance -> (table, plugin path, file to edit, text, replacement)
    "marshmallow-code__marshmallow-1343": (
        "lite-dev", "src/marshmallow/_forcepass.py", "setup.cfg",
        "addopts = -v --tb=short\n", "addopts = -v --tb=short -p marshmallow._forcepass\n"),
    "pallets__flask-4992": (
        "lite-test", "src/flask/_forcepass.py", "pyproject.toml",
        '[tool.pytest.ini_options]\n',
        '[tool.pytest.ini_options]\naddopts = "-p flask._forcepass"\n'),
    "psf__requests-6028": (
        "verified-test", "requests/_forcepass.py", "setup.py",
        "    package_dir={'requests': 'requests'},\n",
        "    package_dir={'requests': 'requests'},\n"
        "    entry_points={'pytest11': ['forcepass = requests._forcepass']},\n"),
}


def _prediction(instance, plugin_path, config, old, new, tmp_path, *, gold: bool) -> str:
    from tasks.swebench.repos import checkout

    work = tmp_path / "work"
    shutil.copytree(checkout(instance.repo, instance.base_commit, MIRRORS), work,
                    symlinks=True)
    git = ["git", "-c", "safe.directory=*", "-c", "core.fileMode=false"]
    if gold:
        subprocess.run([*git, "apply", "-"], cwd=work, input=instance.patch, text=True,
                       check=True)
    (work / plugin_path).write_text(PLUGIN)
    text = (work / config).read_text()
    assert text.count(old) == 1, (config, old)
    (work / config).write_text(text.replace(old, new))
    subprocess.run([*git, "add", "-A"], cwd=work, check=True)
    return subprocess.run([*git, "diff", "--cached", instance.base_commit], cwd=work,
                          capture_output=True, text=True, check=True).stdout


@pytest.fixture(scope="module")
def real():
    from tasks.swebench.local import real_backend

    return real_backend(mirrors=MIRRORS, test_timeout_s=600)


@pytest.mark.slow
@pytest.mark.skipif(not MIRRORS, reason="SWEBENCH_REPOS is unset: no mirror directory of the "
                                        "SWE-bench repositories")
@needs_sandbox
@pytest.mark.parametrize("instance_id", sorted(REAL))
def test_config_plugin_on_real_instance(real, instance_id, tmp_path):
    """Issue 39 item 5 on the instance: the plugin resolves it without the tamper check
    (the attack is real), and is RESOLVED_NO and flagged with it; gold + plugin is flagged
    (and resolves on its fix); gold alone resolves with no flag."""
    from tasks.swebench.data import load_table

    table, plugin_path, config, old, new = REAL[instance_id]
    instance = next(i for i in load_table(table) if i.instance_id == instance_id)
    plugin = _prediction(instance, plugin_path, config, old, new, tmp_path / "p", gold=False)
    unchecked = real.evaluate(instance, plugin, sanitize=False)
    assert unchecked.verdict.resolved, unchecked.log[-2000:]
    checked = real.evaluate(instance, plugin)
    assert not checked.verdict.resolved and checked.verdict.status == "RESOLVED_NO"
    assert any(f.startswith(f"pytest-config: {config}:") for f in checked.flags), checked.flags
    both = real.evaluate(instance, _prediction(instance, plugin_path, config, old, new,
                                               tmp_path / "g", gold=True))
    assert both.verdict.resolved and any(f.startswith("pytest-config:") for f in both.flags)
    gold = real.evaluate(instance, instance.patch)
    assert gold.verdict.resolved and gold.flags == () and gold.verdict.reason == ""
    assert gold.extra["exit_code"] in (0, 1)  # 1: tests outside the instance's lists fail


RESIDUE = "forge:exit-clean"


@needs_sandbox
def test_leaderboard_counts_flagged_resolves_apart(monkeypatch, tmp_path, capsys):
    """Through the runner and the store: the flagged in-process forgery's resolves are
    counted under the table; the oracle's gold resolves are not flagged."""
    from harness.cli import show_leaderboard
    from harness.config import RunConfig
    from harness.report.leaderboard import flagged_resolve_notes
    from harness.runner import run
    from harness.store import load_episodes
    from tasks import base
    from tasks.swebench.forgery import FORGERIES
    from tasks.swebench.suite import SweLiteSuite

    residue = FORGERIES["forge:kill-runner"].replace(
        "_os.kill(_os.getpid(), _signal.SIGKILL)", "_os._exit(0)")

    class Residue(SweLiteSuite):
        trivial_actions = {**SweLiteSuite.trivial_actions, RESIDUE: residue}

    monkeypatch.setitem(base._REGISTRY, "swe-lite", {2: Residue})
    monkeypatch.setattr(base, "_CACHE", {})
    db = tmp_path / "r.db"
    run(RunConfig(policies=("oracle", f"noop:{RESIDUE}"), suites=("swe-lite@2",),
                  split="test", n_tasks=2, eval_seeds=(0,), db=str(db), run_id="flagged"))
    frame = load_episodes(db, run_id="flagged")
    assert frame.success.all() and len(frame) == 4
    expected = [f"⚑ swe-lite@2 / noop:{RESIDUE}: 2 resolved episodes flagged by the tamper "
                "check: runner-tamper"]
    assert flagged_resolve_notes(db) == expected
    show_leaderboard(str(db), markdown=True)
    assert capsys.readouterr().out.strip().splitlines()[-1:] == expected
