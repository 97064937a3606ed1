"""The harness's own commands in a SWE-bench episode (issue 40): when one runs past its limit
on a loaded machine the episode errors with that reason; it is never an empty prediction
graded as the agent's failure."""

from __future__ import annotations

import pytest

from harness.core import HarnessError
from tasks.sandbox import CommandResult
from tasks.swebench.env import DIFF_TIMEOUT_S, SweEnv
from tasks.swebench.lite import lite_instances


class _SlowSandbox:
    """Every command runs past its limit."""

    def run(self, command, **options):
        assert options["timeout_s"] == DIFF_TIMEOUT_S
        return CommandResult(None, "", True, False, DIFF_TIMEOUT_S)


class _NoBackend:
    def evaluate(self, *args, **kwargs):  # pragma: no cover - must not be reached
        raise AssertionError("an episode whose diff timed out was graded")


def test_a_diff_past_its_limit_is_an_error_not_an_empty_prediction():
    instance = lite_instances()[0]
    env = SweEnv(instance, _NoBackend())
    env._sandbox = _SlowSandbox()
    with pytest.raises(HarnessError, match=rf"{instance.instance_id}: the prediction's `git "
                                           r"diff` ran past 120 s"):
        env.diff()
