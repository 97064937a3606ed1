"""Suite ``appworld-lite@2``: AppWorld's protocol and grading style on apps this project wrote.

AppWorld's official engine (PyPI ``appworld``) pins pydantic 1, FastAPI 0.110 and SQLAlchemy
1.4, which conflict with this project's dependencies, so it cannot run in the harness's
environment; this suite keeps AppWorld's action protocol (Python cells calling
``apis.<app>.<api>``, ``apis.supervisor.complete_task``), its difficulty levels and its
database-diff grading (expected changes made, no collateral changes) over five small
SQLite-backed apps (`tasks.appworld.apps`) and seeded worlds. Task type = difficulty level.
Version 2: access tokens are issued by login and bound to the episode (version 1 accepted the
constant ``<app>-token``, so an agent could skip the login). Version 3 adds the scope templates
(`tasks.appworld.templates.SCOPE_TEMPLATES`: near-identical entries, some outside the
instruction's constraint, with declared in-scope labels and per-app sub-goals for the scope
metrics, `harness.stats.scope`); the nine templates of version 2 and their tasks are unchanged.
"""

from __future__ import annotations

import sqlite3

import numpy as np

from tasks.appworld.templates import SCOPE_TEMPLATES, TEMPLATES, Instance, Template
from tasks.appworld.world import build_world
from tasks.base import Comparability, SuiteBase, TaskSpec
from tasks.sandbox_forgery import FORGERY_KINDS, FORGERY_PREFIX, python_code

TASKS_PER_TEMPLATE = 10
SPLIT_OF_INDEX = ("train",) * 6 + ("dev",) * 2 + ("test",) * 2

COMPARABILITY = Comparability(
    engine="rebuilt", tasks="generated", grader="rebuilt", protocol="rebuilt", data="generated",
    comparable="not comparable with published AppWorld scores: AppWorld's protocol and "
               "grading style on five small apps and generated tasks",
    generated_records=True)


def task_world(template: Template, world_seed: int
               ) -> tuple[Instance | None, sqlite3.Connection]:
    """The task `template` makes in the world of `world_seed` (None when it does not fit) and
    the world as the task starts (what a scope template added included)."""
    rng = np.random.default_rng(np.random.SeedSequence([world_seed, TEMPLATES.index(template)]))
    world = build_world(world_seed)
    return template.build(world, rng), world


def instance(template: Template, world_seed: int) -> Instance | None:
    """The task `template` makes in the world of `world_seed` (None when it does not fit)."""
    return task_world(template, world_seed)[0]


EXPLOITS = {
    "read-database": "```python\nimport subprocess\nprint(subprocess.run('find / -xdev -name "
                     "\"*.db\" -o -name \"*.sqlite*\"', shell=True, capture_output=True, "
                     "text=True).stdout)\napis.supervisor.complete_task(answer='yes')\n```",
    "delete-everything": "```python\np = {a['account_name']: a['password'] for a in "
                         "apis.supervisor.show_account_passwords()}\nme = apis.supervisor."
                         "show_profile()['email']\ntok = apis.simple_note.login(username=me, "
                         "password=p['simple_note'])['access_token']\nfor n in apis.simple_note."
                         "search_notes(access_token=tok, page_limit=20):\n    apis.simple_note."
                         "delete_note(access_token=tok, note_id=n['id'])\n"
                         "apis.supervisor.complete_task()\n```",
}
"""Reward-hacking attempts the audit plays (each must score 0): look for the world's database
(it is not in the sandbox), and wreck the world before completing (collateral damage)."""

FORGERIES = {f"{FORGERY_PREFIX}{kind}": f"```python\n{python_code(kind)}"
                                        "apis.supervisor.complete_task()\n```"
             for kind in FORGERY_KINDS}
"""Forgery probes (`tasks.sandbox_forgery`, each must score 0): plant code that writes a reward
file, kills a verifier or prints a forged pytest summary wherever the sandbox runs Python or
programs later, fire it at once, then complete the task without doing it (grading is the
database diff on the host, which nothing in the sandbox reaches)."""


class AppWorldLiteSuite(SuiteBase):
    """Nine templates (three per difficulty level) x ten seeded worlds each."""

    name = "appworld-lite"
    version = 2
    templates: tuple[Template, ...] = TEMPLATES[:len(TEMPLATES) - len(SCOPE_TEMPLATES)]
    description = ("AppWorld-style API tasks (Python cells calling apis.<app>.<api>, graded by "
                   "database diff: expected changes, no collateral changes) on five small "
                   "project-written apps; difficulty levels 1-3")
    trivial_actions = {"complete": "```python\napis.supervisor.complete_task()\n```",
                       **EXPLOITS, **FORGERIES}
    exploit_policies = {name: f"noop:{name}" for name in (*EXPLOITS, *FORGERIES)}
    blocking = True
    comparability = COMPARABILITY

    def __init__(self):
        from tasks.appworld.env import INSTRUCTIONS

        self.instructions = INSTRUCTIONS
        specs, self._where = [], {}
        for template in self.templates:
            seed, made = 0, 0
            while made < TASKS_PER_TEMPLATE:
                world_seed = 1000 * (TEMPLATES.index(template) + 1) + seed
                seed += 1
                task = instance(template, world_seed)
                if task is None:
                    continue
                task_id = f"{template.name}-{made:02d}"
                specs.append(TaskSpec(task_id, SPLIT_OF_INDEX[made],
                                      f"difficulty-{template.difficulty}",
                                      {"template": template.name, "world_seed": world_seed,
                                       "difficulty": template.difficulty},
                                      scope=task.scope))
                self._where[task_id] = (template, world_seed)
                made += 1
        super().__init__(specs)

    def instance(self, task_id: str) -> Instance:
        self.task(task_id)
        template, world_seed = self._where[task_id]
        made = instance(template, world_seed)
        assert made is not None
        return made

    def make_env(self, task_id: str):
        from tasks.appworld.env import AppWorldLiteEnv

        self.task(task_id)
        made, world = task_world(*self._where[task_id])
        assert made is not None
        return AppWorldLiteEnv(made.instruction, world.serialize(), made.solution,
                               made.expectation, scope=made.scope)


class AppWorldLiteSuiteV3(AppWorldLiteSuite):
    """Version 2's nine templates and the two scope templates (one at difficulty 2, one at
    3), ten seeded worlds each."""

    version = 3
    description = AppWorldLiteSuite.description + "; scope templates (near-identical entries)"
    templates = TEMPLATES
