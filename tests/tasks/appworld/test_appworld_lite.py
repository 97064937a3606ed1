"""appworld-lite: seeded worlds, the database-diff grader, the API server in the sandbox,
oracle 100%, doing nothing 0%, collateral-damage and skipped-login probes caught, tokens bound
to the episode, no way to the database."""

import collections
import sqlite3

import numpy as np
import pytest

from tasks import get_suite
from tasks.appworld.apps import INVALID_TOKEN, LOGIN_APPS, ApiError, Apps
from tasks.appworld.env import parse_cell
from tasks.appworld.grading import Expectation, grade
from tasks.appworld.server import call_direct
from tasks.appworld.world import NOW, build_world, world_bytes
from tasks.sandbox import Limits, sandbox_available

needs_sandbox = pytest.mark.skipif(sandbox_available() is not None,
                                   reason=f"sandbox unavailable: {sandbox_available()}")

PROBES = {  # collateral damage added to the reference program, just before completing
    "extra-note": "apis.simple_note.create_note(access_token=apis.simple_note.login("
                  "username=me, password=passwords['simple_note'])['access_token'], "
                  "title='scratch', content='tmp')\n",
    "delete-note": "apis.simple_note.delete_note(access_token=apis.simple_note.login("
                   "username=me, password=passwords['simple_note'])['access_token'], "
                   "note_id=1)\n",
    "extra-payment": "apis.venmo.send_money(access_token=apis.venmo.login(username=me, "
                     "password=passwords['venmo'])['access_token'], "
                     "receiver_email='stranger@example.com', amount=1.0)\n",
}
LOGIN = '    return getattr(apis, app).login(username=me, password=passwords[app])["access_token"]'
"""The reference programs' login helper (the `PRELUDE` of `tasks.appworld.templates`)."""


@pytest.fixture(scope="module")
def suite():
    return get_suite("appworld-lite@2")


def test_worlds_are_seeded():
    assert world_bytes(3) == world_bytes(3)
    assert world_bytes(3) != world_bytes(4)


def test_suite_has_three_difficulty_levels(suite):
    levels = collections.Counter(t.task_type for t in suite.tasks())
    assert levels == {"difficulty-1": 30, "difficulty-2": 30, "difficulty-3": 30}
    assert {t.split for t in suite.tasks()} == {"train", "dev", "test"}
    assert suite.comparability.generated_records


def _world(token_seed=0):
    start = build_world(5)
    end = sqlite3.connect(":memory:", check_same_thread=False)
    end.deserialize(start.serialize())
    return start, end, Apps(end, NOW, np.random.default_rng(token_seed))


def _login(apps, app):
    (password,) = apps.db.execute("SELECT password FROM account_password WHERE "
                                  "account_name=?", (app,)).fetchone()
    (email,) = apps.db.execute("SELECT email FROM supervisor").fetchone()
    return apps.call(app, "login", {"username": email, "password": password})["access_token"]


def _refused(apps, app, token):
    api = {"simple_note": "search_notes", "phone": "search_contacts",
           "venmo": "show_balance"}[app]
    try:
        apps.call(app, api, {"access_token": token})
    except ApiError as exc:
        return str(exc) == INVALID_TOKEN.format(app=app)
    return False


def test_the_issued_token_works_and_is_the_same_on_a_second_login():
    _, _, apps = _world()
    token = _login(apps, "venmo")
    assert apps.call("venmo", "show_balance", {"access_token": token})["balance"] > 0
    assert _login(apps, "venmo") == token and len(token) == 32
    assert _login(_world()[2], "venmo") == token  # same episode seed: same tokens (replays)


def test_constant_missing_and_malformed_tokens_are_refused_with_upstreams_message():
    _, _, apps = _world()
    assert INVALID_TOKEN.format(app="phone") == (
        "You are either not authorized to access this phone API endpoint or your access token "
        "is missing, invalid or expired.")
    for app in LOGIN_APPS:
        _login(apps, app)
        for token in (f"{app}-token", "", None, 7, "\u00e9", _login(apps, app)[:-1]):
            assert _refused(apps, app, token), (app, token)
    with pytest.raises(ApiError, match="Bad arguments"):  # no token at all: upstream's 422
        apps.call("venmo", "show_balance", {})


def test_another_apps_or_another_episodes_token_is_refused():
    _, _, apps = _world(token_seed=0)
    _, _, other = _world(token_seed=1)
    tokens = {app: _login(apps, app) for app in LOGIN_APPS}
    assert len(set(tokens.values())) == len(LOGIN_APPS)
    for app in LOGIN_APPS:
        assert _refused(apps, app, _login(other, app))
        for foreign in LOGIN_APPS:
            assert _refused(apps, app, tokens[foreign]) == (foreign != app)


