"""Score an episode as upstream's ``DesktopEnv.evaluate`` does, with the official functions.

Order and rules as upstream: run the evaluator's ``postconfig`` steps; an ``infeasible`` task
scores 1 exactly when the agent's last action is ``FAIL``; any other task scores 0 after
``FAIL``; otherwise each metric gets its result getter's value (and the expected getter's, and
``options``); several metrics combine by ``conj`` (``and``: 0 at the first zero, else the
mean; ``or``: 1 at the first one, else the max). A result file that does not exist scores 0.

The official functions run in this process, so grading guards them: a task whose evaluator
names a getter outside `tasks.osworld.capability.ON_DISK_GETTERS` is refused before anything
runs, and while a task is graded the grading thread may open no connection and resolve no
name except loopback (`no_network`).
"""

from __future__ import annotations

import contextlib
import io
import ipaddress
import logging
import socket
import tempfile
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from harness.core import HarnessError
from tasks.osworld.capability import ON_DISK_GETTERS
from tasks.osworld.loader import OSWorldTask
from tasks.osworld.official import official_function
from tasks.osworld.vm import SandboxVM

logger = logging.getLogger(__name__)

FAIL = "FAIL"


class GradingNetworkError(HarnessError):
    """An official getter or metric tried to reach a non-loopback address while grading."""


class UnsupportedGetterError(HarnessError):
    """The task's evaluator names a getter outside the headless allow-list."""


_GUARD = threading.local()  # .attempts: the refused addresses of this thread's grading
_PATCH_LOCK = threading.Lock()
_PATCHED: dict[str, Any] = {}  # attribute -> original, while any thread grades
_users = 0  # threads inside `no_network`
_SOCKET_METHODS = ("connect", "connect_ex")


def _is_loopback(host: Any) -> bool:
    if isinstance(host, bytes):
        host = host.decode(errors="replace")
    if host is None or host == "localhost":
        return True
    try:
        return ipaddress.ip_address(str(host).split("%")[0]).is_loopback
    except ValueError:
        return False


def _is_numeric(host: Any) -> bool:
    """An IP address literal (resolving it sends nothing; `connect` checks it)."""
    if isinstance(host, bytes):
        host = host.decode(errors="replace")
    try:
        ipaddress.ip_address(str(host).split("%")[0])
    except ValueError:
        return False
    return True


def _refuse(what: str) -> None:
    attempts = getattr(_GUARD, "attempts", None)
    if attempts is None:  # this thread is not grading
        return
    attempts.append(what)
    raise GradingNetworkError(f"OSWorld grading refused a network access ({what}): the "
                              "official evaluator functions run offline here")


def _guarded_method(name: str, original: Callable) -> Callable:
    def method(self: socket.socket, address: Any, *args: Any) -> Any:
        if isinstance(address, tuple) and not _is_loopback(address[0]):
            _refuse(f"{name} {address[0]}:{address[1]}")
        return original(self, address, *args)
    return method


def _guarded_getaddrinfo(original: Callable) -> Callable:
    def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        if not (_is_loopback(host) or _is_numeric(host)):  # a name: a DNS query would go out
            _refuse(f"resolve {host}")
        return original(host, *args, **kwargs)
    return getaddrinfo


def _install() -> None:
    for name in _SOCKET_METHODS:
        _PATCHED[name] = getattr(socket.socket, name)
        setattr(socket.socket, name, _guarded_method(name, _PATCHED[name]))
    _PATCHED["getaddrinfo"] = socket.getaddrinfo
    socket.getaddrinfo = _guarded_getaddrinfo(_PATCHED["getaddrinfo"])


def _uninstall() -> None:
    socket.getaddrinfo = _PATCHED.pop("getaddrinfo")
    for name in _SOCKET_METHODS:
        setattr(socket.socket, name, _PATCHED.pop(name))


@contextlib.contextmanager
def no_network() -> Iterator[None]:
    """While inside, this thread's ``socket`` connects and name lookups reach only loopback.

    A refused access raises `GradingNetworkError` where it happens; if the code swallowed
    it (upstream's getters catch broad exceptions and fall back), leaving the block raises
    it. Other threads are untouched. The patches (``socket.socket.connect``/``connect_ex``,
    ``socket.getaddrinfo``) are installed while any thread is inside.
    """
    global _users
    if getattr(_GUARD, "attempts", None) is not None:  # nested: the outer guard holds
        yield
        return
    with _PATCH_LOCK:
        if _users == 0:
            _install()
        _users += 1
    _GUARD.attempts = []
    try:
        yield
    finally:
        attempts, _GUARD.attempts = _GUARD.attempts, None
        with _PATCH_LOCK:
            _users -= 1
            if _users == 0:
                _uninstall()
    if attempts:
        raise GradingNetworkError(f"OSWorld grading refused a network access "
                                  f"({attempts[0]}); the official functions run offline here")


def check_getters(task: OSWorldTask) -> None:
    """Raise `UnsupportedGetterError` if the evaluator names a getter off the allow-list."""
    for key in ("result", "expected"):
        for config in task.getter_configs(key):
            if config.get("type") not in ON_DISK_GETTERS:
                raise UnsupportedGetterError(
                    f"OSWorld task {task.id}: getter {config.get('type')!r} is not one the "
                    f"headless backend runs ({', '.join(sorted(ON_DISK_GETTERS))})")


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
    if not task.infeasible:
        check_getters(task)
    with tempfile.TemporaryDirectory(prefix="osworld-cache-") as cache, \
            SandboxVM(sandbox, Path(cache)) as vm, no_network():
        run_postconfig(Path(cache))
        if task.infeasible:
            return 1.0 if declared_infeasible else 0.0
        if declared_infeasible:
            return 0.0
        if isinstance(evaluator["func"], list):
            metrics = [official_function("metrics", f) for f in evaluator["func"]]
            return _multiple(vm, evaluator, metrics)
        return _single(vm, evaluator, official_function("metrics", evaluator["func"]))
