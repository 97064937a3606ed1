"""`--executor` for `harness audit` and `harness signals`: their episodes play through
`harness.executors.execute`, and on Ray give the same audit and the same behaviour run as
locally."""

from __future__ import annotations

import os

import pytest

os.environ.update({"RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0", "RAY_AUTH_MODE": "disabled"})

import ray  # noqa: E402 - the ray extra (in dev) is required here

from harness.audit import AuditConfig, audit_suite  # noqa: E402
from harness.cli import build_parser  # noqa: E402
from harness.core import ConfigError  # noqa: E402
from harness.executors.ray_executor import load_attempts  # noqa: E402
from harness.signal_eval.pipeline import SignalsConfig, _behaviour_run  # noqa: E402
from harness.store import Store, load_episodes  # noqa: E402

pytestmark = pytest.mark.xdist_group("ray")  # one worker: its Ray instances never overlap

ORDER = ["policy", "suite", "task_id", "eval_seed", "sample"]


def _episodes(db):
    frame = load_episodes(db).drop(columns=["wall_s", "model_latency_s"])
    return frame.sort_values(["run_id", *ORDER]).reset_index(drop=True)


def test_flags_reach_the_configs():
    parser = build_parser()
    assert parser.parse_args(["audit", "frozenlake", "--executor", "ray"]).executor == "ray"
    assert parser.parse_args(["signals", "--executor", "ray:auto"]).executor == "ray:auto"
    for make in (lambda: AuditConfig("frozenlake", executor="dask"),
                 lambda: SignalsConfig(executor="dask")):
        with pytest.raises(ConfigError, match="--executor must be"):
            make()


def test_audit_on_ray_equals_the_local_audit(tmp_path, ray_instance):
    results = {}
    for executor in ("local", "ray"):
        config = AuditConfig("frozenlake@1", k=2, n_tasks=3, eval_seeds=1, regrades=1,
                             max_regraded=4, db=str(tmp_path / f"{executor}.db"),
                             executor=executor)
        results[executor] = audit_suite(config)
    assert results["ray"].summary == results["local"].summary
    assert results["ray"].rates.equals(results["local"].rates)
    assert _episodes(tmp_path / "ray.db").equals(_episodes(tmp_path / "local.db"))
    with Store(tmp_path / "ray.db") as store:
        attempts = load_attempts(store)
    assert len(attempts) == len(_episodes(tmp_path / "ray.db")) > 0  # played on Ray


def test_signals_behaviour_run_on_ray_equals_the_local_one(tmp_path, ray_instance):
    ids = {}
    for executor in ("local", "ray"):
        config = SignalsConfig(suite="frozenlake@1", tasks=3, eval_seeds=2,
                               db=str(tmp_path / f"{executor}.db"), executor=executor)
        ids[executor] = _behaviour_run(config, "frozenlake@1")
    assert ids["ray"] == ids["local"]
    local, on_ray = _episodes(tmp_path / "local.db"), _episodes(tmp_path / "ray.db")
    assert len(local) == 6 and on_ray.equals(local)
    with Store(tmp_path / "ray.db") as store:
        assert len(load_attempts(store, ids["ray"])) == 6
