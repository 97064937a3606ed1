"""Score an episode as upstream's ``DesktopEnv.evaluate`` does, with the official functions.

Order and rules as upstream: run the evaluator's ``postconfig`` steps; an ``infeasible`` task
scores 1 exactly when the agent's last action is ``FAIL``; any other task scores 0 after
``FAIL``; otherwise each metric gets its result getter's value (and the expected getter's, and
``options``); several metrics combine by ``conj`` (``and``: 0 at the first zero, else the
mean; ``or``: 1 at the first one, else the max). A result file that does not exist scores 0.
"""

from __future__ import annotations

import contextlib
import io
import logging
import tempfile
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from tasks.osworld.loader import OSWorldTask
from tasks.osworld.official import official_function
from tasks.osworld.vm import SandboxVM

logger = logging.getLogger(__name__)

FAIL = "FAIL"


def _getter(config: Any) -> Callable | None:
    if not config:
        return None
    return official_function("getters", f"get_{config['type']}")


def _as_list(value: Any, n: int, fill: Any) -> list:
    if value is None or value == [] or value == {}:
        return [fill] * n
    return list(value) if isinstance(value, list) else [value]


_STDOUT_LOCK = threading.Lock()


def _quiet(function: Callable, *args: Any, **kwargs: Any) -> Any:
    """Call an official function with its ``print`` output captured (library code is quiet).

    `sys.stdout` is process-wide, so concurrent episodes take turns (a lock), or one
    episode's restore could leave another's capture buffer installed.
    """
    with _STDOUT_LOCK, contextlib.redirect_stdout(io.StringIO()):
        return function(*args, **kwargs)


def _single(vm: SandboxVM, evaluator: dict, metric: Callable) -> float:
    try:
        result = _quiet(_getter(evaluator["result"]), vm, evaluator["result"])
    except FileNotFoundError:
        return 0.0
    options = evaluator.get("options") or {}
    expected_config = evaluator.get("expected")
    if expected_config:
        expected = _quiet(_getter(expected_config), vm, expected_config)
        return float(_quiet(metric, result, expected, **options))
    return float(_quiet(metric, result, **options))


def _multiple(vm: SandboxVM, evaluator: dict, metrics: list[Callable]) -> float:
    n = len(metrics)
    results = _as_list(evaluator.get("result"), n, None)
    expecteds = _as_list(evaluator.get("expected"), n, None)
    options = [o or {} for o in _as_list(evaluator.get("options"), n, {})]
    conj = evaluator.get("conj", "and")
    scores = []
    for metric, result_config, expected_config, option in zip(metrics, results, expecteds,
                                                              options):
        try:
            result = _quiet(_getter(result_config), vm, result_config)
        except FileNotFoundError:
            if conj == "and":
                return 0.0
            continue
        if expected_config:
            expected = _quiet(_getter(expected_config), vm, expected_config)
            score = float(_quiet(metric, result, expected, **option))
        else:
            score = float(_quiet(metric, result, **option))
        if conj == "and" and score == 0.0:
            return 0.0
        if conj == "or" and score == 1.0:
            return 1.0
        scores.append(score)
    if not scores:
        return 0.0
    return sum(scores) / len(scores) if conj == "and" else max(scores)


def evaluate(task: OSWorldTask, sandbox: Any, actions: Sequence[str],
             run_postconfig: Callable[[Path], None]) -> float:
    """The task's score in [0, 1] for the sandbox's current state and the agent's actions.

    `run_postconfig(cache_dir)` runs the evaluator's post-configuration steps (a step's
    ``stdout`` file goes to the host-side cache directory, as upstream's does).
    """
    declared_infeasible = bool(actions) and actions[-1] == FAIL
    evaluator = dict(task.evaluator)
    with tempfile.TemporaryDirectory(prefix="osworld-cache-") as cache, \
            SandboxVM(sandbox, Path(cache)) as vm:
        run_postconfig(Path(cache))
        if task.infeasible:
            return 1.0 if declared_infeasible else 0.0
        if declared_infeasible:
            return 0.0
        if isinstance(evaluator["func"], list):
            metrics = [official_function("metrics", f) for f in evaluator["func"]]
            return _multiple(vm, evaluator, metrics)
        return _single(vm, evaluator, official_function("metrics", evaluator["func"]))
