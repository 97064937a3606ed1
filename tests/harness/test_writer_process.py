"""The writer process's side: frames cut anywhere are read back whole and in order; what is
served is committed; a cut-off last frame is an error, never a silent loss."""

import os
import pickle
import threading

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.store import Store, episode_rows
from harness.writer_process import END_OF_INPUT, FRAME_HEADER, complete_frames, connect, receive
from tests.harness.test_store import STEPS, _episode


def _frame(rows) -> bytes:
    payload = pickle.dumps(rows, pickle.HIGHEST_PROTOCOL)
    return FRAME_HEADER.pack(len(payload)) + payload


rows_strategy = st.lists(st.tuples(st.tuples(st.integers(), st.text()), st.tuples(st.text())),
                         max_size=5)


@settings(max_examples=200, deadline=None)
@given(batches=st.lists(rows_strategy, max_size=6), data=st.data())
def test_frames_cut_anywhere_come_back_whole_and_in_order(batches, data):
    stream = b"".join(_frame(rows) for rows in batches)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(stream)), max_size=8)))
    buffer, received = bytearray(), []
    for start, end in zip([0, *cuts], [*cuts, len(stream)]):
        buffer += stream[start:end]
        rows, used, ended = complete_frames(buffer)
        del buffer[:used]
        received += rows
        assert not ended
    assert received == [row for rows in batches for row in rows]
    assert buffer == b""


def test_nothing_after_the_end_of_input_frame_is_read():
    buffer = bytearray(_frame([((1, "a"), ("x",))]) + END_OF_INPUT + _frame([((2, "b"), ("y",))]))
    rows, used, ended = complete_frames(buffer)
    assert rows == [((1, "a"), ("x",))] and ended
    assert used == len(_frame([((1, "a"), ("x",))])) + len(END_OF_INPUT)


def _serve_in_thread(path, chunks):
    source, sink = os.pipe()
    result = {}
    thread = threading.Thread(target=lambda: result.update(
        n=_catch(lambda: _receive_and_close(path, source))))
    thread.start()
    for chunk in chunks:
        os.write(sink, chunk)
    os.close(sink)
    thread.join(60)
    os.close(source)
    return result["n"]


def _receive_and_close(path, source):
    db = connect(str(path))
    try:
        return receive(db, replace=True, source=source)
    finally:
        db.close()


def _catch(body):
    try:
        return body()
    except Exception as exc:  # noqa: BLE001 - returned to the test
        return exc


def test_served_frames_are_committed(tmp_path):
    path = tmp_path / "t.db"
    with Store(path) as store:
        store.begin_run("r", {}, {})
    rows = [tuple(episode_rows("r", _episode(f"t{i}"), STEPS)) for i in range(7)]
    stream = _frame(rows[:3]) + _frame(rows[3:])
    assert _serve_in_thread(path, [stream[:10], stream[10:]]) == 7
    with Store(path, readonly=True) as store:
        assert sorted(store.load_episodes().task_id) == [f"t{i}" for i in range(7)]
        assert store.load_steps("r", _episode("t6").key) == STEPS


def test_served_turns_rows_are_committed_and_replace_an_earlier_attempts(tmp_path):
    import dataclasses

    from tests.harness.test_store import TURNS

    path = tmp_path / "t.db"
    with Store(path) as store:
        store.begin_run("r", {}, {})
    model = dataclasses.replace(_episode("m"), turns=TURNS)
    first = [tuple(episode_rows("r", model, STEPS)), tuple(episode_rows("r", _episode("s"), STEPS))]
    assert first[0][2] is not None and first[1][2] is None
    assert _serve_in_thread(path, [_frame(first)]) == 2
    with Store(path, readonly=True) as store:
        assert store.load_turns("r", model.key) == list(TURNS)
    again = [tuple(episode_rows("r", model, STEPS, turns=False))[:2]]  # an old-style pair
    assert _serve_in_thread(path, [_frame(again)]) == 1
    with Store(path, readonly=True) as store:
        assert store.load_turns("r", model.key) == []
        assert store.load_steps("r", model.key) == STEPS


def test_a_cut_off_last_frame_is_an_error(tmp_path):
    path = tmp_path / "t.db"
    Store(path).close()
    outcome = _serve_in_thread(path, [_frame([])[:-1]])
    assert isinstance(outcome, ValueError) and "not a whole frame" in str(outcome)


def test_a_missing_database_is_not_created(tmp_path):
    with pytest.raises(Exception, match="unable to open database file"):
        connect(str(tmp_path / "missing.db"))
    assert not (tmp_path / "missing.db").exists()
