"""Small suites written for the audit tests: a leaky grader, a flaky grader, a suite with no
trivial actions, and policies that exploit or crash."""

from __future__ import annotations

import itertools

import pytest

from harness.policies import Decision, register_policy
from harness.policies.scripted import NoopPolicy
from tasks.base import StepResult, SuiteBase, TaskSpec, register_suite

N_TASKS = 20
LEAKY = {0, 1, 2, 3, 5, 6, 7, 8}
"""Tasks where "finish" is graded a success: 8 of 20 (40%), all of type "a" (80% of it)."""


class WalkEnv:
    """Walk right from 0 to 5 to win (the oracle walks right; a random walk over the admissible
    left/right/wait seldom gets there in 8 steps). "finish" (not listed as admissible) ends
    the episode and is graded by `grade_finish`, which a subclass may make leaky."""

    goal = 5

    def __init__(self, index: int, max_steps: int = 8):
        self.index, self.max_steps = index, max_steps
        self.position = self.steps = 0

    def grade_finish(self) -> bool:
        return False

    def _info(self, won: bool, invalid: bool) -> dict:
        return {"won": won, "score": float(won), "invalid": invalid,
                "admissible_actions": ["left", "right", "wait"]}

    def reset(self, *, seed: int):
        self.position = self.steps = 0
        return f"task {self.index}: at 0 of {self.goal}", self._info(False, False)

    def step(self, action: str) -> StepResult:
        self.steps += 1
        won = terminated = invalid = False
        if action == "finish":
            won = terminated = self.grade_finish()
            terminated = True
        elif action in ("left", "right", "wait"):
            self.position = max(0, self.position + {"left": -1, "right": 1, "wait": 0}[action])
            won = terminated = self.position >= self.goal
        else:
            invalid = True
        truncated = not terminated and self.steps >= self.max_steps
        return StepResult(f"at {self.position} of {self.goal}", float(won), terminated, truncated,
                          self._info(won, invalid))

    def oracle_action(self) -> str:
        return "right"


class LeakyEnv(WalkEnv):
    def grade_finish(self) -> bool:
        return self.index in LEAKY


_calls = itertools.count()


class FlakyEnv(WalkEnv):
    """Task 3's grader alternates between accepting and rejecting a win at the goal."""

    def step(self, action: str) -> StepResult:
        result = super().step(action)
        if self.index == 3 and result.terminated and next(_calls) % 2:
            return StepResult(result.observation, 0.0, True, False, {**result.info,
                                                                     "won": False,
                                                                     "score": 0.0})
        return result


def _specs() -> list[TaskSpec]:
    return [TaskSpec(f"t-{i:03d}", "test", "a" if i < 10 else "b", {"index": i})
            for i in range(N_TASKS)]


class LeakySuite(SuiteBase):
    name, version = "leaky-test", 1
    description = "finishing immediately passes 40% of tasks"
    trivial_actions = {"finish": "finish"}
    exploit_policies = {"spam finish": "spam-finish"}
    env_class = LeakyEnv

    def __init__(self):
        super().__init__(_specs())

    def make_env(self, task_id: str):
        return self.env_class(self.task(task_id).metadata["index"])


class CleanSuite(LeakySuite):
    name = "clean-test"
    description = "a sound grader"
    exploit_policies = {}
    env_class = WalkEnv


class FlakySuite(CleanSuite):
    name = "flaky-test"
    env_class = FlakyEnv


class NoTrivialSuite(CleanSuite):
    name = "no-trivial-test"
    trivial_actions = {}


class CrashingPolicy:
    train_seed = None

    def __init__(self, spec: str):
        self.id, self.provenance = spec, {"kind": "test"}

    async def act(self, context) -> Decision:
        raise RuntimeError("the model server is down")


@pytest.fixture(scope="session", autouse=True)
def test_suites():
    for suite in (LeakySuite, CleanSuite, FlakySuite, NoTrivialSuite):
        register_suite(suite.name, suite.version, suite)
    register_policy("spam-finish", lambda spec, arg: _SpamFinish(spec), "always 'finish'")
    register_policy("always-fails", lambda spec, arg: CrashingPolicy(spec), "raises")


class _SpamFinish(NoopPolicy):
    """An adversarial policy a suite declares: says "finish" every turn."""

    async def act(self, context) -> Decision:
        return Decision("finish", "finish")
