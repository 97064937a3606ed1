"""`harness bench env`: the report assembles every part families register for it (functions
or ``"module:function"`` strings), in registration order."""

import tasks.plugins
from harness import env_bench


def test_env_report_concatenates_the_parts_in_order(monkeypatch):
    monkeypatch.setattr(tasks.plugins, "_BENCH_PARTS", {})
    tasks.plugins.register_bench_part("env", "a", lambda: ["one", "two"])
    tasks.plugins.register_bench_part("env", "b", lambda: ["three"])
    tasks.plugins.register_bench_part("other", "c", lambda: ["not this"])
    assert env_bench.env_report(None) == ["one", "two", "three"]


def test_env_report_resolves_module_function_entries(monkeypatch):
    monkeypatch.setattr(tasks.plugins, "_BENCH_PARTS", {})
    monkeypatch.setattr(env_bench, "_example", lambda: ["from a string"], raising=False)
    tasks.plugins.register_bench_part("env", "m", "harness.env_bench:_example")
    assert env_bench.env_report(None) == ["from a string"]


def test_the_families_register_their_parts():
    import tasks  # noqa: F401 - the registry

    assert list(tasks.plugins.bench_parts("env")) == ["alfworld", "webshop"]
