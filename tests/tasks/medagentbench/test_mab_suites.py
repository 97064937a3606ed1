"""The three suites end to end through the harness: task lists, the oracle at 100% over
HTTP, the silent-finish ceiling of the declared trivial actions (v1/v2 high, v3 <= 10%),
an ``openai:`` policy against ``harness serve``, ``harness serve-fhir`` and the bench."""

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import httpx
import pandas as pd
import pytest

from harness.config import RunConfig
from harness.runner import run
from tasks.medagentbench.cli import bench_oracle
from harness.stats.estimators import proportion_interval
from harness.store import load_episodes
from tasks.base import get_suite
from tasks.medagentbench.data import load_official_tasks
from tasks.medagentbench.taskdefs_v3 import BRANCH_TABLE, NO_ACTION_ANSWER_BRANCHES

SUITES = ("medagentbench-v1@1", "medagentbench-v2@1", "medagentbench-v3@1")
TRIVIAL = ("noop:finish-empty", "noop:finish-minus-one")


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_task_lists():
    v1, v2, v3 = (get_suite(s) for s in SUITES)
    for suite, version, per_type in ((v1, 1, 10), (v2, 2, 30)):
        official = load_official_tasks(version)
        tests = suite.tasks("test")
        assert [t.id for t in tests] == [r["id"] for r in official]
        assert Counter(t.task_type for t in tests) == {f"task{n}": per_type for n in range(1, 11)}
        for record in official:
            task = suite.task_def(record["id"])
            assert (task.instruction, task.context) == (record["instruction"], record["context"])
        assert suite.tasks("train") and suite.tasks("dev")
        used = {t.metadata["mrn"] for t in tests}
        assert not used & {t.metadata["mrn"] for t in suite.tasks("train") if t.metadata["mrn"]}
    tests = v3.tasks("test")
    assert len(tests) == 500 and len(v3.task_types()) == 20
    for task_type, (_, counts) in BRANCH_TABLE.items():
        branches = Counter(t.metadata["branch"] for t in tests if t.task_type == task_type)
        assert branches == counts
    pools = [{t.metadata["mrn"] for t in v3.tasks(s) if t.metadata["mrn"]}
             for s in ("train", "dev", "test")]
    assert not (pools[0] & pools[1] or pools[0] & pools[2] or pools[1] & pools[2])


@pytest.mark.slow
def test_oracle_solves_every_test_task_over_http(tmp_path):
    suites = SUITES + ("medagentbench-v1@2", "medagentbench-v2@2")
    config = RunConfig(policies=("oracle",), suites=suites, concurrency=32,
                       db=str(tmp_path / "oracle.db"))
    summary = run(config)
    frame = load_episodes(config.db)
    assert summary.errors == 0 and len(frame) == 1300
    assert frame.groupby("suite").success.mean().to_dict() == {s: 1.0 for s in suites}
    assert (frame.n_steps >= 2).all(), "every oracle episode acts through the API"


def silent_finish_table(db):
    """Best trivial answer per task (a task passes if any trivial action passes it), with
    Wilson 95% intervals per suite x task type and per suite (task_type "all")."""
    frame = load_episodes(db)
    best = frame.groupby(["suite", "task_type", "task_id"]).success.any().reset_index()
    rows = []
    groups = list(best.groupby(["suite", "task_type"]))
    groups += [((suite, "all"), group) for suite, group in best.groupby("suite")]
    for keys, group in groups:
        interval = proportion_interval(int(group.success.sum()), len(group))
        rows.append({"suite": keys[0], "task_type": keys[1], "n": len(group),
                     "passed": int(group.success.sum()), "rate": interval.estimate,
                     "low": interval.low, "high": interval.high})
    return pd.DataFrame(rows)


TRIVIALLY_PASSED = {
    "medagentbench-v1@1": {"task4": {"stale", "none"}, "task5": {"normal", "stale", "none"},
                           "task6": {"stale", "none"}, "task7": {"none"},
                           "task9": {"normal", "none"}, "task10": {"recent"}},
    "medagentbench-v1@2": {"task4": {"stale", "none"}, "task5": {"normal", "stale", "none"},
                           "task6": {"stale", "none"}, "task7": {"none"},
                           "task9": {"normal", "none"}, "task10": {"recent"}},
}
"""Branches on which `FINISH([])` or `FINISH([-1])` passes, read off the grading rules: -1
where no value is to be reported, [] where nothing is to be ordered on tasks 5, 9, 10. The
silent-finish ceiling the runs measure must be the share of tasks on these branches."""
TRIVIALLY_PASSED["medagentbench-v2@1"] = TRIVIALLY_PASSED["medagentbench-v1@1"]
TRIVIALLY_PASSED["medagentbench-v2@2"] = TRIVIALLY_PASSED["medagentbench-v1@2"]


