from textkit import count_words, indent, shorten, wrap


def test_wrap_basic():
    assert wrap("the quick brown fox", width=10) == ["the quick", "brown fox"]


def test_wrap_rejects_zero_width():
    import pytest

    with pytest.raises(ValueError):
        wrap("text", width=0)


def test_indent_basic():
    assert indent("a\nb\n") == "    a\n    b\n"


def test_shorten_fits():
    assert shorten("hello   world", 20) == "hello world"


def test_count_words_simple():
    assert count_words("one two three") == 3