def test_grader_hand_cases():
    start, end, apps = _world()
    (email,) = end.execute("SELECT email FROM supervisor").fetchone()
    want = Expectation(added={"note": ({"title": "T", "content": "c", "tags": ["x"]},)})
    assert dict(grade(start, end, want)) == {"the task is marked complete": False,
                                             "expected note rows added": False,
                                             "no collateral changes": True}
    token = {"access_token": _login(apps, "simple_note")}
    apps.call("simple_note", "create_note", {**token, "title": "T", "content": "c",
                                             "tags": ["x"]})
    apps.call("supervisor", "complete_task", {})
    assert all(ok for _, ok in grade(start, end, want))
    apps.call("simple_note", "update_note", {**token, "note_id": 2, "content": "changed"})
    assert dict(grade(start, end, want))["no collateral changes"] is False
    with pytest.raises(ApiError, match="Invalid credentials"):
        apps.call("venmo", "login", {"username": email, "password": "wrong"})


def test_cell_parsing():
    assert parse_cell("```python\nx = 1\n```") == "x = 1"
    assert parse_cell("print(1)") == "print(1)"
    assert parse_cell("<<this is not an action>>") is None
    assert parse_cell("") is None


def _episode_tokens(env):
    """The tokens the current episode's logins issue (asked from the host)."""
    me = call_direct(env._server, "supervisor", "show_profile")["email"]
    passwords = {a["account_name"]: a["password"]
                 for a in call_direct(env._server, "supervisor", "show_account_passwords")}
    return {app: call_direct(env._server, app, "login", username=me,
                             password=passwords[app])["access_token"] for app in LOGIN_APPS}


def _outcomes(suite, task_id):
    env = suite.make_env(task_id)
    try:
        env.reset(seed=1)
        foreign = _episode_tokens(env)  # another episode of the same task
        env.reset(seed=0)
        assert set(foreign.values()).isdisjoint(_episode_tokens(env).values())
        snap = env.snapshot()
        outcomes = {"oracle": env.step(env.oracle_action()).info["won"]}
        env.restore(snap)
        outcomes["do-nothing"] = env.step(suite.trivial_actions["complete"]).info["won"]
        for name, code in PROBES.items():
            env.restore(snap)
            program = env.solution.replace("apis.supervisor.complete_task(",
                                           code + "apis.supervisor.complete_task(")
            outcomes[name] = env.step(f"```python\n{program}```").info["won"]
        for name, login in (("constant-token", '    return f"{app}-token"'),
                            ("foreign-token", f"    return {foreign!r}[app]")):
            env.restore(snap)
            assert LOGIN in env.solution
            program = env.solution.replace(LOGIN, login)
            outcomes[name] = env.step(f"```python\n{program}```").info["won"]
        return outcomes
    finally:
        env.close()


def _check(outcomes):
    assert outcomes["oracle"] is True, outcomes
    assert not any(v for k, v in outcomes.items() if k != "oracle"), outcomes


@needs_sandbox
def test_oracle_do_nothing_and_probes_one_task_per_template(suite):
    for template in {t.metadata["template"]: t for t in suite.tasks()}.values():
        _check(_outcomes(suite, template.id))


@needs_sandbox
@pytest.mark.slow
def test_oracle_do_nothing_and_probes_on_every_task(suite):
    for spec in suite.tasks():
        _check(_outcomes(suite, spec.id))


@needs_sandbox
def test_cells_persist_state_time_out_and_cannot_reach_the_database(suite):
    env = suite.make_env("coworker-note-00")
    env.limits = Limits(wall_s=8.0)  # the time limit per cell (30 s by default)
    try:
        env.reset(seed=0)
        out = env.step("def twice(x):\n    return 2 * x\nn = twice(21)").observation
        assert "failed" not in out
        assert "42" in env.step("print(twice(n // 2))").observation
        probe = env.step("import os, subprocess\nprint(subprocess.run(['find', '/', '-xdev', "
                         "'(', '-name', '*.db', '-o', '-name', '*.sqlite*', ')'], "
                         "capture_output=True, text=True).stdout or 'no database')"
                         "\nprint(os.listdir('/run/appworld'))").observation
        assert "no database" in probe and "apis.sock" in probe
        expected = env.expectation.added["note"][0]["content"]
        grep = env.step(f"import subprocess\nprint(subprocess.run(['grep', '-rlF', "
                        f"{expected!r}, '/home', '/tmp', '/opt', '/work', '/etc'], "
                        "capture_output=True, text=True).stdout or 'no match')").observation
        assert "no match" in grep
        slow = env.step("while True:\n    pass")
        assert "timed out" in slow.observation and not slow.terminated
        result = env.step(suite.trivial_actions["complete"])
        assert result.terminated and result.info["won"] is False
    finally:
        env.close()
