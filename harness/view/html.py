"""HTML building blocks of the viewer: escaping, folded text, links, tables and the page
layout. Every value that reaches a page goes through `esc` (or `text_block`, which uses it):
``html.escape`` first, then control characters (terminal escape sequences, carriage returns,
bidirectional overrides) made visible as ``\\x1b``-style marks, so stored episode text renders
inert and as it was."""

from __future__ import annotations

import html
import re
from collections.abc import Iterable, Sequence
from typing import Any
from urllib.parse import urlencode

FOLD_CHARS = 1200
"""Text longer than this (or than `FOLD_LINES` lines) is folded in a ``<details>``."""
FOLD_LINES = 24

_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2066-\u2069]")


def _visible(match: re.Match[str]) -> str:
    code = ord(match.group())
    mark = f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"
    return f'<span class="ctl">{mark}</span>'


def esc(value: Any) -> str:
    """`value` as HTML text: escaped, control characters shown as marks (tab and newline
    kept)."""
    return _CONTROL.sub(_visible, html.escape("" if value is None else str(value), quote=True))


def url(path: str, **params: Any) -> str:
    """A URL with the non-empty `params` as its query string (escape it with `esc` when it
    goes into an attribute, as `link` does)."""
    pairs = [(k, v) for k, v in params.items() if v not in ("", None)]
    return path + ("?" + urlencode(pairs) if pairs else "")


def link(href: str, label: Any, **attributes: str) -> str:
    extra = "".join(f' {name}="{esc(value)}"' for name, value in attributes.items())
    return f'<a href="{esc(href)}"{extra}>{esc(label)}</a>'


def text_block(text: str, *, fold: bool | None = None, label: str = "") -> str:
    """`text` in a ``<pre>``; folded in a ``<details>`` (summary: its first line and size)
    when long, or when `fold` says so."""
    text = "" if text is None else str(text)
    lines = text.count("\n") + 1
    if fold is None:
        fold = len(text) > FOLD_CHARS or lines > FOLD_LINES
    body = f'<pre class="text">{esc(text)}</pre>'
    if not fold:
        return body
    first = text.strip().splitlines()[0][:100] if text.strip() else ""
    prefix = f"{esc(label)}: " if label else ""
    return (f'<details class="fold"><summary>{prefix}<span class="preview">{esc(first)}</span>'
            f' <span class="size">({len(text)} chars, {lines} lines)</span></summary>'
            f"{body}</details>")


def table(header: Sequence[str], rows: Iterable[Sequence[str]], *, id: str = "",
          cls: str = "", row_classes: Sequence[str] | None = None) -> str:
    """A table whose cells are already HTML (the header is escaped here)."""
    head = "".join(f"<th>{esc(h)}</th>" for h in header)
    body = []
    for n, row in enumerate(rows):
        row_cls = row_classes[n] if row_classes is not None and n < len(row_classes) else ""
        attr = f' class="{esc(row_cls)}"' if row_cls else ""
        body.append(f"<tr{attr}>" + "".join(f"<td>{cell}</td>" for cell in row) + "</tr>")
    attrs = (f' id="{esc(id)}"' if id else "") + (f' class="{esc(cls)}"' if cls else "")
    return f"<table{attrs}><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def select(name: str, values: Sequence[str], selected: str, *, any_label: str = "any",
           labels: dict[str, str] | None = None) -> str:
    """A ``<select>`` of a filter form; the empty value means any."""
    options = [f'<option value=""{" selected" if not selected else ""}>{esc(any_label)}</option>']
    for value in values:
        mark = " selected" if value == selected else ""
        shown = (labels or {}).get(value, value)
        options.append(f'<option value="{esc(value)}"{mark}>{esc(shown)}</option>')
    return (f'<label>{esc(name.replace("_", " "))} <select name="{esc(name)}" id="f-{esc(name)}"'
            f' class="auto">{"".join(options)}</select></label>')


def number(value: Any, digits: int = 3) -> str:
    if value is None or (isinstance(value, float) and value != value):
        return "—"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return esc(value)


STYLE = """
body{font:14px/1.4 system-ui,sans-serif;margin:0;color:#222}
header{background:#23395d;color:#fff;padding:.5em 1em}
header a{color:#fff;margin-right:1.2em;text-decoration:none;font-weight:600}
main{padding:1em}
table{border-collapse:collapse;margin:.5em 0}
th,td{border:1px solid #ccc;padding:.25em .5em;text-align:left;vertical-align:top}
th{background:#f0f2f5}
pre.text{white-space:pre-wrap;word-break:break-word;margin:.2em 0;background:#f7f7f7;
 padding:.3em;max-width:100%}
.ctl{color:#b00;background:#fee;border:1px solid #fbb;font-size:90%}
.ok{color:#060}.fail{color:#b00}
tr.diverge td{background:#fff3c4}
.step{border-top:1px solid #ddd;padding:.4em 0}
.label{font-weight:600;color:#555;margin-top:.3em}
table.compare{table-layout:fixed;width:100%}
table.compare th:first-child{width:4em}
form.filters label{margin-right:.8em}
.pager a,.pager span{margin-right:.8em}
.notes{color:#555}
"""

SCRIPT = """
document.querySelectorAll('select.auto').forEach(function (s) {
  s.addEventListener('change', function () { s.form.submit(); });
});
document.querySelectorAll('button.expand').forEach(function (b) {
  b.addEventListener('click', function () {
    var open = b.dataset.open !== '1';
    document.querySelectorAll('details.fold').forEach(function (d) { d.open = open; });
    b.dataset.open = open ? '1' : '0';
    b.textContent = open ? 'collapse all' : 'expand all';
  });
});
var computing = document.getElementById('computing');
if (computing) {
  var poll = function () {
    fetch(computing.dataset.status, {cache: 'no-store'})
      .then(function (r) { return r.json(); })
      .then(function (s) {
        if (s.state === 'computing') { setTimeout(poll, 500); } else { location.reload(); }
      })
      .catch(function () { setTimeout(poll, 2000); });
  };
  setTimeout(poll, 300);
}
"""

NAV = (("/", "Runs"), ("/leaderboard", "Leaderboard"), ("/episodes", "Episodes"),
       ("/compare", "Compare"), ("/audits", "Audits"))
"""The navigation of the served viewer: (href, label)."""


def layout(title: str, body: str, *, nonce: str,
           nav: Sequence[tuple[str, str]] = NAV, head: str = "") -> str:
    """A whole page: the navigation, `body` (HTML) and the one inline script (allowed by
    its nonce only: the page's Content-Security-Policy runs no other script). `head`: extra
    HTML for the ``<head>`` (a static copy's CSP as a meta tag)."""
    nav = "".join(link(href, label) for href, label in nav)
    return (f'<!doctype html><html lang="en"><head><meta charset="utf-8">{head}'
            f"<title>{esc(title)} · harness view</title><style>{STYLE}</style></head>"
            f"<body><header><nav>{nav}</nav></header><main><h1>{esc(title)}</h1>{body}</main>"
            f'<script nonce="{esc(nonce)}">{SCRIPT}</script></body></html>')
