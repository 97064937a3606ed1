"""`harness bench env`: the report assembles every registered bench (by name or by
``"module:function"``)."""

from harness import env_bench


def test_env_report_concatenates_the_benches_in_order(monkeypatch):
    monkeypatch.setattr(env_bench, "ENV_BENCHES", {"a": lambda: ["one", "two"],
                                                   "b": lambda: ["three"]})
    assert env_bench.env_report(None) == ["one", "two", "three"]


def test_env_report_resolves_module_function_entries(monkeypatch):
    monkeypatch.setattr(env_bench, "ENV_BENCHES", {"m": "harness.env_bench:_example"},
                        raising=True)
    monkeypatch.setattr(env_bench, "_example", lambda: ["from a string"], raising=False)
    assert env_bench.env_report(None) == ["from a string"]
