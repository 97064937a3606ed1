"""The swe-lite base repositories are built once per instance, whoever asks at once (issue 40:
the oracle's and the no-op's episodes of one instance, started together in a cold cache,
built it in one shared staging folder; one of them errored with `Directory not empty: '.git'`
or `git add failed: not a git repository`, and gold scored 4 of 5)."""

from __future__ import annotations

import subprocess
import threading

from tasks.swebench.lite import lite_instances, materialize
from tasks.swebench.repos import CACHE_ENV


def test_callers_at_once_get_one_whole_repository(tmp_path, monkeypatch):
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "cache"))
    instance = lite_instances()[0]
    callers = 8
    barrier, results = threading.Barrier(callers), []

    def build() -> None:
        barrier.wait()
        try:
            results.append(materialize(instance))
        except Exception as exc:  # noqa: BLE001 - collected, asserted below
            results.append(exc)

    threads = [threading.Thread(target=build) for _ in range(callers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert len(results) == callers and len(set(map(str, results))) == 1, results
    (target,) = set(results)
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=target, capture_output=True,
                          text=True, check=True).stdout.strip()
    assert head == instance.base_commit
    assert subprocess.run(["git", "status", "--porcelain"], cwd=target, capture_output=True,
                          text=True, check=True).stdout == ""
    assert [p.name for p in target.parent.iterdir()] == [instance.base_commit]  # no staging left
