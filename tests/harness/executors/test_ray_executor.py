"""`harness run --executor ray`: the same stored episodes as the local runner for scripted
policies on embedded suites, and a two-node Ray cluster on loopback (a head and a worker
node, each with its own raylet and object store processes) whose worker node is killed
mid-run:
the run completes, every episode is stored exactly once, and the lost attempts are
recorded and retried."""

from __future__ import annotations

import asyncio
import os
import re
import sys
import time
from pathlib import Path

import pytest

# Loopback only: Ray replaces 127.0.0.1 with the host's routable address unless its
# single-machine mode is on (read when ray is imported); token auth is off for this
# throwaway test cluster on 127.0.0.1, so the driver and both nodes need no shared token.
LOOPBACK = {"RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0", "RAY_AUTH_MODE": "disabled"}
os.environ.update(LOOPBACK)

import ray  # noqa: E402

from harness.cli import main  # noqa: E402
from harness.config import make_run_config  # noqa: E402
from harness.executors import parse_executor  # noqa: E402
from harness.policies import make_policy  # noqa: E402
from harness.executors.ray_executor import (EXECUTOR_TABLES, load_attempts,  # noqa: E402
                                            run_on_ray)
from harness.records import EpisodeKey  # noqa: E402
from harness.runner import run  # noqa: E402
from harness.store import Store, load_episodes  # noqa: E402

pytestmark = pytest.mark.xdist_group("ray")  # one worker: its Ray instances never overlap

TIMING = ["wall_s", "model_latency_s"]


def test_executor_spec_parsing():
    assert parse_executor("local").kind == "local"
    assert parse_executor("ray").address is None
    spec = parse_executor("ray:127.0.0.1:6379", max_retries=2)
    assert (spec.kind, spec.address, spec.max_retries) == ("ray", "127.0.0.1:6379", 2)
    for bad in ("dask", "local:x", ""):
        with pytest.raises(Exception, match="--executor must be"):
            parse_executor(bad)


def _stored(db: Path, run_id: str):
    frame = load_episodes(db).drop(columns=TIMING + ["run_id"])
    frame = frame.sort_values(["policy", "suite", "task_id", "eval_seed", "sample"])
    with Store(db) as store:
        steps = {tuple(r): [(s.t, s.observation, s.action, s.raw_output, s.reward,
                             s.terminated, s.truncated, s.info)
                            for s in store.load_steps(run_id, _key(r))]
                 for r in frame[["policy", "suite", "task_id", "eval_seed", "sample"]]
                 .itertuples(index=False)}
    return frame.reset_index(drop=True), steps


def _key(row):
    return EpisodeKey(row[0], row[1], row[2], int(row[3]), int(row[4]))


@pytest.mark.slow
def test_ray_stores_the_same_episodes_as_local(tmp_path):
    """Local instance started by the CLI itself (`--executor ray`)."""
    flags = ["--policy", "oracle,random,noop", "--suite", "frozenlake@1,sokoban@1",
             "--tasks", "3", "--eval-seeds", "2", "--samples", "2", "--run-id", "same"]
    config = make_run_config({"policies": ["oracle", "random", "noop"],
                              "suites": ["frozenlake@1", "sokoban@1"], "n_tasks": 3,
                              "eval_seeds": 2, "samples": 2, "run_id": "same",
                              "db": str(tmp_path / "local.db")})
    summary = run(config)
    assert summary.played == 72 and summary.errors == 0
    assert main(["run", *flags, "--db", str(tmp_path / "ray.db"), "--executor", "ray"]) == 0
    local, local_steps = _stored(tmp_path / "local.db", "same")
    on_ray, ray_steps = _stored(tmp_path / "ray.db", "same")
    assert len(on_ray) == 72 and local.equals(on_ray)
    assert local_steps == ray_steps and sum(map(len, ray_steps.values())) > 72
    with Store(tmp_path / "ray.db") as store, Store(tmp_path / "local.db") as other:
        attempts = load_attempts(store, "same")
        assert store.run_config("same") == other.run_config("same")
    assert len(attempts) == 72 and set(attempts["outcome"]) == {"ok"}
    assert (attempts["attempt"] == 0).all()


@pytest.fixture
def cluster():
    """Ray's own multi-node test cluster (`ray.cluster_utils.Cluster`) on 127.0.0.1: a head
    and a worker node, 1 CPU each, each node its own raylet and object store processes; the
    head's GCS declares a node dead after 3 missed health checks 0.5 s apart."""
    from ray.cluster_utils import Cluster

    cluster = Cluster(initialize_head=True, head_node_args={
        "num_cpus": 1, "node_ip_address": "127.0.0.1", "include_dashboard": False,
        "_system_config": {"health_check_period_ms": 500, "health_check_timeout_ms": 1000,
                           "health_check_failure_threshold": 3}})
    try:
        worker = cluster.add_node(num_cpus=1, node_ip_address="127.0.0.1")
        ray.init(address=cluster.address, include_dashboard=False, log_to_driver=False)
        assert len([n for n in ray.nodes() if n["Alive"]]) == 2
        assert {n["NodeManagerAddress"] for n in ray.nodes()} == {"127.0.0.1"}
        yield cluster, worker
    finally:
        ray.shutdown()
        cluster.shutdown()


