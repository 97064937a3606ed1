"""`harness audit` through the CLI entry point (the module plugged into COMMAND_MODULES)."""

import pytest

import harness.cli
from harness.cli import main


@pytest.fixture(autouse=True)
def audit_command(monkeypatch):
    monkeypatch.setattr(harness.cli, "COMMAND_MODULES",
                        (*harness.cli.COMMAND_MODULES, "harness.report.audit_command"))


def test_audit_prints_flags_and_tables(tmp_path, capsys):
    db = str(tmp_path / "a.db")
    assert main(["audit", "leaky-test", "--k", "2", "--db", db]) == 0
    out = capsys.readouterr().out
    assert "trivial ceiling  40.0% [" in out
    assert "by noop:finish; FLAGGED above 10.0%: a 80.0%" in out
    assert "oracle           100.0% [" in out
    assert "exploit          spam finish: 40.0%" in out
    assert "| noop:finish | trivial | **80.0** [" in out  # the probe table, flagged cell bold
    assert "zero GRPO gradient" in out


@pytest.mark.parametrize("args,fragment", [
    (["audit", "sokobna"], "unknown suite 'sokobna'; did you mean 'sokoban'"),
    (["audit", "clean-test", "--policy", "always-fails"], "base policy 'always-fails'"),
    (["audit", "clean-test", "--k", "1"], "k must be an integer >= 2"),
    (["audit", "clean-test", "--split", "val"], "split must be one of"),
])
def test_user_errors_are_one_line(tmp_path, capsys, args, fragment):
    assert main([*args, "--db", str(tmp_path / "a.db")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and fragment in err[0], err
