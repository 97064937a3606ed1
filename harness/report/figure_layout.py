"""Fitting text into a printed figure: label wrapping and abbreviation with a key, legends
under the axes, figure heights grown until every row of labels has room, and a layout check
read from matplotlib's own text extents (`layout_problems`, what the figures' tests assert).

Sizes are in points (1/72 inch) unless a name says inches. Text widths come from the font
itself (`matplotlib.textpath.TextToPath`), not from a per-character guess.
"""

from __future__ import annotations

import functools
import os
import re
import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from matplotlib.backends.backend_agg import RendererAgg
from matplotlib.figure import Figure
from matplotlib.font_manager import FontProperties
from matplotlib.lines import Line2D
from matplotlib.text import Text
from matplotlib.textpath import TextToPath

__all__ = ["COLUMN_WIDTH", "PAGE_WIDTH", "PAGE_HEIGHT", "FONT", "MIN_FONT", "LINE_PITCH",
           "text_width", "wrap_text", "FittedLabels", "fit_labels", "legend_below", "fit_axes_height",
           "layout_problems"]

COLUMN_WIDTH = 3.5
"""Width in inches of one column of a two-column paper (ACL, NeurIPS-style two-column,
IEEE): the figure width of a ``figure`` environment."""
PAGE_WIDTH = 7.0
"""Width in inches of a ``figure*`` spanning both columns (or a one-column page)."""
PAGE_HEIGHT = 9.0
"""Height in inches of a paper's text block (US letter or A4 less the margins): the tallest a
figure can be and still fit on a page."""
FONT = "DejaVu Sans"
MIN_FONT = 7.0
"""The smallest font size (points) any figure uses: labels, legends, annotations."""
LINE_PITCH = 1.2 * MIN_FONT + 1.5
"""Vertical room (points) one line of `MIN_FONT` text needs between neighbours."""

_TO_PATH = TextToPath()
_SEPARATORS = re.compile(r"(?<=[-_@/.:, ])")


@functools.lru_cache(maxsize=8192)
def text_width(text: str, size: float = MIN_FONT) -> float:
    """Width in points of the widest line of ``text`` set in `FONT` at ``size`` points."""
    prop = FontProperties(family=FONT, size=size)
    return max(_TO_PATH.get_text_width_height_descent(line, prop, ismath=False)[0]
               for line in text.split("\n"))


def wrap_text(text: str, budget: float, *, size: float = MIN_FONT,
              max_lines: int = 2) -> str | None:
    """``text`` broken after separators (``-_@/.:,`` and spaces) into at most ``max_lines``
    lines no wider than ``budget`` points, or None when it cannot be."""
    lines = [""]
    for token in (t for t in _SEPARATORS.split(text) if t):
        if not lines[-1] or text_width(lines[-1] + token, size) <= budget:
            lines[-1] += token
        else:
            lines.append(token)
    lines = [line.rstrip(" ") for line in lines]
    if len(lines) > max_lines or any(text_width(line, size) > budget for line in lines):
        return None
    return "\n".join(lines)


@dataclass(frozen=True)
class FittedLabels:
    """Labels that fit their room. ``labels[i]`` stands for ``names[i]``: the name, wrapped,
    or a truncated name with a code like ``[2]`` whose full name ``key`` lists."""

    labels: tuple[str, ...]
    key: tuple[str, ...]

    @property
    def lines(self) -> int:
        """The most lines any label takes."""
        return max((label.count("\n") + 1 for label in self.labels), default=1)


def _shared_prefix(names: Sequence[str]) -> str:
    """The longest prefix all ``names`` share that ends at a separator ('' if short)."""
    if len(names) < 2:
        return ""
    prefix = os.path.commonprefix(list(names))
    cut = max((m.end() for m in _SEPARATORS.finditer(prefix)), default=0)
    return prefix[:cut] if cut >= 6 else ""


def fit_labels(names: Sequence[str], budget: float, *, size: float = MIN_FONT,
               max_lines: int = 1, start: int = 1) -> FittedLabels:
    """Fit each of ``names`` into ``budget`` points: unchanged if it fits, wrapped at its
    separators into at most ``max_lines`` lines, else truncated with a numbered key entry
    (codes count from ``start``, so several label sets of one figure can share a key).
    When some name does not fit and all share a prefix (checkpoints of one recipe), the
    prefix becomes ``…`` with one key entry before anything is wrapped or truncated."""
    labels, key = [], []
    fits = all(text_width(n, size) <= budget for n in names)
    prefix = "" if fits else _shared_prefix(names)
    if prefix:
        names = ["…" + name[len(prefix):] for name in names]
        key.append(f"… = {prefix}")
    for name in names:
        fitted = wrap_text(name, budget, size=size, max_lines=max_lines)
        if fitted is None:
            code = f"[{start + len(key) - bool(prefix)}]"
            head = name
            while head and text_width(f"{head}…{code}", size) > budget:
                head = head[:-1]
            fitted = f"{head}…{code}"
            key.append(f"{code} {name}")
        labels.append(fitted)
    return FittedLabels(tuple(labels), tuple(key))


