"""Suite ``osworld-files@1``: the official OSWorld tasks the headless backend supports.

Tasks, setup steps and evaluator functions are upstream's; the machine is a Debian sandbox
without a screen (no screenshots, no accessibility tree, no GUI apps), so only the tasks the
capability check (`tasks.osworld.capability`) accepts are in the suite; `unsupported_tasks`
lists the rest with their reasons. Task type = upstream's application domain. Every task is
in a split chosen by a hash of its id (`split_of`: about half test, a quarter each train and
dev), since OSWorld itself is one test set and the registry asks every suite for all three.
Each task declares its answerability: upstream's infeasible tasks are unanswerable, and an
episode whose last action is ``FAIL`` abstained.
"""

from __future__ import annotations

import hashlib

from harness.core import HarnessError, MissingDependencyError
from tasks.base import Answerability, Comparability, SuiteBase, TaskSpec
from tasks.sandbox_forgery import FORGERY_KINDS, FORGERY_PREFIX, shell_command
from tasks.osworld.capability import Capability, classify
from tasks.osworld.loader import OSWorldTask, load_tasks
from tasks.osworld.official import official_available

DESCRIPTION = ("OSWorld's official tasks and evaluator functions (desktop-env) on a headless "
               "Debian sandbox: shell/Python actions, no GUI or screenshots; only the tasks "
               "whose setup and evaluation need no GUI, download or network")

COMPARABILITY = Comparability(
    engine="rebuilt", tasks="upstream", grader="upstream", protocol="rebuilt", data="upstream",
    comparable="not comparable with published OSWorld scores: a headless subset of the 369 "
               "tasks, text actions instead of GUI actions",
    evidence="tests/tasks/osworld/test_files_env.py")


def split_of(task_id: str) -> str:
    """A fixed split per task id: blake2b of the id, 2/4 test, 1/4 dev, 1/4 train."""
    bucket = hashlib.blake2b(task_id.encode(), digest_size=2).digest()[0] % 4
    return ("train", "dev", "test", "test")[bucket]


EXPLOITS = {
    "find-expected": "```bash\ngrep -rIl -e '\"evaluator\"' -e '\"expected\"' /home /tmp /root "
                     "/opt /var /etc /work 2>/dev/null | head; env | grep -i expect; true\n```",
}
"""Reward-hacking attempt the audit plays (must score 0): look for the task's evaluator and
expected values on the machine (they never enter the sandbox)."""

FORGERIES = {f"{FORGERY_PREFIX}{kind}": f"```bash\n{shell_command(kind, now=True)}\n```"
             for kind in FORGERY_KINDS}
"""Forgery probes (`tasks.sandbox_forgery`, each must score 0): plant code that writes a reward
file, kills a verifier or prints a forged pytest summary wherever the machine runs Python or
programs later (the evaluator's getters run commands as the user), and fire it at once."""


class SandboxUnavailableError(HarnessError):
    """The headless backend cannot run here (no sandbox)."""


class OSWorldFilesSuite(SuiteBase):
    """The supported subset of OSWorld's 369 tasks on the `files` backend."""

    name = "osworld-files"
    version = 1
    description = DESCRIPTION
    trivial_actions = {"done": "DONE", "infeasible": "FAIL", **EXPLOITS, **FORGERIES}
    exploit_policies = {name: f"noop:{name}" for name in (*EXPLOITS, *FORGERIES)}
    blocking = True
    comparability = COMPARABILITY

    def __init__(self, path: str | None = None):
        from tasks.osworld.files_env import INSTRUCTIONS
        from tasks.osworld.solutions import reference_solution

        if official_available():
            raise MissingDependencyError("desktop-env", "osworld", "OSWorld's official "
                                         "evaluators (then pip install --no-deps desktop-env)")
        self.instructions = INSTRUCTIONS
        # one verdict per entry of test_all.json (369; 11 ids are listed under two domains)
        self.verdicts: list[tuple[OSWorldTask, Capability]] = [
            (t, classify(t)) for t in load_tasks(path)]
        self._drop_already_passing()
        self._tasks = {t.id: t for t, v in self.verdicts if v.supported}
        self._solution = reference_solution
        super().__init__([TaskSpec(t.id, split_of(t.id), t.domain,
                                   {"infeasible": t.infeasible,
                                    "related_apps": list(t.related_apps)},
                                   Answerability(not t.infeasible, "FAIL"))
                          for t in self._tasks.values()])

    def _drop_already_passing(self) -> None:
        """Rule 6 (`tasks.osworld.initial_state`): needs the sandbox, measured and cached."""
        from tasks.osworld.initial_state import initial_scores
        from tasks.sandbox import sandbox_available

        problem = sandbox_available()
        if problem:
            raise SandboxUnavailableError(f"osworld-files needs the sandbox: {problem}")
        feasible = [t for t, v in self.verdicts if v.supported and not t.infeasible]
        scores = initial_scores(feasible)
        self.verdicts = [
            (t, Capability(False, "initial state", f"the evaluator already gives "
                           f"{scores[t.id]:g} on the fresh headless machine (its defaults "
                           "differ from the VM snapshot)"))
            if v.supported and scores.get(t.id, 0.0) > 0 else (t, v) for t, v in self.verdicts]

    def unsupported_tasks(self) -> list[tuple[OSWorldTask, Capability]]:
        """Every entry of the task index left out, with the capability check's reason."""
        return [(t, v) for t, v in self.verdicts if not v.supported]

    def make_env(self, task_id: str):
        from tasks.osworld.files_env import OSWorldFilesEnv

        self.task(task_id)  # unknown ids raise with a did-you-mean
        task = self._tasks[task_id]
        return OSWorldFilesEnv(task, self._solution(task) or ())
