"""docs/adding-a-suite.md works as written: its template family (the files the guide shows,
taken from the guide itself) installed as a user installs one, then the guide's acceptance
command: the contract checker, a run of the oracle and the trivial action, and an audit."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

import tasks.base
import tasks.plugins
from harness.cli import main
from harness.store import load_episodes
from tasks.base import check_env, get_suite
from tasks.sandbox import sandbox_available

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "adding-a-suite.md"
FILE_BLOCK = re.compile(r"`(shellquest/[\w/]+\.py)`[^\n]*\n\n```python\n(.*?)```", re.S)


def guide_files() -> dict[str, str]:
    """Every file of the template, as the guide shows it (``path -> source``)."""
    return dict(FILE_BLOCK.findall(GUIDE.read_text()))


def test_the_guide_shows_the_whole_template():
    files = guide_files()
    assert set(files) == {"shellquest/__init__.py", "shellquest/suite.py"}
    for source in files.values():
        compile(source, "<guide>", "exec")  # each block is whole, valid Python
    assert "harness." not in files["shellquest/suite.py"]  # a family needs no engine import


@pytest.fixture()
def installed_template(tmp_path, monkeypatch):
    reason = sandbox_available()
    if reason is not None:
        pytest.skip(f"sandbox unavailable: {reason}")
    for relative, source in guide_files().items():
        (tmp_path / relative).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / relative).write_text(source)
    dist = tmp_path / "shellquest-0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: shellquest\nVersion: 0\n")
    (dist / "entry_points.txt").write_text(
        f"[{tasks.plugins.ENTRY_POINT_GROUP}]\nshellquest = shellquest\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    for module, name in ((tasks.base, "_REGISTRY"), (tasks.base, "_CACHE"),
                         (tasks.plugins, "_LOADED")):
        value = getattr(module, name)
        monkeypatch.setattr(module, name, dict(value) if isinstance(value, dict)
                            else type(value)(value))
    yield tmp_path
    for name in [m for m in sys.modules if m.startswith("shellquest")]:
        del sys.modules[name]


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_the_template_passes_the_acceptance_command(installed_template, tmp_path, capsys):
    env = get_suite("shellquest@1").make_env("test-hello")
    try:
        check_env(env)
    finally:
        env.close()
    db = str(tmp_path / "guide.db")
    assert main(["run", "--policy", "oracle,noop:submit at once", "--suite", "shellquest",
                 "--split", "test", "--db", db, "--run-id", "guide"]) == 0
    rates = load_episodes(db, run_id="guide").groupby("policy")["success"].mean().to_dict()
    assert rates == {"oracle": 1.0, "noop:submit at once": 0.0}
    capsys.readouterr()
    assert main(["audit", "shellquest", "--split", "test", "--k", "2", "--eval-seeds", "1",
                 "--db", db]) == 0
    out = capsys.readouterr().out
    assert "oracle           100.0% [" in out and "trivial ceiling  0.0% [" in out, out