def legend_below(figure: Figure, handles: Sequence, labels: Sequence[str], *,
                 key: Sequence[str] = (), size: float = MIN_FONT) -> None:
    """One figure legend under the axes (constrained layout makes room for it): the entries
    for ``handles`` and then the ``key`` of abbreviated names (text only), each wrapped to
    the figure width, in as many columns as fit."""
    width = figure.get_size_inches()[0] * 72 - 12
    blank = Line2D([], [], linestyle="none", marker="none")
    handle_room = 3.3 * size  # handle (2 em) + its padding (0.8 em) + border
    shown = fit_labels(list(labels), width - handle_room - 2 * size, size=size, max_lines=2)
    entries = [(h, label, True) for h, label in zip(handles, shown.labels, strict=True)]
    entries += [(blank, text, False) for text in (*key, *shown.key)]
    if not entries:
        return
    texts = []
    for _, label, has_handle in entries:
        room = width - (handle_room if has_handle else 0) - 2 * size
        texts.append(wrap_text(label, room, size=size, max_lines=4)
                     or fit_labels([label], room, size=size).labels[0])
    ncols = _columns([text_width(t, size) + (handle_room if has else size)
                      for t, (_, _, has) in zip(texts, entries, strict=True)], width,
                     spacing=1.5 * size)
    legend = figure.legend([h for h, _, _ in entries], texts, loc="outside lower center",
                           ncols=ncols, fontsize=size, frameon=False,
                           handlelength=2.0 if handles else 0, columnspacing=1.5)
    for handle, (_, _, has_handle) in zip(legend.legend_handles, entries, strict=True):
        handle.set_visible(has_handle)


def _columns(widths: Sequence[float], room: float, *, spacing: float) -> int:
    """The most legend columns (filled column by column, as matplotlib does) whose entries of
    ``widths`` points fit in ``room`` points."""
    for ncols in range(len(widths), 1, -1):
        per = -(-len(widths) // ncols)
        columns = [widths[k:k + per] for k in range(0, len(widths), per)]
        if sum(max(c) for c in columns) + spacing * (len(columns) - 1) <= room:
            return ncols
    return 1


def fit_axes_height(figure: Figure, axes: Sequence, wanted: float, *, rounds: int = 3) -> None:
    """Grow or shrink the figure's height until ``axes`` (one panel, or panels stacked in a
    column) are ``wanted`` inches tall each, on average, under constrained layout
    (decorations keep their size, so each round closes the gap)."""
    width = figure.get_size_inches()[0]
    figure.set_size_inches(width, wanted * len(axes) + 3.0, forward=False)
    for _ in range(rounds + 4):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            figure.draw_without_rendering()
        height = figure.get_size_inches()[1]
        have = sum(a.get_position().height for a in axes) * height
        if any("collapsed" in str(w.message) for w in caught):  # no room left: go taller
            figure.set_size_inches(width, 2 * height, forward=False)
            continue
        gap = wanted * len(axes) - have
        if abs(gap) < 0.01:
            return
        figure.set_size_inches(width, max(0.5, height + gap), forward=False)
        rounds -= 1
        if rounds == 0:
            break
    figure.draw_without_rendering()


class _RecordingRenderer(RendererAgg):
    """An Agg renderer that remembers which `Text` artists it drew."""

    def __init__(self, *args):
        super().__init__(*args)
        self.texts: dict[int, Text] = {}

    def draw_text(self, gc, x, y, s, prop, angle, ismath=False, mtext=None):
        if mtext is not None and s.strip():
            self.texts[id(mtext)] = mtext
        return super().draw_text(gc, x, y, s, prop, angle, ismath=ismath, mtext=mtext)


def layout_problems(figure: Figure, *, dpi: float | None = None, min_font: float = MIN_FONT,
                    tolerance: float = 0.5) -> list[str]:
    """What is wrong with the figure as matplotlib lays it out at ``dpi`` (72: the PDF's
    points; the PNG's dpi; default the figure's): every text it draws must lie inside the
    canvas, overlap no other text, and be at least ``min_font`` points. ``tolerance`` is in
    points. Returns one line per problem (empty: the layout is clean)."""
    before = figure.dpi
    figure.set_dpi(dpi or before)
    try:
        return _problems(figure, min_font, tolerance)
    finally:
        figure.set_dpi(before)


def _problems(figure: Figure, min_font: float, tolerance: float) -> list[str]:
    width, height = figure.get_size_inches() * figure.dpi
    renderer = _RecordingRenderer(int(np.ceil(width)), int(np.ceil(height)), figure.dpi)
    figure.draw(renderer)
    figure.draw(renderer)  # layout engines settle on the first pass
    texts = list(renderer.texts.values())
    pad = tolerance * figure.dpi / 72
    boxes = np.array([t.get_window_extent(renderer).extents for t in texts]).reshape(-1, 4)
    problems = []
    for text, (x0, y0, x1, y1) in zip(texts, boxes, strict=True):
        name = repr(text.get_text()[:40])
        if text.get_fontsize() < min_font:
            problems.append(f"{name}: {text.get_fontsize():.1f} pt < {min_font} pt")
        if x0 < -pad or y0 < -pad or x1 > width + pad or y1 > height + pad:
            problems.append(f"{name}: outside the canvas ({x0:.0f}, {y0:.0f}, {x1:.0f}, "
                            f"{y1:.0f}) of {width:.0f} x {height:.0f} px")
    left = np.maximum(boxes[:, None, 0], boxes[None, :, 0])
    right = np.minimum(boxes[:, None, 2], boxes[None, :, 2])
    bottom = np.maximum(boxes[:, None, 1], boxes[None, :, 1])
    top = np.minimum(boxes[:, None, 3], boxes[None, :, 3])
    overlap = (right - left > pad) & (top - bottom > pad)
    for i, j in zip(*np.nonzero(np.triu(overlap, k=1)), strict=True):
        problems.append(f"{texts[i].get_text()[:40]!r} overlaps {texts[j].get_text()[:40]!r}")
    return problems
