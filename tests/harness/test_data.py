"""``harness data pull``: the real download code against a local HTTP server on 127.0.0.1 that
serves ``../shared/data`` (only the base URL differs from an official download), checksums,
the lookup order, and the must-show: a fresh checkout with no ``shared`` folder beside it
fails ``harness run --suite webshop`` with one line naming ``harness data pull webshop``, and
runs after a pull from the local server."""

from __future__ import annotations

import functools
import hashlib
import os
import shutil
import subprocess
import sys
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from harness.data import DataPullError, file_url, pull
from tasks.datasets import (BASE_URL_ENV, CACHE_ENV, SHARED_ENV, DataMissingError,
                            get_dataset, shared_root)

ROOT = Path(__file__).resolve().parents[2]
SHARED_DATA = ROOT.parent / "shared" / "data"
DATA_VARS = ("WEBSHOP_DATA", "MEDAGENTBENCH_DATA", BASE_URL_ENV, CACHE_ENV, SHARED_ENV)


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def serve():
    """``serve(folder)`` -> the base URL of an HTTP server on 127.0.0.1 serving `folder`."""
    servers = []

    def start(folder: Path) -> str:
        handler = functools.partial(_Quiet, directory=str(folder))
        server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return f"http://127.0.0.1:{server.server_address[1]}"

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


@pytest.fixture
def no_data(monkeypatch, tmp_path):
    """No data variables; the local shared folder and the cache are empty folders."""
    for name in DATA_VARS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv(SHARED_ENV, str(tmp_path / "no-shared"))
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "cache"))
    return tmp_path


@pytest.mark.parametrize("suite", ["webshop", "medagentbench-v1"])
def test_pull_from_a_local_mirror_checks_every_sha256_and_fills_the_cache(suite, serve,
                                                                          no_data):
    dataset = get_dataset(suite)
    with pytest.raises(DataMissingError, match=f"harness data pull {dataset.name}"):
        dataset.locate()
    folder, fetched = pull(suite, base_url=serve(SHARED_DATA))
    assert folder == no_data / "cache" / dataset.name
    assert sorted(fetched) == sorted(f.name for f in dataset.files)
    for data_file in dataset.files:
        body = (folder / data_file.name).read_bytes()
        assert hashlib.sha256(body).hexdigest() == data_file.sha256
        assert body == (SHARED_DATA / dataset.name / data_file.name).read_bytes()
    assert dataset.locate() == folder
    assert pull(suite, base_url=serve(SHARED_DATA))[1] == []  # present: nothing re-fetched


def test_a_corrupted_download_is_rejected_and_not_kept(serve, no_data):
    mirror = no_data / "mirror" / "medagentbench"
    shutil.copytree(SHARED_DATA / "medagentbench", mirror)
    (mirror / "funcs_v1.json").write_text("[]")
    target = no_data / "to"
    with pytest.raises(DataPullError, match="funcs_v1.json: sha256"):
        pull("medagentbench-v2", target, base_url=serve(no_data / "mirror"))
    assert not (target / "funcs_v1.json").exists()
    assert [p.name for p in target.iterdir() if p.name.startswith(".")] == []


def test_sources_official_urls_and_a_mirror_base(monkeypatch, no_data):
    dataset = get_dataset("webshop@2")
    by_name = {f.name: f for f in dataset.files}
    assert file_url(dataset, by_name["LICENSE"], None).startswith("https://")
    with pytest.raises(DataPullError, match=BASE_URL_ENV):
        file_url(dataset, by_name["products_1000.jsonl"], None)  # derived: mirror only
    monkeypatch.setenv(BASE_URL_ENV, "http://127.0.0.1:9/data/")
    assert (file_url(dataset, by_name["products_1000.jsonl"], None)
            == "http://127.0.0.1:9/data/webshop/products_1000.jsonl")
    assert get_dataset("medagentbench").name == "medagentbench"


def test_variable_then_local_folder_then_cache(monkeypatch, no_data):
    dataset = get_dataset("webshop")
    monkeypatch.setenv(SHARED_ENV, str(SHARED_DATA))
    assert shared_root() == SHARED_DATA and dataset.locate() == SHARED_DATA / "webshop"
    monkeypatch.setenv("WEBSHOP_DATA", str(no_data / "mine"))
    assert dataset.locate() == no_data / "mine"


def _fresh_checkout(tmp_path: Path) -> Path:
    """The project's packages copied to ``tmp_path/fresh/main``: no ``shared`` beside it."""
    main = tmp_path / "fresh" / "main"
    for package in ("harness", "tasks", "signals"):
        shutil.copytree(ROOT / package, main / package,
                        ignore=shutil.ignore_patterns("__pycache__"))
    return main


@pytest.mark.slow
def test_fresh_checkout_fails_naming_data_pull_then_runs_after_a_pull(serve, tmp_path):
    main = _fresh_checkout(tmp_path)
    env = {k: v for k, v in os.environ.items() if k not in DATA_VARS}
    env.update(HARNESS_DATA_DIR=str(tmp_path / "cache"), WEBSHOP_NOUN_TAGGER="fallback",
               PYTHONPATH=str(main))

    def harness(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "harness.cli", *args], cwd=main, env=env,
                              capture_output=True, text=True, timeout=240)

    where = subprocess.run([sys.executable, "-c", "import tasks; print(tasks.__file__)"],
                           cwd=main, env=env, capture_output=True, text=True, timeout=60)
    assert where.stdout.strip() == str(main / "tasks" / "__init__.py")
    run = ("run", "--suite", "webshop", "--policy", "random", "--tasks", "2",
           "--eval-seeds", "1", "--split", "test", "--db", str(tmp_path / "runs.db"))
    failed = harness(*run)
    assert failed.returncode == 2, failed.stderr
    assert len(failed.stderr.strip().splitlines()) == 1
    assert "harness data pull webshop" in failed.stderr

    env[BASE_URL_ENV] = serve(SHARED_DATA)
    pulled = harness("data", "pull", "webshop")
    assert pulled.returncode == 0, pulled.stderr
    assert "4 file(s) downloaded" in pulled.stdout

    ran = harness(*run)
    assert ran.returncode == 0, ran.stderr
    assert "played 2 episodes (0 errors)" in ran.stdout