class PacedPolicy:
    """A scripted policy that takes `pause_s` per decision, so that episodes last long
    enough for the worker node to die with one of them running (the bare scripted episodes
    finish in milliseconds, and the node could die idle)."""

    def __init__(self, spec: str, pause_s: float = 0.01):
        self.inner, self.pause_s = make_policy(spec), pause_s
        self.id, self.train_seed = self.inner.id, self.inner.train_seed
        self.provenance = self.inner.provenance

    async def act(self, context):
        await asyncio.sleep(self.pause_s)
        return await self.inner.act(context)


# Ray workers cannot import this test module: its classes travel by value.
ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])


def _alive_nodes_once_settled(expected: int, deadline_s: float = 60.0) -> int:
    """Alive nodes as the GCS reports them, polled until `expected` or the deadline: the GCS
    marks a node dead only after its missed health checks, which on a loaded machine can come
    after a short run has already finished on the surviving node."""
    end = time.monotonic() + deadline_s
    while True:
        alive = len([n for n in ray.nodes() if n["Alive"]])
        if alive == expected or time.monotonic() > end:
            return alive
        time.sleep(0.25)


@pytest.mark.slow
def test_worker_node_killed_mid_run(cluster, tmp_path):
    cluster, worker = cluster
    address = cluster.address
    head_node = ray.get_runtime_context().get_node_id()
    config = make_run_config({"policies": ["oracle", "random"],
                              "suites": ["frozenlake@1", "sokoban@1"], "n_tasks": 20,
                              "eval_seeds": 2, "run_id": "killed",
                              "db": str(tmp_path / "ray.db")})
    seen = []

    def on_episode(record):
        seen.append(record.key)
        if len(seen) == 12:  # the whole worker node: raylet, object store, its workers
            cluster.remove_node(worker, allow_graceful=False)

    spec = parse_executor(f"ray:{address}", max_retries=3)
    with Store(config.db) as store:
        summary = run_on_ray(config, spec, store=store, on_episode=on_episode,
                             policies=[PacedPolicy("oracle"), PacedPolicy("random")])
        attempts = load_attempts(store, "killed")
        runs = store.tables(EXECUTOR_TABLES).execute(
            "SELECT executor, max_retries FROM executor_runs WHERE run_id='killed'").fetchall()
    assert not worker.any_processes_alive()  # the node really died mid-run
    assert _alive_nodes_once_settled(expected=1) == 1  # and the head's GCS saw it die
    assert summary.planned == 160 and summary.played == 160 and summary.errors == 0
    frame = load_episodes(config.db)
    keys = frame[["policy", "suite", "task_id", "eval_seed", "sample"]]
    assert len(frame) == 160 and not keys.duplicated().any()  # each episode stored once
    assert (frame["status"] == "ok").all()
    lost = attempts[attempts["outcome"] == "lost"]
    assert len(lost) >= 1, "no attempt was lost with the worker node"
    assert len(attempts[attempts["outcome"] == "ok"]) == 160
    retried = attempts[(attempts["attempt"] > 0) & (attempts["outcome"] == "ok")]
    key = ["policy_id", "suite", "task_id", "eval_seed", "sample"]
    assert set(map(tuple, retried[key].values)) == set(map(tuple, lost[key].values))
    assert (retried["node"] == head_node).all()  # retries ran on the surviving head
    assert runs == [(f"ray:{address}", 3)]


def _kill_ray_node_of(pid: int) -> list[str]:
    """SIGKILL every process of the Ray instance that process `pid` started (its GCS,
    raylet, agents and workers), leaving its episode writer alone; the names killed."""
    import psutil

    killed = []
    for child in psutil.Process(pid).children(recursive=True):
        try:
            command = " ".join(child.cmdline())
            if "ray" in command and "writer_process" not in command:
                child.kill()
                killed.append(child.name())
        except psutil.Error:
            continue
    return killed


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_the_local_node_dying_stops_the_run_with_one_line_naming_it(tmp_path):
    """`harness run --executor ray` in its own process (Ray's driver shares fate with its
    raylet, so never this test's process), its local node killed from outside mid-run."""
    import signal
    import sqlite3
    import subprocess

    db = tmp_path / "died.db"
    command = [sys.executable, "-m", "harness.cli", "run", "--policy", "oracle", "--suite",
               "sokoban", "--tasks", "40", "--eval-seeds", "40", "--executor", "ray",
               "--db", str(db)]
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[3])}
    run = subprocess.Popen(command, cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True, start_new_session=True)

    def stored() -> list[tuple]:
        try:
            with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30) as con:
                return con.execute("SELECT policy_id, suite, task_id, eval_seed, sample "
                                   "FROM episodes").fetchall()
        except sqlite3.Error:
            return []

    try:
        deadline = time.monotonic() + 300
        while len(stored()) < 40:
            assert run.poll() is None and time.monotonic() < deadline, run.communicate()
            time.sleep(0.05)
        killed = _kill_ray_node_of(run.pid)
        out, err = run.communicate(timeout=300)
    finally:
        if run.poll() is None:
            os.killpg(run.pid, signal.SIGKILL)
    assert "raylet" in killed and "gcs_server" in killed, killed
    lines = [line for line in err.splitlines() if line.strip() and "harness run" in line]
    assert run.returncode == 2 and len(lines) == 1, (run.returncode, err[-3000:])
    assert "died" in lines[0] and "rerun the same command" in lines[0], lines
    played = int(re.search(r"stopped after (\d+) episodes", lines[0]).group(1))
    keys = stored()
    assert len(keys) == len(set(keys)) == played < 1600  # played ones stored, each once
