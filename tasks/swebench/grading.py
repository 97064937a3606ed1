"""Grading with the official `swebench` package: its eval-script steps, log parsers and
resolution rule.

The verdict of an episode is computed exactly as the official harness computes it
(``swebench.harness.grading.get_logs_eval`` then ``get_eval_tests_report`` and
``get_resolution_status``): the log between the ``>>>>> Start/End Test Output`` markers is
parsed with the official parser named by the row (``log_parser``; the repository's entry of
``MAP_REPO_TO_PARSER`` otherwise; ``parse_log_pytest`` for the bundled suite) and the instance
is resolved iff every FAIL_TO_PASS and every PASS_TO_PASS test passes. `grade_log` restates
only the ten lines of ``get_logs_eval`` that pick the parser by repository (so the bundled
suite, whose repositories upstream does not list, goes through the same code); the
cross-check test compares its verdicts with ``get_eval_report`` on recorded logs.

Before the agent's patch is applied, `sanitize_patch` drops its changes to test
infrastructure (``conftest.py``, pytest/tox configuration, ``sitecustomize``/``.pth`` hooks,
and test files): the official harness resets only the files the test patch touches, so a
conftest that rewrites reports would otherwise pass every test; `tasks.swebench.tamper` then
drops its pytest-configuration hunks and flags what it cannot drop.

The verdict departs from the official rule in one direction only (issue 39): a log whose test
section shows signs of a report added by the code under test (`forged_results`) is not
resolved, with the reason in `Verdict.reason`; the local backend reads the log from its own
pipe and fails runs killed by a signal (`tasks.swebench.local`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from harness.core import MissingDependencyError
from tasks.swebench.data import Instance

__all__ = ["Verdict", "official", "parser_for", "grade_log", "forged_results", "eval_script",
           "sanitize_patch", "patch_files", "APPLY_COMMANDS", "official_report", "with_test_status"]

HEREDOC = "EOF_114329324912"  # the official harness's delimiter (test_spec/python.py)
APPLY_COMMANDS = ("git apply --verbose", "git apply --verbose --reject",
                  "patch --batch --fuzz=5 -p1 -i")
"""The official harness's ``GIT_APPLY_CMDS``, tried in order (run_evaluation.py)."""


def official() -> Any:
    """The `swebench` package's harness modules, or a `MissingDependencyError`."""
    try:
        from swebench.harness import constants, grading, log_parsers
    except ImportError as exc:
        raise MissingDependencyError("swebench", "swebench", "grading SWE-bench episodes") \
            from exc
    return type("Official", (), {"constants": constants, "grading": grading,
                                 "log_parsers": log_parsers})


def parser_for(instance: Instance) -> Callable[[str, Any], dict[str, str]]:
    """The official log parser of `instance`: the row's ``log_parser`` name, else the
    repository's entry in ``MAP_REPO_TO_PARSER``, else ``parse_log_pytest``."""
    parsers = official().log_parsers
    from swebench.harness.log_parsers import python as python_parsers

    name = instance.log_parser or instance.extra.get("log_parser", "")
    if name and hasattr(python_parsers, name):
        return getattr(python_parsers, name)
    if instance.repo in parsers.MAP_REPO_TO_PARSER:
        return parsers.MAP_REPO_TO_PARSER[instance.repo]
    return python_parsers.parse_log_pytest


def _test_spec(instance: Instance) -> Any:
    from swebench.harness.test_spec.test_spec import TestSpec

    return TestSpec(instance_id=instance.instance_id, repo=instance.repo,
                    version=instance.version, repo_script_list=[], eval_script_list=[],
                    env_script_list=[], arch="x86_64", FAIL_TO_PASS=list(instance.fail_to_pass),
                    PASS_TO_PASS=list(instance.pass_to_pass), language="py", docker_specs={},
                    namespace=None)


@dataclass(frozen=True)
class Verdict:
    """The official grade of one test log.

    `status`: ``RESOLVED_FULL`` / ``RESOLVED_PARTIAL`` / ``RESOLVED_NO``; `applied`: the log
    shows the patches applied and the tests ran (``get_logs_eval``'s flag); `tests`: the
    official report (``FAIL_TO_PASS``/``PASS_TO_PASS`` -> ``success``/``failure`` lists);
    `status_map`: test id -> PASSED/FAILED/SKIPPED/ERROR/XFAIL as the parser read it;
    `reason`: set when the harness overrides the official rule (a forged or killed run).
    """

    resolved: bool
    status: str
    applied: bool
    tests: Mapping[str, Mapping[str, Sequence[str]]] = field(default_factory=dict)
    status_map: Mapping[str, str] = field(default_factory=dict)
    reason: str = ""
    """Why a log whose tests the official rule passes is not resolved (`forged_results`)."""

    def failed_tests(self) -> list[str]:
        return [t for kind in ("FAIL_TO_PASS", "PASS_TO_PASS")
                for t in self.tests.get(kind, {}).get("failure", [])]


