"""`harness view` on the command line: user errors exit 2 with one line; the server starts
on a free loopback port, serves the store read-only and says where."""

from __future__ import annotations

import re
import signal
import subprocess

import httpx
import pytest

from harness.cli import main


@pytest.mark.parametrize("flags, message", [
    (["--host", "0.0.0.0"], "loopback addresses only"),
    (["--host", "example.org"], "loopback addresses only"),
    (["--port", "70000"], "--port must be in 0..65535"),
])
def test_user_errors_exit_2_with_one_line(tmp_path, capsys, view_db, flags, message):
    assert main(["view", "--db", str(view_db.path), *flags]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("harness view: error: ") and message in err and "\n" not in err


def test_a_missing_database_exits_2(tmp_path, capsys):
    assert main(["view", "--db", str(tmp_path / "none.db"), "--port", "0"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"harness view: error: no results database at {tmp_path / 'none.db'}; run " \
                  "`harness run` first"


def test_the_command_serves_the_store_read_only(view_db, harness_cli):
    before = view_db.path.read_bytes()
    process = subprocess.Popen([*harness_cli, "view", "--db", str(view_db.path), "--port", "0"],
                               stderr=subprocess.PIPE, text=True)
    try:
        line = process.stderr.readline()  # printed once the socket listens
        address = re.search(r"on (http://127\.0\.0\.1:\d+/)$", line.strip())
        assert address, line
        response = httpx.get(address.group(1) + "episodes", timeout=30)
        assert response.status_code == 200 and 'id="episodes"' in response.text
    finally:
        process.send_signal(signal.SIGINT)
        process.communicate(timeout=30)
    assert view_db.path.read_bytes() == before
