"""Escaping and folding of the viewer's HTML building blocks."""

from __future__ import annotations

import pytest

from harness.view.html import FOLD_CHARS, esc, text_block


def test_markup_is_escaped():
    assert esc('<script>alert("1")</script>&') == \
        "&lt;script&gt;alert(&quot;1&quot;)&lt;/script&gt;&amp;"
    assert esc("it's") == "it&#x27;s"
    assert esc(None) == ""


@pytest.mark.parametrize("char, mark", [("\x1b", "\\x1b"), ("\r", "\\x0d"), ("\x00", "\\x00"),
                                        ("\x7f", "\\x7f"), ("\x9b", "\\x9b"),
                                        ("\u202e", "\\u202e"), ("\u200b", "\\u200b")])
def test_control_characters_are_shown_as_marks(char, mark):
    shown = esc(f"a{char}b")
    assert char not in shown
    assert shown == f'a<span class="ctl">{mark}</span>b'


def test_tabs_newlines_and_text_stay_as_they_are():
    assert esc("a\tb\nc é 中") == "a\tb\nc é 中"


def test_long_text_folds_with_a_summary():
    short = text_block("short")
    assert short == '<pre class="text">short</pre>'
    long = text_block("<first line>\n" + "x" * FOLD_CHARS, label="obs")
    assert long.startswith('<details class="fold"><summary>obs: <span class="preview">'
                           "&lt;first line&gt;</span>")
    assert f"({len('<first line>') + 1 + FOLD_CHARS} chars, 2 lines)" in long
    assert text_block("y\n" * 30).startswith("<details")
    assert text_block("z", fold=True).startswith("<details")
