"""Grading's network guards: the getter allow-list is enforced where grading starts, and while
a task is graded the official functions reach only loopback (no packet ever leaves: the
guard refuses before connecting or resolving)."""

import ipaddress
import socket
import threading

import pytest

from tasks.osworld.capability import ON_DISK_GETTERS, classify
from tasks.osworld.grading import (GradingNetworkError, UnsupportedGetterError, evaluate,
                                   no_network)
from tasks.osworld.loader import load_tasks, parse_task

LOOPBACK = ("127.0.0.1", "localhost", "::1")


@pytest.fixture(autouse=True)
def host_network_out_of_reach(monkeypatch):
    """Below the guard, stand-ins for the OS calls that pass loopback through and fail the
    test on anything else: a broken guard fails here instead of sending a packet out."""
    connect, connect_ex, getaddrinfo = (socket.socket.connect, socket.socket.connect_ex,
                                        socket.getaddrinfo)

    def refuse(target):
        pytest.fail(f"{target} reached the host's network stack")

    def guarded(original):
        def call(self, address, *args):
            if isinstance(address, tuple) and address[0] not in LOOPBACK:
                refuse(address)
            return original(self, address, *args)
        return call

    def lookup(host, *args, **kwargs):  # an address literal sends nothing; a name would
        try:
            ipaddress.ip_address(host)
        except ValueError:
            if host not in LOOPBACK:
                refuse(host)
        return getaddrinfo(host, *args, **kwargs)

    monkeypatch.setattr(socket.socket, "connect", guarded(connect))
    monkeypatch.setattr(socket.socket, "connect_ex", guarded(connect_ex))
    monkeypatch.setattr(socket, "getaddrinfo", lookup)


def test_non_loopback_connect_is_refused():
    with pytest.raises(GradingNetworkError, match="1.1.1.1:80"):
        with no_network():
            socket.create_connection(("1.1.1.1", 80), timeout=2)


def test_name_lookup_is_refused_and_a_swallowed_refusal_still_raises():
    with pytest.raises(GradingNetworkError, match="resolve ipapi.co"):
        with no_network():
            try:  # upstream's getters catch broad exceptions and fall back
                socket.getaddrinfo("ipapi.co", 443)
            except Exception:
                pass


def test_upstream_timezone_lookup_is_stopped_though_it_swallows_the_error():
    import sys

    from tasks.osworld.official import official_function

    getter = official_function("getters", "get_rule_relativeTime")
    with pytest.raises(GradingNetworkError, match="ipapi.co"):
        with no_network():  # upstream catches the error and falls back to UTC
            assert sys.modules[getter.__module__].get_timezone_from_ip() == "UTC"


def test_loopback_still_works_and_the_patch_is_removed_after():
    connect, getaddrinfo = socket.socket.connect, socket.getaddrinfo
    with socket.create_server(("127.0.0.1", 0)) as server:
        with no_network():
            assert socket.socket.connect is not connect
            with socket.create_connection(server.getsockname(), timeout=2):
                pass
    assert socket.socket.connect is connect and socket.getaddrinfo is getaddrinfo


def test_other_threads_are_not_guarded():
    seen = []
    inside, done = threading.Event(), threading.Event()

    def other():
        inside.wait(5)
        try:
            socket.getaddrinfo("127.0.0.1", 80)  # passes through the patched function
            seen.append("ok")
        finally:
            done.set()

    thread = threading.Thread(target=other)
    thread.start()
    with no_network():
        inside.set()
        done.wait(5)
    thread.join()
    assert seen == ["ok"]


def _task(getter_type):
    return parse_task({"id": "t1", "instruction": "x", "config": [], "evaluator": {
        "func": "exact_match", "result": {"type": getter_type},
        "expected": {"type": "rule", "rules": {"expected": "a"}}}}, "os")


def test_evaluate_refuses_a_getter_off_the_allow_list_before_running():
    assert "rule_relativeTime" not in ON_DISK_GETTERS
    for getter_type in ("rule_relativeTime", "accessibility_tree", "cloud_file"):
        with pytest.raises(UnsupportedGetterError, match=repr(getter_type)):
            evaluate(_task(getter_type), sandbox=None, actions=["DONE"],
                     run_postconfig=lambda cache: pytest.fail("ran"))


def test_tasks_using_rule_relative_time_are_unsupported():
    using = [t for t in load_tasks() if any(
        c.get("type") == "rule_relativeTime"
        for c in [*t.getter_configs("result"), *t.getter_configs("expected")])]
    assert len(using) == 9
    assert not any(classify(t).supported for t in using)
