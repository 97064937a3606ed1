"""The official-engine adapter. Here (the harness's venv) the package cannot be installed
(it pins pydantic 1), so the adapter must fail with the install line; with
``APPWORLD_PYTHON`` pointing at an interpreter that has ``appworld`` installed (and
``appworld install`` run), the adapter plays a world generated with the package itself, the
test and the engine's process both started with no network (the model's code in the engine
sees only ``lo`` and cannot connect out, even past AppWorld's own import guard)."""

import json
import os
import subprocess
from pathlib import Path

import pytest

from tasks.appworld.netns import no_network_prefix
from tasks.appworld.official import (AppWorldOfficialEnv, AppWorldUnavailableError,
                                     official_available)

ROOT = Path(__file__).resolve().parents[3]


def test_adapter_is_guarded_without_the_package(monkeypatch):
    monkeypatch.delenv("APPWORLD_PYTHON", raising=False)
    if official_available() is None:
        pytest.skip("the official package and data are installed here")
    assert "appworld" in official_available().lower()
    env = AppWorldOfficialEnv("any_1")
    with pytest.raises(AppWorldUnavailableError, match="pins pydantic 1"):
        env.reset(seed=0)


@pytest.mark.slow
@pytest.mark.skipif(not os.environ.get("APPWORLD_PYTHON"),
                    reason="APPWORLD_PYTHON (a venv with PyPI appworld) not set")
def test_official_engine_serves_a_generated_world(tmp_path):
    python = os.environ["APPWORLD_PYTHON"]
    env = {**os.environ, "PYTHONPATH": str(ROOT),
           "PATH": f"{Path(python).parent}:{os.environ['PATH']}"}
    run = subprocess.run([*no_network_prefix(), python,
                          str(Path(__file__).with_name("official_world.py")), str(tmp_path)],
                         capture_output=True, text=True, env=env, timeout=500)
    assert run.returncode == 0, run.stderr[-2000:]
    outcome = json.loads(run.stdout.strip().splitlines()[-1])
    assert outcome["available"] is None and outcome["invalid"] is True
    assert outcome["engine_network"]["interfaces"] == ["lo"]
    assert outcome["oracle"]["won"] is True
    assert outcome["do_nothing"]["won"] is False
    assert outcome["collateral"]["won"] is False
