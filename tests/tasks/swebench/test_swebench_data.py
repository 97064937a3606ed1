"""The official tables through `datasets`, the instance schema and the suites' task lists."""

from __future__ import annotations

import pytest

from harness.core import UnknownNameError
from tasks.swebench.data import TABLES, instance_from_row, load_rows, load_table


def test_tables_have_upstream_counts():
    counts = {table: len(load_table(table)) for table in TABLES}
    assert counts == {"verified-test": 500, "lite-test": 300, "lite-dev": 23, "full-dev": 225}


def test_instance_fields_decode_the_official_row():
    row = load_rows("lite-dev")[0]
    instance = instance_from_row(row)
    assert instance.instance_id == row["instance_id"] and instance.repo == row["repo"]
    assert instance.fail_to_pass and isinstance(instance.fail_to_pass, tuple)
    assert instance.eval_script.startswith("#!/bin/bash")
    assert instance.log_parser.startswith("parse_log_")
    assert instance_from_row(instance.row()).pass_to_pass == instance.pass_to_pass


def test_data_path_and_unknown_table(tmp_path, monkeypatch):
    with pytest.raises(UnknownNameError, match="did you mean"):
        load_rows("lite-tset")
    rows = load_rows("lite-dev")
    path = tmp_path / "mine.jsonl"
    import json

    path.write_text("".join(json.dumps({k: rows[0][k] for k in rows[0]}) + "\n" for _ in [0]))
    assert [i.instance_id for i in load_table("lite-dev", path)] == [rows[0]["instance_id"]]


def test_real_suites_list_tasks_by_repository():
    from tasks.swebench.suite import DevSuite, LiteSuite, VerifiedSuite

    lite = LiteSuite()
    assert (len(lite.tasks("test")), len(lite.tasks("dev"))) == (300, 23)
    assert "django" in lite.task_types()
    assert len(VerifiedSuite().tasks("test")) == 500
    dev = DevSuite()
    assert set(dev.task_types()) == {"astroid", "marshmallow", "pvlib-python", "pydicom",
                                     "pyvista", "sqlfluff"}
    assert dev.comparability.grader == "upstream"


def test_docker_backend_says_why_it_cannot_run_here():
    from harness.core import HarnessError
    from tasks.swebench.docker import DockerBackend, docker_available

    reason = docker_available()
    if reason is None:
        pytest.skip("a Docker daemon is available here")
    with pytest.raises(HarnessError, match="Docker|swebench"):
        DockerBackend("SWE-bench/SWE-bench_Lite")


def test_environment_spec_comes_from_the_official_table():
    from swebench.harness.constants import MAP_REPO_VERSION_TO_SPECS

    from tasks.swebench.environment import env_spec

    instance = next(i for i in load_table("full-dev") if i.repo == "pylint-dev/astroid")
    spec = env_spec(instance)
    official = MAP_REPO_VERSION_TO_SPECS[instance.repo][instance.version]
    assert (spec.python, spec.install, spec.test_cmd) == (
        official["python"], official["install"], official["test_cmd"])
    assert spec.pip_packages == tuple(official.get("pip_packages", ()))
    assert spec.setup_commit == instance.environment_setup_commit
    other = next(i for i in load_table("full-dev") if i.repo == "pydicom/pydicom")
    assert env_spec(other).key() != spec.key()
