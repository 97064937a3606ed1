"""``swe-lite@2`` in the sandbox through the same backend and grading as the real suites:
every instance's FAIL_TO_PASS tests fail on the base and pass with the gold patch, its
PASS_TO_PASS tests pass on both; the exploit probes score 0; the env passes `check_env`; and
the verdicts equal the official ``get_eval_report`` on the recorded logs."""

from __future__ import annotations

import json

import pytest

from tasks.sandbox import sandbox_available
from tasks.swebench.lite import lite_instances
from tasks.swebench.lite.build import build_rows

import swebench  # noqa: E402,F401 - the swebench extra (in dev) is required here
NO_SANDBOX = sandbox_available()
needs_sandbox = pytest.mark.skipif(NO_SANDBOX is not None, reason=f"no sandbox: {NO_SANDBOX}")


@pytest.fixture(scope="module")
def backend():
    from tasks.swebench.lite import lite_backend

    return lite_backend()


def test_rows_are_built_from_the_libraries():
    from tasks.swebench.lite import LITE_DIR

    rows = [json.loads(line) for line in (LITE_DIR / "instances.jsonl").read_text().splitlines()]
    assert rows == build_rows()
    assert len(rows) >= 30 and len({r["repo"] for r in rows}) >= 4
    for row in rows:
        assert set(json.loads(row["FAIL_TO_PASS"])).isdisjoint(json.loads(row["PASS_TO_PASS"]))
        assert row["problem_statement"].strip() and row["patch"] and row["test_patch"]


def _statuses(verdict, tests):
    return {verdict.status_map.get(t, "MISSING") for t in tests}


@needs_sandbox
@pytest.mark.slow
def test_every_instance_gold_resolves_and_base_fails(backend, tmp_path):
    from tasks.swebench.grading import official_report
    from dataclasses import replace

    for instance in lite_instances():
        gold = backend.evaluate(instance, instance.patch)
        empty = backend.evaluate(instance, "")
        assert gold.verdict.resolved, (instance.instance_id, gold.verdict.failed_tests())
        assert gold.flags == () and gold.verdict.reason == "", instance.instance_id  # issue 39
        assert _statuses(gold.verdict, instance.pass_to_pass) == {"PASSED"}
        assert not empty.verdict.resolved, instance.instance_id
        assert _statuses(empty.verdict, instance.fail_to_pass) <= {"FAILED", "ERROR"}
        assert _statuses(empty.verdict, instance.pass_to_pass) == {"PASSED"}, \
            instance.instance_id
        # the package's own grading on the same logs (a repository it knows whose parser is
        # parse_log_pytest stands in for ours: it only picks the parser)
        stand_in = replace(instance, repo="marshmallow-code/marshmallow", version="3.0")
        for result in (gold, empty):
            path = tmp_path / "log.txt"
            path.write_text(result.log)
            assert official_report(stand_in, str(path), "x")["resolved"] == \
                result.verdict.resolved


@needs_sandbox
@pytest.mark.slow
def test_exploit_probes_score_zero_and_conftest_would_bite(backend):
    from tasks.swebench.suite import EXPLOITS, SweLiteSuite

    suite = SweLiteSuite(max_steps=3)
    for task_id in ("swe-lite__textkit-1", "swe-lite__verkit-7"):
        env = suite.make_env(task_id)
        try:
            for name, action in {"submit-empty": '{"tool": "submit"}', **EXPLOITS}.items():
                env.reset(seed=0)
                result = env.step(action)
                assert result.terminated and result.reward == 0.0, (task_id, name)
                assert result.info["won"] is False
            env.reset(seed=0)
            env.step(EXPLOITS["conftest-pass"].replace(', "submit": true', ""))
            patch = env.diff()
        finally:
            env.close()
        instance = suite.instances[task_id]
        assert backend.evaluate(instance, patch, sanitize=False).verdict.resolved
        assert not backend.evaluate(instance, patch).verdict.resolved


@needs_sandbox
def test_env_contract_tools_and_snapshot():
    from tasks.base import check_env
    from tasks.swebench.suite import SweLiteSuite

    suite = SweLiteSuite(max_steps=4)
    env = suite.make_env("swe-lite__statkit-7")
    try:
        check_env(env, n_steps=2)
        env.reset(seed=0)
        view = env.step('{"tool": "view", "path": "statkit/scale.py", "start": 6, "end": 8}')
        assert "     6\tdef clamp(value, low, high):" in view.observation
        fix = ('{"tool": "str_replace", "path": "statkit/scale.py", "old": "    return max(low, '
               'min(value, high))\\n", "new": "    if low > high:\\n        raise ValueError('
               '\\"low must not exceed high\\")\\n    return max(low, min(value, high))\\n"}')
        assert env.step(fix).info["invalid"] is False
        snap = env.snapshot()
        won = env.step("submit")
        assert won.reward == 1.0 and won.terminated
        env.restore(snap)
        undo = env.step('{"tool": "bash", "command": "git checkout statkit/scale.py", '
                        '"submit": true}')
        assert undo.reward == 0.0
        env.reset(seed=0)
        assert env.step(env.oracle_action()).reward == 1.0
    finally:
        env.close()
