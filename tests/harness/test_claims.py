"""Claims between invocations of one run (`harness.claims`): hand-made cases of every rule
(free keys taken, live holders waited for, a done claim left alone, a dead owner's claims
taken over, a key stored ``ok`` since the start dropped) and the attempt log."""

from __future__ import annotations

import time

import pytest

from harness.claims import CLAIM_TABLES, Claims, load_attempts, owners
from harness.records import EpisodeKey, EpisodeRecord
from harness.store import Store

KEYS = [EpisodeKey("oracle", "frozenlake@1", f"t{i}", 0, 0) for i in range(6)]


@pytest.fixture
def store(tmp_path):
    with Store(tmp_path / "claims.db") as opened:
        opened.begin_run("r", {"x": 1}, {"code_version": "test", "packages": {}, "host": "h"})
        yield opened


def _record(key, status="ok"):
    return EpisodeRecord(key, "4x4", "test", status, status == "ok", 1.0, 1.0, 1, 0, True,
                         False, wall_s=0.5, error=None if status == "ok" else "boom\nlast line")


def test_an_owner_alone_takes_keys_in_order_up_to_the_limit(store):
    with Claims(store, "r", lease_s=30) as mine:
        taken = mine.take(KEYS, 4)
        assert taken.keys == KEYS[:4] and taken.dropped == [] and not taken.waiting
        rows = store.tables(CLAIM_TABLES).execute(
            "SELECT task_id, owner, done FROM run_claims ORDER BY task_id").fetchall()
        assert rows == [(f"t{i}", mine.owner, 0) for i in range(4)]
    # leaving releases every claim and marks the owner ended
    assert store.tables(CLAIM_TABLES).execute("SELECT COUNT(*) FROM run_claims").fetchone() \
        == (0,)
    (_, _, _, ended), = owners(store, "r")
    assert ended is not None


def test_two_live_owners_never_share_a_key_and_wait_for_each_other(store):
    with Claims(store, "r", lease_s=30) as first, Claims(store, "r", lease_s=30) as second:
        a = first.take(KEYS, 3)
        b = second.take(KEYS, 10)
        assert a.keys == KEYS[:3]
        assert b.keys == KEYS[3:] and b.waiting  # the first three are held by a live owner
        again = second.take(KEYS[:3], 10)
        assert again.keys == [] and again.waiting and again.dropped == []


def test_keys_a_live_owner_played_are_dropped_not_waited_for(store):
    with Claims(store, "r", lease_s=30) as first, Claims(store, "r", lease_s=30) as second:
        first.take(KEYS[:2], 2)
        second.take(KEYS[5:], 1)  # the second has seen the first: claims now mark done
        first.finish(_record(KEYS[0], "error"))  # played (and failed) by the first
        first.take(KEYS[2:3], 1)  # done marks are written with the next take
        seen = second.take(KEYS[:2], 10)
        assert seen.dropped == [KEYS[0]] and seen.keys == [] and seen.waiting


def test_a_dead_owners_claims_are_taken_over_after_its_lease(store):
    dead = Claims(store, "r", lease_s=0.3)
    dead.__enter__()
    dead.take(KEYS, 6)
    dead._stop.set()  # its heartbeat stops, as a SIGKILLed process's would
    with Claims(store, "r", lease_s=0.3) as survivor:
        assert survivor.take(KEYS, 6).waiting  # still within the lease
        time.sleep(0.45)
        taken = survivor.take(KEYS, 6)
        assert taken.keys == KEYS and not taken.waiting
        holders = store.tables(CLAIM_TABLES).execute(
            "SELECT DISTINCT owner FROM run_claims").fetchall()
        assert holders == [(survivor.owner,)]


def test_a_key_stored_ok_since_the_start_is_dropped(store):
    with Claims(store, "r", lease_s=30) as first, Claims(store, "r", lease_s=30) as second:
        first.take(KEYS[:1], 1)
        store.write_episode("r", _record(KEYS[0]), [])
        first.__exit__(None, None, None)  # ended: its claims are released
        seen = second.take(KEYS[:2], 10)
        assert seen.dropped == [KEYS[0]] and seen.keys == [KEYS[1]]


def test_a_record_written_after_the_next_owner_started_is_never_played_again(store):
    """The first owner played a key before the second started (so it never marked its claim
    done) but its record reached the store only after: the second drops the key, while the
    first still holds it and after the first has released it."""
    first = Claims(store, "r", lease_s=30).__enter__()
    first.take(KEYS[:2], 2)  # alone: no done marks are kept
    first.finish(_record(KEYS[0]))
    with Claims(store, "r", lease_s=30) as second:
        store.write_episode("r", _record(KEYS[0]), [])  # committed late by the writer ...
        store.tables(CLAIM_TABLES).execute("UPDATE episodes SET finished_at=?",
                                           (second.started_at - 5,))
        # ... its row made (and its finished_at stamped) before the second started
        seen = second.take(KEYS[:2], 10)
        assert seen.dropped == [KEYS[0]] and seen.keys == [] and seen.waiting
        first.__exit__(None, None, None)
        after = second.take(KEYS[:2], 10)
        assert after.keys == [KEYS[1]] and not after.waiting


def test_failed_attempts_are_logged_and_survive_a_replacement(store):
    with Claims(store, "r", lease_s=30) as mine:
        mine.take(KEYS[:2], 2)
        mine.finish(_record(KEYS[0], "error"))
        mine.finish(_record(KEYS[1], "ok"))
    with Claims(store, "r", lease_s=30) as rerun:
        rerun.take(KEYS[:1], 1)
        rerun.finish(_record(KEYS[0], "timeout"))
    attempts = load_attempts(store, "r")
    assert list(attempts["status"]) == ["error", "timeout"]
    assert list(attempts["task_id"]) == ["t0", "t0"]
    assert attempts["error"].iloc[0].endswith("last line")
    assert (attempts["wall_s"] == 0.5).all() and attempts["owner"].nunique() == 2


def test_an_owner_whose_process_is_gone_here_is_taken_over_at_once(store):
    import subprocess
    import sys

    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    dead = Claims(store, "r", lease_s=3600)
    dead.__enter__()
    dead.take(KEYS, 6)
    dead._stop.set()
    store.tables(CLAIM_TABLES).execute("UPDATE run_owners SET pid=? WHERE owner=?",
                                       (gone.pid, dead.owner))
    with Claims(store, "r", lease_s=3600) as survivor:
        taken = survivor.take(KEYS, 6)  # an hour's lease, but its process no longer exists
        assert taken.keys == KEYS and not taken.waiting
