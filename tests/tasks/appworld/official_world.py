"""Run inside AppWorld's own environment (``$APPWORLD_PYTHON``): write one generated world
with the official package (its app models, API docs and task/ground-truth format), then play
it through `tasks.appworld.official.AppWorldOfficialEnv`: the official engine executes the
cells and the official evaluator grades (a database-diff evaluation in AppWorld's style).
Prints one JSON line with the outcomes. Usage: python official_world.py APPWORLD_ROOT."""

import datetime
import json
import os
import sys

os.environ["APPWORLD_ROOT"] = sys.argv[1]

from appworld.api_docs import prepare_api_docs  # noqa: E402
from appworld.apps import get_all_apps  # noqa: E402
from appworld.apps.admin.models import MainUserMunch  # noqa: E402
from appworld.collections.models import ModelCollection  # noqa: E402
from appworld.common.constants import DB_VERSION  # noqa: E402
from appworld.ground_truth import GroundTruth  # noqa: E402
from appworld.task import Task  # noqa: E402

from tasks.appworld.official import AppWorldOfficialEnv, official_available  # noqa: E402

TASK_ID = "0a1b2c3_1"
EMAIL, PASSWORD = "ada.lane@example.com", "pw-12345"
INSTRUCTION = "Create a SimpleNote note titled 'Plan' with the content 'hello'."
EVALUATION = '''
def evaluate(test, public_data, private_data, main_user, models, ground_truth_answer):
    added, updated, removed = models.changed_records("simple_note.Note")
    with test("one note added, titled Plan"):
        test.case(len(added), "==", 1)
        test.case(added[0].title, "==", "Plan")
    with test("no collateral changes"):
        test.case(set(models.changed_model_names()), "==", {"simple_note.Note"})
        test.case(len(updated), "==", 0)
        test.case(len(removed), "==", 0)
'''
SOLUTION = "def solution(apis: dict, requester: dict) -> None:\n    pass\n"


def write_world(root: str) -> None:
    docs_dir = os.path.join(root, "data", "api_docs", "standard")
    os.makedirs(docs_dir, exist_ok=True)
    apps = get_all_apps(skip_admin=True)
    for app in apps:
        docs = {d["api_name"]: {**d, "canary_string": "generated"} for d in prepare_api_docs(app)}
        with open(os.path.join(docs_dir, f"{app}.json"), "w") as f:
            json.dump(docs, f)
    mc = ModelCollection.load(to_db_home_path=f":memory:generated-{TASK_ID}",
                              load_apps=get_all_apps(), create_db=True)
    person = dict(first_name="Ada", last_name="Lane", email=EMAIL, phone_number="5550001111",
                  birthday="1990-01-02")
    user = mc.admin.MainUser.create(**person)
    user.save()
    mc.admin.AccountPassword.create(main_user_id=user.id, account_name="simple_note",
                                    password=PASSWORD).save()
    note_user = mc.simple_note.User.create(first_name="Ada", last_name="Lane", email=EMAIL,
                                           password=PASSWORD, verified=True)
    note_user.save()
    mc.simple_note.Note.create(user_id=note_user.id, title="Groceries", content="milk",
                               tags=["home"]).save()
    supervisor = mc.supervisor.Supervisor.create(**person)
    supervisor.save()
    mc.supervisor.AccountPassword.create(supervisor_id=supervisor.id, account_name="simple_note",
                                         password=PASSWORD).save()
    mc.supervisor.Task.create(supervisor_id=supervisor.id, instruction=INSTRUCTION).save()
    for app in apps:
        for d in prepare_api_docs(app):
            mc.api_docs.ApiDoc.create(app_name_=app, **{k: d[k] for k in (
                "api_name", "path", "method", "description", "parameters",
                "response_schemas")}).save()
    task = Task(id=TASK_ID, instruction=INSTRUCTION,
                supervisor=MainUserMunch(**{k: person[k] for k in (
                    "first_name", "last_name", "email", "phone_number")}),
                datetime=datetime.datetime(2024, 5, 20, 10, 0), allowed_apps=apps,
                db_version=DB_VERSION, model_collection=mc)
    task.ground_truth = GroundTruth(
        task_id=TASK_ID, required_apps=["simple_note"], public_data={}, private_data={},
        answer=None, evaluation_code=EVALUATION, solution_code=SOLUTION,
        compiled_solution_code=SOLUTION, generator_code="", metadata={"difficulty": 1})
    task.save(delete_if_exists=True)
    os.makedirs(os.path.join(root, "data", "datasets"), exist_ok=True)


SOLVE = ("```python\ntok = apis.simple_note.login(username=%r, password=%r)['access_token']\n"
         "apis.simple_note.create_note(access_token=tok, title='Plan', content='hello')\n"
         "apis.supervisor.complete_task()\n```" % (EMAIL, PASSWORD))
COLLATERAL = SOLVE.replace("apis.supervisor.complete_task()", "apis.simple_note.delete_note("
                           "access_token=tok, note_id=1)\napis.supervisor.complete_task()")


# AppWorld's own guard refuses `import socket` by syntax; `__import__` passes it, so the
# network namespace is what stops the model's code
PROBE_NETWORK = """```python
net = __import__('so' + 'cket')
print(sorted(name for _, name in net.if_nameindex()))
print('only loopback')
```"""


def engine_network(env):
    """The network interfaces the model's code sees in the engine's shell (no connection is
    attempted: only 127.0.0.1 is ever a target)."""
    env.reset(seed=0)
    lines = env.step(PROBE_NETWORK).observation.strip().splitlines()
    return {"interfaces": json.loads(lines[0].replace("'", '"'))}


def play(env, actions):
    env.reset(seed=0)
    for action in actions:
        result = env.step(action)
        if result.terminated or result.truncated:
            return result.info
    return None


if __name__ == "__main__":
    write_world(sys.argv[1])
    env = AppWorldOfficialEnv(TASK_ID)
    outcome = {
        "available": official_available(),
        "invalid": env.reset(seed=0) and env.step("<<not code>>").info["invalid"],
        "engine_network": engine_network(env),
        "oracle": play(env, [SOLVE]),
        "do_nothing": play(env, ["apis.supervisor.complete_task()"]),
        "collateral": play(env, [COLLATERAL]),
    }
    env.close()
    print(json.dumps(outcome))
