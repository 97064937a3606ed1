import pytest

from collkit import chunk, flatten, pairwise, unique, window


def test_chunk_even():
    assert chunk([1, 2, 3, 4], 2) == [[1, 2], [3, 4]]


def test_chunk_rejects_zero():
    with pytest.raises(ValueError):
        chunk([1], 0)


def test_flatten_all():
    assert flatten([1, [2, [3, [4]]]]) == [1, 2, 3, 4]


def test_unique_basic():
    assert unique([3, 1, 3, 2, 1]) == [3, 1, 2]


def test_window_basic():
    assert window([1, 2, 3], 2) == [(1, 2), (2, 3)]


def test_pairwise_basic():
    assert pairwise("abc") == [("a", "b"), ("b", "c")]
