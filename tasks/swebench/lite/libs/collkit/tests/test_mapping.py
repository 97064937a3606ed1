import pytest

from collkit import deep_merge, get_path, group_by, invert


def test_deep_merge_nested():
    assert deep_merge({"a": {"x": 1}}, {"a": {"y": 2}}) == {"a": {"x": 1, "y": 2}}


def test_get_path_dicts():
    assert get_path({"a": {"b": 3}}, "a.b") == 3


def test_get_path_default():
    assert get_path({"a": {}}, "a.b", default="none") == "none"


def test_group_by_parity():
    assert group_by([1, 2, 3], lambda x: x % 2) == {1: [1, 3], 0: [2]}


def test_invert_basic():
    assert invert({"a": 1, "b": 2}) == {1: "a", 2: "b"}


def test_invert_duplicates():
    with pytest.raises(ValueError):
        invert({"a": 1, "b": 1})