def expected_trivial_passes(suite_id):
    suite = get_suite(suite_id)
    passable = TRIVIALLY_PASSED[suite_id]
    return sum(suite.task_def(t.id).branch in passable.get(t.task_type, ())
               for t in suite.tasks("test"))


@pytest.mark.slow
def test_silent_finish_ceiling_is_what_the_charts_imply_and_at_most_10_percent_on_v3(tmp_path):
    """The v1/v2 ceilings are measured, not pinned: they equal the count the generated
    branch mix (equal shares, `taskdefs.OFFICIAL_MIX`) implies under the grading rules."""
    suites = SUITES + ("medagentbench-v1@2", "medagentbench-v2@2")
    config = RunConfig(policies=TRIVIAL, suites=suites, concurrency=32,
                       db=str(tmp_path / "trivial.db"))
    assert run(config).errors == 0
    table = silent_finish_table(config.db).set_index(["suite", "task_type"])
    overall = table.xs("all", level="task_type")
    for suite_id in TRIVIALLY_PASSED:
        row = overall.loc[suite_id]
        assert (row.passed, row.n) == (expected_trivial_passes(suite_id),
                                       len(get_suite(suite_id).tasks("test")))
    v3 = overall.loc["medagentbench-v3@1"]
    assert v3.rate <= 0.10 and v3.high <= 0.10, f"v3 ceiling {v3.rate:.3f} (<= {v3.high:.3f})"
    per_type = table.loc["medagentbench-v3@1"].drop("all")
    assert (per_type.passed <= 2).all() and (per_type.n == 25).all()
    assert set(per_type[per_type.passed > 0].index) == set(NO_ACTION_ANSWER_BRANCHES)
    official_types = table.loc["medagentbench-v2@2"].drop("all")
    assert official_types.loc["task1", "rate"] == 0 and official_types.loc["task3", "rate"] == 0


@pytest.mark.slow
def test_an_openai_policy_against_harness_serve(tmp_path):
    from harness.policies import register_model_backends

    register_model_backends()
    port = free_port()
    server = subprocess.Popen([sys.executable, "-m", "harness.serve", "--model", "echo",
                               "--port", str(port)], stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/v1/models", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert server.poll() is None and time.monotonic() < deadline, "harness serve died"
            time.sleep(0.2)
        config = RunConfig(policies=(f"openai:echo@http://127.0.0.1:{port}/v1",),
                           suites=("medagentbench-v3@1",), n_tasks=20, concurrency=8,
                           db=str(tmp_path / "openai.db"))
        summary = run(config)
    finally:
        server.terminate()
        server.wait(30)
    frame = load_episodes(config.db)
    assert summary.errors == 0 and len(frame) == 20 and (frame.status == "ok").all()
    assert set(frame.task_type) == {f"task{n}" for n in range(1, 21)}
    assert (frame.n_steps >= 1).all()


@pytest.mark.slow
def test_serve_fhir_command(tmp_path):
    port = free_port()
    command = [sys.executable, "-c", "import sys; from harness.cli import main; "
               "sys.exit(main(sys.argv[1:]))",
               "serve-fhir", "--port", str(port), "--suite", "medagentbench-v3",
               "--task", "task5_1"]
    process = subprocess.Popen(command, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                response = httpx.get(f"http://127.0.0.1:{port}/fhir/Patient?_count=500", timeout=2)
                break
            except httpx.HTTPError:
                assert process.poll() is None and time.monotonic() < deadline, process.stderr.read()
                time.sleep(0.2)
        assert response.json()["total"] == 500
        mrn = get_suite("medagentbench-v3@1").task_def("task5_1").mrn
        found = httpx.get(f"http://127.0.0.1:{port}/fhir/Observation?patient={mrn}&code=MG"
                          "&date=ge2023-11-12T10:15:00Z").json()
        assert found["total"] >= 1, "the task's own chart is served"
        bad = httpx.post(f"http://127.0.0.1:{port}/fhir/Observation", content="{")
        assert bad.status_code == 400 and bad.json()["resourceType"] == "OperationOutcome"
    finally:
        process.send_signal(signal.SIGINT)
        assert process.wait(30) == 0


@pytest.mark.slow
def test_bench_runs_the_oracle_through_both_paths():
    figures = bench_oracle("medagentbench-v1", concurrency=8)
    assert figures["episodes"] == 100 and figures["bare_success"] == 1.0
    assert figures["harness_errors"] == 0
