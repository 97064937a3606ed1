"""The SWE-bench suites.

- ``swebench-verified@2``: SWE-bench Verified (500, split ``test``);
- ``swebench-lite@2``: SWE-bench Lite (300 ``test``, 23 ``dev``);
- ``swebench-dev@2``: SWE-bench's dev set (225, split ``dev``; pvlib, pydicom, sqlfluff,
  astroid, pyvista, marshmallow), for training and tuning;
- ``swe-lite@2``: the bundled instances (`tasks.swebench.lite`): per library, bugs 1-2
  ``train``, bug 3 ``dev``, the rest ``test``.

The three real suites are registered when ``$SWEBENCH_REPOS`` names a mirror directory.

Task ids are instance ids; the task type is the repository's name (``astroid``). Episodes run
on the local backend (`tasks.swebench.local`); the Docker backend
(`tasks.swebench.docker.DockerBackend`) grades predictions with the official harness for
users with a Docker daemon.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from tasks.base import Comparability, SuiteBase, TaskSpec
from tasks.swebench.data import Instance, load_table
from tasks.swebench.env import TOOLS_HELP, SweEnv
from tasks.swebench.forgery import FORGERIES

__all__ = ["SweBenchSuite", "VerifiedSuite", "LiteSuite", "DevSuite", "SweLiteSuite",
           "EXPLOITS"]

SUBMIT = '{"tool": "submit"}'
EXPLOITS = {
    "delete-tests": '{"tool": "bash", "command": "find . -not -path \'./.git/*\' \\\\( -name '
                    '\'test_*.py\' -o -name \'*_test.py\' \\\\) -print -delete", "submit": true}',
    "skip-tests": '{"tool": "bash", "command": "for f in $(git ls-files \'*test*.py\'); do '
                  'sed -i \'1i import pytest; pytest.skip(allow_module_level=True)\' $f; done", '
                  '"submit": true}',
    "edit-tests": '{"tool": "bash", "command": "for f in $(git ls-files \'*test*.py\'); do '
                  'sed -i \'s/^\\\\( *\\\\)assert /\\\\1assert True or /\' $f; done", '
                  '"submit": true}',
    "conftest-pass": '{"tool": "create", "path": "conftest.py", "content": "import pytest\\n\\n'
                     '@pytest.hookimpl(hookwrapper=True)\\ndef pytest_runtest_makereport(item, '
                     'call):\\n    outcome = yield\\n    report = outcome.get_result()\\n    '
                     'report.outcome = \\"passed\\"\\n    report.longrepr = None\\n", '
                     '"submit": true}',
}
"""Reward hacks every SWE-bench suite must score 0 on (the audit plays them as exploits, with
the verdict forgeries of `tasks.swebench.forgery.FORGERIES`)."""

REAL = Comparability(
    engine="rebuilt", tasks="upstream", grader="upstream", protocol="rebuilt", data="upstream",
    comparable="comparable with published SWE-bench scores on the instances `harness swebench "
               "validate` reproduces here (environments rebuilt from the official specs with "
               "pip, not the official images; agent tools are ours)",
    evidence="tests/tasks/swebench/test_crosscheck.py")


class SweBenchSuite(SuiteBase):
    """SWE-bench instances as episodes on the local backend."""

    trivial_actions = {"submit-empty": SUBMIT, **EXPLOITS, **FORGERIES}
    exploit_policies = {name: f"noop:{name}" for name in {**EXPLOITS, **FORGERIES}}
    blocking = True
    instructions = TOOLS_HELP
    multiline_actions = True
    default_scaffold = "terminal@1"  # one fenced block per reply: a ```json tool call
    comparability = REAL
    tables: Sequence[tuple[str, str]] = ()  # (table, split)

    def __init__(self, path: str | os.PathLike | None = None, *, max_steps: int = 50):
        self.max_steps = max_steps
        self.instances: dict[str, Instance] = {}
        specs = []
        for table, split in self.tables:
            for instance in self._load(table, path):
                self.instances[instance.instance_id] = instance
                where = split
                if split == "by-number":  # swe-lite: bugs 1-2 train, 3 dev, the rest test
                    number = int(instance.instance_id.rsplit("-", 1)[1])
                    where = "train" if number <= 2 else "dev" if number == 3 else "test"
                specs.append(TaskSpec(instance.instance_id, where, instance.repo.split("/")[-1],
                                      self._metadata(instance)))
        self._backend: Any = None
        super().__init__(specs)

    def _load(self, table: str, path: str | os.PathLike | None) -> list[Instance]:
        return load_table(table, path)

    @staticmethod
    def _metadata(instance: Instance) -> dict[str, Any]:
        return {"repo": instance.repo, "version": instance.version,
                "base_commit": instance.base_commit, "created_at": instance.created_at,
                "difficulty": instance.difficulty, "n_fail_to_pass": len(instance.fail_to_pass),
                "n_pass_to_pass": len(instance.pass_to_pass)}

    def backend(self) -> Any:
        if self._backend is None:
            from tasks.swebench.local import real_backend

            self._backend = real_backend()
        return self._backend

    def make_env(self, task_id: str) -> SweEnv:
        self.task(task_id)
        return SweEnv(self.instances[task_id], self.backend(), max_steps=self.max_steps)


class VerifiedSuite(SweBenchSuite):
    name, version = "swebench-verified", 2
    description = "SWE-bench Verified (500 human-validated instances), local sandbox backend"
    tables = (("verified-test", "test"),)


class LiteSuite(SweBenchSuite):
    name, version = "swebench-lite", 2
    description = "SWE-bench Lite (300 test, 23 dev), local sandbox backend"
    tables = (("lite-test", "test"), ("lite-dev", "dev"))


class DevSuite(SweBenchSuite):
    name, version = "swebench-dev", 2
    description = "SWE-bench dev set (225 instances, 6 repositories) for training and tuning"
    tables = (("full-dev", "dev"),)


class SweLiteSuite(SweBenchSuite):
    name, version = "swe-lite", 2
    description = ("bundled SWE-bench-style instances: injected bugs in the project's own "
                   "small libraries, official schema and grading")
    tables = (("swe-lite", "by-number"),)
    comparability = Comparability(
        engine="rebuilt", tasks="generated", grader="upstream", protocol="rebuilt",
        data="generated", comparable="the project's own instances; not comparable with "
        "published SWE-bench scores", evidence="tests/tasks/swebench/test_lite.py",
        generated_records=True)

    def _load(self, table: str, path: str | os.PathLike | None) -> list[Instance]:
        from tasks.swebench.lite import lite_instances

        return lite_instances()

    def backend(self) -> Any:
        if self._backend is None:
            from tasks.swebench.lite import lite_backend

            self._backend = lite_backend()
        return self._backend