def _status_map(log: str, instance: Instance) -> tuple[dict[str, str], bool]:
    """``get_logs_eval`` with the parser chosen by `parser_for` (same markers, same rules)."""
    c = official().constants
    if any(code in log for code in (c.APPLY_PATCH_FAIL, c.RESET_FAILED, c.TESTS_ERROR,
                                    c.TESTS_TIMEOUT)):
        return {}, False
    if not (c.START_TEST_OUTPUT in log and c.END_TEST_OUTPUT in log):
        return {}, False
    parser, spec = parser_for(instance), _test_spec(instance)
    status_map = parser(log.split(c.START_TEST_OUTPUT)[1].split(c.END_TEST_OUTPUT)[0], spec)
    if not status_map:
        status_map = parser(log, spec)
    return status_map, True


_PYTEST_FINAL = re.compile(r"^=+ (?P<counts>.*?) in [\d.]+ ?s(?:econds)?(?: \([^)]*\))? =+$")
_PYTEST_PARSERS = ("parse_log_pytest", "parse_log_pytest_options", "parse_log_pytest_v2")


def forged_results(log: str, instance: Instance) -> str:
    """Why the test section of `log` cannot be pytest's own report ("" when nothing says so).

    The graded code runs inside the test process, so it can print to the log the harness
    reads. For logs read by the official pytest parsers, three signs give an added report
    away: an outcome of one of the instance's tests after pytest's last closing ``=== N
    passed in Xs ===`` line; one of its tests reported both FAILED and PASSED, or PASSED after
    ERROR (pytest's ``-rA`` lists passes before errors: a teardown error is PASSED then
    ERROR); more tests PASSED than the closing lines count. Inner pytest sessions that a
    test prints (``pytester`` output in the PASSES section) come before the last closing line
    and name other tests. A forgery that replaces pytest's whole report shows none of these
    signs (`tasks.swebench.tamper` says what is flagged instead)."""
    c = official().constants
    if not (c.START_TEST_OUTPUT in log and c.END_TEST_OUTPUT in log):
        return ""
    parser = parser_for(instance)
    if parser.__name__ not in _PYTEST_PARSERS:
        return ""
    spec, graded = _test_spec(instance), {*instance.fail_to_pass, *instance.pass_to_pass}
    lines = log.split(c.START_TEST_OUTPUT)[1].split(c.END_TEST_OUTPUT)[0].split("\n")
    outcomes: list[tuple[int, str, str]] = []  # (line index, test, status)
    closing, counted = -1, 0
    for index, line in enumerate(lines):
        final = _PYTEST_FINAL.match(line.strip())
        if final:
            closing = index
            counted += sum(int(n) for n in re.findall(r"(\d+) passed", final.group("counts")))
            continue
        outcomes += [(index, test, status) for test, status in parser(line, spec).items()]
    late = [test for index, test, _ in outcomes if index > closing >= 0 and test in graded]
    if late:
        return f"test outcome printed after pytest's closing line: {late[0]}"
    for test in sorted(graded):
        statuses = [status for _, name, status in outcomes if name == test]
        if "PASSED" in statuses and ("FAILED" in statuses or "ERROR" in statuses[
                :len(statuses) - 1 - statuses[::-1].index("PASSED")]):
            return f"{test} reported {' then '.join(statuses)}"
    passed = {test for _, test, status in outcomes if status == "PASSED"}
    if closing >= 0 and len(passed) > counted:
        return f"{len(passed)} tests reported PASSED but pytest's closing lines count {counted}"
    return ""


def grade_log(log: str, instance: Instance) -> Verdict:
    """The official verdict for the test log `log` of `instance` (module docstring); a log
    with signs of a forged report (`forged_results`) is not resolved, with that reason."""
    o = official()
    status_map, applied = _status_map(log, instance)
    if not applied:
        return Verdict(False, o.constants.ResolvedStatus.NO.value, False)
    reference = {"instance_id": instance.instance_id,
                 "FAIL_TO_PASS": list(instance.fail_to_pass),
                 "PASS_TO_PASS": list(instance.pass_to_pass)}
    eval_type = (o.constants.EvalType.FAIL_ONLY if instance.repo in o.constants.FAIL_ONLY_REPOS
                 else o.constants.EvalType.PASS_AND_FAIL)
    report = o.grading.get_eval_tests_report(status_map, reference, eval_type=eval_type)
    status = o.grading.get_resolution_status(report)
    forged = forged_results(log, instance)
    if forged:
        status = o.constants.ResolvedStatus.NO.value
    return Verdict(status == o.constants.ResolvedStatus.FULL.value, status, True,
                   {k: {"success": list(v["success"]), "failure": list(v["failure"])}
                    for k, v in report.items() if k in ("FAIL_TO_PASS", "PASS_TO_PASS")},
                   status_map, forged)


