"""The background episode writer: everything submitted is committed; a failed write is
raised to the caller."""

import pytest

from harness.core import HarnessError
from harness.episode_writer import EpisodeWriter
from harness.store import Store, load_episodes
from tests.harness.test_store import STEPS, _episode


def test_writer_thread_commits_everything(tmp_path):
    path = tmp_path / "t.db"
    with Store(path) as store:
        store.begin_run("r", {}, {})
    with EpisodeWriter(path) as writer:
        for i in range(300):
            writer.submit("r", _episode(f"t{i:03d}"), STEPS)
    frame = load_episodes(path)
    assert len(frame) == 300 and frame.task_id.is_unique


def test_writer_reports_a_failed_write(tmp_path):
    path = tmp_path / "t.db"
    with Store(path) as store:
        store.begin_run("r", {}, {})
    writer = EpisodeWriter(path)
    writer.submit("r", _episode("x"), ())
    writer.submit("r", _episode("x"), ())  # duplicate key
    with pytest.raises(HarnessError, match="writing to"):
        writer.close()
