import pytest

from verkit import Version, parse


def test_parse_plain():
    v = parse("1.2.3")
    assert (v.major, v.minor, v.patch) == (1, 2, 3)


def test_parse_rejects_garbage():
    with pytest.raises(ValueError):
        parse("1.2")


def test_str_roundtrip():
    assert str(parse("1.2.3-rc.1")) == "1.2.3-rc.1"


def test_order_simple():
    assert parse("1.2.3") < parse("1.10.0")


def test_bump_minor():
    assert parse("1.2.3").bump("minor") == Version(1, 3, 0)