def official_report(instance: Instance, log_path: str, patch: str | None) -> dict[str, Any]:
    """``swebench.harness.grading.get_eval_report`` on a log file (repositories upstream
    lists only): the package's own verdict, for the cross-check."""
    prediction = {"instance_id": instance.instance_id, "model_patch": patch,
                  "model_name_or_path": "harness"}
    report = official().grading.get_eval_report(_test_spec(instance), prediction, log_path,
                                                 include_tests_status=True)
    return report[instance.instance_id]


# ---------------------------------------------------------------------------------------------
# The eval script

def patch_files(patch: str) -> list[str]:
    """Paths a unified diff touches (``b/`` side, ``a/`` side for deletions), in order."""
    paths: list[str] = []
    for match in re.finditer(r"^diff --git a/(\S+) b/(\S+)$", patch, re.M):
        path = match.group(2) if match.group(2) != "/dev/null" else match.group(1)
        if path not in paths:
            paths.append(path)
    return paths


def test_directives(instance: Instance) -> list[str]:
    """The official ``get_test_directives`` (the test files of the test patch)."""
    from swebench.harness.test_spec.python import get_test_directives

    return get_test_directives({"repo": instance.repo, "test_patch": instance.test_patch})


def eval_script(instance: Instance, test_cmd: str, install: str = "",
                pre_commands: Sequence[str] = ()) -> str:
    """The per-instance test script: the row's official ``eval_script`` when it has one,
    else the same steps ``make_eval_script_list_py`` writes (reset the test files, apply the
    test patch, run `test_cmd` on the test patch's files between the markers, reset again)."""
    if instance.eval_script.strip():
        return instance.eval_script
    c = official().constants
    test_files = " ".join(patch_files(instance.test_patch))
    reset = f"git checkout {instance.base_commit} {test_files}"
    lines = ["#!/bin/bash", "set -uxo pipefail", "source /opt/miniconda3/bin/activate",
             "conda activate testbed", "cd /testbed", *pre_commands,
             "git config --global --add safe.directory /testbed", "git status",
             f"git -c core.fileMode=false diff {instance.base_commit}"]
    if install:
        lines.append(install)
    lines += [reset, f"git apply -v - <<'{HEREDOC}'\n{instance.test_patch}\n{HEREDOC}",
              f": '{c.START_TEST_OUTPUT}'",
              " ".join([test_cmd, *test_directives(instance)]),
              f": '{c.END_TEST_OUTPUT}'", reset]
    return "\n".join(lines) + "\n"


STATUS_VARIABLE = "harness_test_status"


def with_test_status(script: str) -> str:
    """`script` made to exit with its test command's status (the command just before the
    ``>>>>> End Test Output`` marker), so the harness reads how the tests ended from the
    sandbox's exit status, a channel the tests cannot print to; unchanged without a marker."""
    end = f": '{official().constants.END_TEST_OUTPUT}'"
    lines = script.rstrip("\n").split("\n")
    if end not in lines:
        return script
    lines.insert(lines.index(end), f"{STATUS_VARIABLE}=$?")
    return "\n".join([*lines, f'exit "${STATUS_VARIABLE}"']) + "\n"


def apply_script(patch_path: str) -> str:
    """Apply the prediction as the official harness does: each of `APPLY_COMMANDS` in turn,
    logging ``>>>>> Applied Patch`` or ``>>>>> Patch Apply Failed``."""
    c = official().constants
    tries = " || ".join(f"{cmd} {patch_path}" for cmd in APPLY_COMMANDS)
    return (f"cd /testbed && if [ -s {patch_path} ]; then if {tries}; then "
            f"echo '{c.APPLY_PATCH_PASS}'; else echo '{c.APPLY_PATCH_FAIL}'; exit 1; fi; "
            f"else echo '{c.APPLY_PATCH_PASS} (empty patch)'; fi")


# ---------------------------------------------------------------------------------------------
# Patch hygiene

_PROTECTED = re.compile(
    r"(^|/)(conftest\.py|\.?pytest\.(ini|toml)|tox\.ini|sitecustomize\.py|usercustomize\.py|"
    r"[^/]*\.pth|\.pytest_cache/.*)$"
    r"|(^|/)(tests?|testing)/"
    r"|(^|/)test_[^/]*\.py$|(^|/)[^/]*_tests?\.py$")


def _split_diff(patch: str) -> list[str]:
    parts = re.split(r"(?m)^(?=diff --git )", patch)
    return [p for p in parts if p.startswith("diff --git ")]


def sanitize_patch(patch: str, test_patch: str = "") -> tuple[str, list[str]]:
    """`patch` without its changes to test infrastructure and to the files of `test_patch`
    (those are reset before the test patch anyway); returns ``(kept patch, dropped paths)``."""
    test_files = set(patch_files(test_patch))
    kept, dropped = [], []
    for part in _split_diff(patch):
        paths = re.match(r"diff --git a/(\S+) b/(\S+)", part)
        names = {paths.group(1), paths.group(2)} if paths else set()
        if any(_PROTECTED.search(n) or n in test_files for n in names):
            dropped.append(paths.group(2) if paths else "?")
        else:
            kept.append(part if part.endswith("\n") else part + "\n")
    return "".join(kept), dropped
