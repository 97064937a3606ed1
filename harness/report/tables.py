"""Paper-ready tables in Markdown and LaTeX (booktabs), built from the episode frame.

A `Table` is a header and rows of `Cell`s; `to_markdown` and `to_latex` render it. Success
cells read ``73.1 [65.2, 80.0]``: the rate in percent with its 95% interval (no ``\\pm``:
intervals are not symmetric). **Bold** marks the best in a column; a dagger (†) marks a
policy *not separable from the best after Holm* (`harness.report.ranking`). The builders in
`harness.report.table_builders` make the leaderboard, task-type, pass@k, comparison and
audit tables; rendering is deterministic, so the same store gives byte-identical files.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass, field

__all__ = ["Cell", "Table", "percent", "interval_cell", "to_markdown", "to_latex",
           "latex_escape", "latex_document", "DAGGER"]

DAGGER = "†"


@dataclass(frozen=True)
class Cell:
    """One table cell: `main` (the number that bold and the marker attach to) and `rest`
    (e.g. the interval), both plain text."""

    main: str
    rest: str = ""
    bold: bool = False
    marker: bool = False


@dataclass(frozen=True)
class Table:
    """A titled table; `name` is its file stem, `align` one LaTeX letter per column."""

    name: str
    caption: str
    header: tuple[str, ...]
    rows: tuple[tuple[Cell, ...], ...]
    align: str = ""
    notes: tuple[str, ...] = field(default_factory=tuple)

    def __post_init__(self) -> None:
        for row in self.rows:
            if len(row) != len(self.header):
                raise ValueError(f"table {self.name}: a row has {len(row)} cells for "
                                 f"{len(self.header)} columns")


def percent(value: float | None, digits: int = 1) -> str:
    """``0.731`` -> ``"73.1"``; None or NaN -> ``"–"``."""
    if value is None or value != value:
        return "–"
    return f"{100 * value:.{digits}f}"


def interval_cell(estimate: float, low: float, high: float, *, bold: bool = False,
                  marker: bool = False) -> Cell:
    """``73.1 [65.2, 80.0]`` (percent) as a `Cell`."""
    return Cell(percent(estimate), f" [{percent(low)}, {percent(high)}]", bold, marker)


def _markdown_cell(cell: Cell) -> str:
    main = f"**{cell.main}**" if cell.bold and cell.main else cell.main
    text = main + (DAGGER if cell.marker else "") + cell.rest
    return text.replace("|", "\\|")


_MARKDOWN_ALIGN = {"l": ":---", "c": ":---:", "r": "---:"}


def to_markdown(table: Table) -> str:
    """GitHub-flavoured Markdown: a bold caption line, the table, then its notes."""
    lines = [f"**{table.caption}**", "",
             "| " + " | ".join(h.replace("|", "\\|") for h in table.header) + " |",
             "|" + "|".join(_MARKDOWN_ALIGN[a] for a in _align(table)) + "|"]
    lines += ["| " + " | ".join(_markdown_cell(c) for c in row) + " |" for row in table.rows]
    for note in table.notes:
        lines += ["", f"_{note}_"]
    return "\n".join(lines) + "\n"


_LATEX_SPECIAL = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#",
                  "_": r"\_", "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}",
                  "^": r"\textasciicircum{}", "<": r"\textless{}", ">": r"\textgreater{}",
                  "|": r"\textbar{}", "–": "--", "†": r"\textsuperscript{\dag}",
                  "α": r"$\alpha$", "≥": r"$\geq$", "≤": r"$\leq$", "×": r"$\times$"}


def latex_escape(text: str) -> str:
    """Text safe inside a LaTeX table (pdflatex): specials escaped, other non-ASCII
    characters reduced to ASCII (accents dropped, the rest replaced by ``?``)."""
    out = []
    for char in text:
        if char in _LATEX_SPECIAL:
            out.append(_LATEX_SPECIAL[char])
        elif ord(char) < 128:
            out.append(char)
        else:
            ascii_form = unicodedata.normalize("NFKD", char).encode("ascii", "ignore").decode()
            out.append(latex_escape(ascii_form) if ascii_form else "?")
    return "".join(out)


def _latex_cell(cell: Cell) -> str:
    main = latex_escape(cell.main)
    if cell.bold and main:
        main = rf"\textbf{{{main}}}"
    marker = r"\textsuperscript{\dag}" if cell.marker else ""
    return main + marker + latex_escape(cell.rest)


def _align(table: Table) -> str:
    return table.align or "l" + "r" * (len(table.header) - 1)


def to_latex(table: Table, *, comment: str = "") -> str:
    """A booktabs ``table`` float (needs ``\\usepackage{booktabs,graphicx}``); wide tables
    are scaled to the text width. `comment` goes on top as ``%`` lines."""
    lines = [f"% {line}" for line in comment.splitlines()]
    wide = len(table.header) > 5
    lines += [r"\begin{table}[htbp]", r"\centering", r"\small",
              rf"\caption{{{latex_escape(table.caption)}}}",
              rf"\label{{tab:{_label(table.name)}}}"]
    if wide:
        lines.append(r"\resizebox{\textwidth}{!}{%")
    lines += [rf"\begin{{tabular}}{{{_align(table)}}}", r"\toprule",
              " & ".join(latex_escape(h) for h in table.header) + r" \\", r"\midrule"]
    lines += [" & ".join(_latex_cell(c) for c in row) + r" \\" for row in table.rows]
    lines += [r"\bottomrule", r"\end{tabular}" + ("}" if wide else "")]
    if table.notes:
        notes = " ".join(latex_escape(n) for n in table.notes)
        lines.append(rf"\par\smallskip{{\footnotesize {notes}\par}}")
    lines.append(r"\end{table}")
    return "\n".join(lines) + "\n"


def _label(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-:." else "-" for c in name)


def latex_document(inputs: list[str], *, comment: str = "") -> str:
    """A compilable ``article`` that ``\\input``s each table file of `inputs`."""
    lines = [f"% {line}" for line in comment.splitlines()]
    lines += [r"\documentclass{article}",
              r"\usepackage[margin=2cm]{geometry}", r"\usepackage{booktabs}",
              r"\usepackage{graphicx}", r"\begin{document}"]
    lines += [rf"\input{{{name}}}" + "\n" + r"\clearpage" for name in inputs]
    lines.append(r"\end{document}")
    return "\n".join(lines) + "\n"
