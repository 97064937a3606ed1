"""The headless `files` backend end to end: the official evaluator functions score the
project's reference solutions 1.0 on every supported task, doing nothing ("DONE" at once) 0,
declaring infeasible ("FAIL") 1 exactly on upstream's infeasible tasks; expected values never
enter the sandbox. Needs the sandbox (root, bubblewrap; the rootfs is built once)."""

import collections
import json

import pytest

from tasks import check_env, get_suite
from tasks.osworld.solutions import SOLUTIONS
from tasks.sandbox import sandbox_available

pytestmark = pytest.mark.skipif(sandbox_available() is not None,
                                reason=f"sandbox unavailable: {sandbox_available()}")


@pytest.fixture(scope="module")
def suite():
    return get_suite("osworld-files@1")


def _play(env, actions):
    env.reset(seed=0)
    for action in actions:
        result = env.step(action)
        if result.terminated or result.truncated:
            return result.info["score"]
    return env.step("DONE").info["score"]


def test_supported_subset_and_reasons(suite):
    domains = collections.Counter(t.task_type for t in suite.tasks())
    assert domains == {"vs_code": 10, "os": 9, "chrome": 3, "gimp": 3, "vlc": 3,
                       "libreoffice_calc": 1, "multi_apps": 1}
    assert len(suite.verdicts) == 369
    dropped = {t.id: v for t, v in suite.unsupported_tasks() if v.kind == "initial state"}
    # the screen lock is on by default here, so "turn the lock on" would pass doing nothing
    assert set(dropped) == {"a4d98375-215b-4a4d-aee9-3d4370fccc41"}
    feasible = [t for t in suite.tasks() if not t.metadata["infeasible"]]
    assert {t.id for t in feasible} <= set(SOLUTIONS)


@pytest.mark.slow
def test_reference_solutions_score_one_and_doing_nothing_zero(suite):
    scores = {}
    for spec in suite.tasks():
        env = suite.make_env(spec.id)
        try:
            oracle = []
            env.reset(seed=0)
            while True:
                result = env.step(env.oracle_action())
                if result.terminated or result.truncated:
                    break
            scores[spec.id] = (result.info["score"], _play(env, ["DONE"]),
                               _play(env, ["FAIL"]))
        finally:
            env.close()
    assert all(oracle == 1.0 for oracle, _, _ in scores.values()), scores
    assert all(done == 0.0 for _, done, _ in scores.values()), scores
    for spec in suite.tasks():
        assert scores[spec.id][2] == (1.0 if spec.metadata["infeasible"] else 0.0), spec.id


def test_check_env_and_snapshot(suite):
    env = suite.make_env("9439a27b-18ae-42d8-9778-5f68f891805e")
    try:
        check_env(env, seed=0)
        env.reset(seed=0)
        snap = env.snapshot()
        assert env.step(env.oracle_action()).info["score"] == 0.0  # not terminal yet
        assert env.step("DONE").info["score"] == 1.0
        env.restore(snap)
        assert env.step("DONE").info["score"] == 0.0
    finally:
        env.close()


def _expected_strings(task):
    """Distinctive strings of the evaluator's expected values (>= 10 characters)."""
    text = json.dumps(task.getter_configs("expected"))
    values = json.loads(text)
    found = []

    def walk(value):
        if isinstance(value, dict):
            for key, item in value.items():
                walk(key)
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)
        elif isinstance(value, str) and len(value) >= 10 and value not in ("expected",):
            found.append(value)

    walk(values)
    return found


def test_exploit_probe_expected_values_never_enter_the_sandbox(suite):
    """An agent that greps the machine for the evaluator's expected values finds nothing:
    nothing of the evaluator is written into the sandbox (checked on the writable layer from
    the host and by the agent itself)."""
    probed = 0
    for task_id in ("982d12a5-beab-424f-8d38-d2a48429e511",
                    "930fdb3b-11a8-46fe-9bac-577332e2640e",
                    "ea98c5d7-3cf9-4f9b-8ad3-366b58e0fcae"):
        env = suite.make_env(task_id)
        try:
            env.reset(seed=0)
            needles = _expected_strings(env.task)
            assert needles
            layer = b"".join(p.read_bytes() for p in env._sandbox.upper.rglob("*")
                             if p.is_file() and not p.is_symlink())
            for needle in needles:
                assert needle.encode() not in layer
                probe = env.step("```bash\ngrep -rlF -- " + json.dumps(needle) +
                                 " /home /tmp /etc /root /work /usr/local 2>/dev/null; "
                                 "env | grep -F -- " + json.dumps(needle) + "\n```")
                assert needle not in probe.observation.replace(json.dumps(needle), "")
                probed += 1
            assert env.step("DONE").info["score"] == 0.0
        finally:
            env.close()
    assert probed >= 3
