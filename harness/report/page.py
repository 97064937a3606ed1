"""The leaderboard page: one self-contained static HTML file (inline CSS and JS, no network).

A sortable leaderboard (click a column header; click again to reverse) with 95% intervals,
filters by suite and split, a details section per policy (success by suite and task type,
links to stored trajectories), the trajectories themselves, the audit summary and the
report's provenance. Everything is escaped; the page works without JS too (unsorted).
"""

from __future__ import annotations

import html
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from harness.report.tables import DAGGER, Cell, Table, percent

__all__ = ["Trajectory", "page_html", "table_html", "anchor"]


@dataclass(frozen=True)
class Trajectory:
    """One stored episode shown on the page. steps: ``(t, observation, action, reward)``."""

    anchor: str
    policy: str
    suite: str
    task_id: str
    eval_seed: int
    sample: int
    success: bool
    steps: tuple[tuple[int, str, str, float], ...]
    truncated_steps: int = 0


def anchor(*parts: Any) -> str:
    """An id attribute value made of ``parts`` (letters, digits and dashes)."""
    text = "-".join(str(p) for p in parts)
    return "".join(c if c.isalnum() else "-" for c in text).strip("-").lower()


def _e(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _cell_html(cell: Cell) -> str:
    main = f"<b>{_e(cell.main)}</b>" if cell.bold else _e(cell.main)
    return main + (DAGGER if cell.marker else "") + _e(cell.rest)


def table_html(table: Table) -> str:
    """A `Table` as an HTML table with its caption and notes."""
    head = "".join(f"<th>{_e(h)}</th>" for h in table.header)
    rows = "".join("<tr>" + "".join(f"<td>{_cell_html(c)}</td>" for c in row) + "</tr>"
                   for row in table.rows)
    notes = "".join(f"<p class='note'>{_e(n)}</p>" for n in table.notes)
    return (f"<table class='plain' id='{anchor('table', table.name)}'><caption>"
            f"{_e(table.caption)}</caption><thead><tr>{head}</tr></thead><tbody>{rows}"
            f"</tbody></table>{notes}")


_COLUMNS = (("Policy", "text"), ("Suite", "text"), ("Split", "text"),
            ("Success % [95% CI]", "num"), ("Status", "text"), ("n", "num"),
            ("Errors", "num"), ("Mean score", "num"))


def _status(row: Any) -> str:
    if row.best:
        return "best"
    if row.separable is None or row.separable != row.separable:
        return "not tested"
    return "separable" if row.separable else f"not separable{DAGGER}"


def _leaderboard_rows(ranked: pd.DataFrame, extra: pd.DataFrame) -> str:
    extra = extra.set_index(["split", "suite", "policy"])
    out = []
    for order, row in enumerate(ranked.itertuples()):
        errors = int(extra.at[(row.split, row.suite, row.policy), "errors"])
        score = float(extra.at[(row.split, row.suite, row.policy), "mean_score"])
        bar = (f"<span class='ci' aria-hidden='true'><span style='left:{100 * row.low:.1f}%;"
               f"width:{100 * (row.high - row.low):.1f}%'></span><i style='left:"
               f"{100 * row.success:.1f}%'></i></span>")
        success = (f"{percent(row.success)} [{percent(row.low)}, {percent(row.high)}]")
        cells = [(row.policy, f"<a href='#{anchor('policy', row.policy)}'>{_e(row.policy)}</a>"),
                 (row.suite, _e(row.suite)), (row.split, _e(row.split)),
                 (f"{row.success:.6f}", ("<b>" + _e(success) + "</b>" if row.best
                                          else _e(success)) + bar),
                 (_status(row), _e(_status(row))), (row.n, row.n), (errors, errors),
                 (f"{score:.6f}", f"{score:.3f}")]
        tds = "".join(f"<td data-sort='{_e(key)}'>{text}</td>" for key, text in cells)
        out.append(f"<tr data-suite='{_e(row.suite)}' data-split='{_e(row.split)}' "
                   f"data-order='{order}'>{tds}</tr>")
    return "\n".join(out)


def _options(values: Sequence[str], label: str, element: str) -> str:
    options = "".join(f"<option value='{_e(v)}'>{_e(v)}</option>" for v in values)
    return (f"<label>{label} <select id='{element}'><option value='*'>all</option>{options}"
            "</select></label>")


def _policy_sections(details: pd.DataFrame, trajectories: Sequence[Trajectory]) -> str:
    by_policy: dict[str, list[Trajectory]] = {}
    for trajectory in trajectories:
        by_policy.setdefault(trajectory.policy, []).append(trajectory)
    sections = []
    for policy, rows in details.groupby("policy", sort=True):
        body = "".join(
            f"<tr><td>{_e(r.suite)}</td><td>{_e(r.split)}</td><td>{_e(r.task_type)}</td>"
            f"<td>{percent(r.success)}</td><td>{r.n}</td></tr>" for r in rows.itertuples())
        links = "".join(
            f"<li><a href='#{t.anchor}'>{_e(t.suite)} {_e(t.task_id)} (eval seed "
            f"{t.eval_seed}, sample {t.sample}): {'success' if t.success else 'failure'}"
            "</a></li>" for t in by_policy.get(policy, []))
        sections.append(
            f"<section class='policy' id='{anchor('policy', policy)}'><h3>{_e(policy)}</h3>"
            "<table class='plain'><thead><tr><th>Suite</th><th>Split</th><th>Task type</th>"
            f"<th>Success %</th><th>n</th></tr></thead><tbody>{body}</tbody></table>"
            f"<ul class='trajectories'>{links or '<li>no stored trajectory</li>'}</ul>"
            "</section>")
    return "\n".join(sections)


def _trajectory_sections(trajectories: Sequence[Trajectory]) -> str:
    out = []
    for t in trajectories:
        steps = "".join(f"<tr><td>{n}</td><td><pre>{_e(obs)}</pre></td><td><code>{_e(act)}"
                        f"</code></td><td>{reward:g}</td></tr>" for n, obs, act, reward in t.steps)
        more = (f"<p class='note'>{t.truncated_steps} more steps not shown</p>"
                if t.truncated_steps else "")
        out.append(
            f"<details class='trajectory' id='{t.anchor}'><summary>{_e(t.policy)} · "
            f"{_e(t.suite)} · {_e(t.task_id)} · eval seed {t.eval_seed} · sample {t.sample} · "
            f"{'success' if t.success else 'failure'}</summary><table class='plain'><thead>"
            "<tr><th>t</th><th>Observation</th><th>Action</th><th>Reward</th></tr></thead>"
            f"<tbody>{steps}</tbody></table>{more}"
            f"<p><a href='#{anchor('policy', t.policy)}'>back to {_e(t.policy)}</a></p>"
            "</details>")
    return "\n".join(out)


def page_html(*, title: str, ranked: pd.DataFrame, extra: pd.DataFrame, details: pd.DataFrame,
              audit_tables: Sequence[Table], trajectories: Sequence[Trajectory],
              provenance: dict[str, Any]) -> str:
    """The whole page.

    ranked: `ranking.rank_policies` rows plus a ``split`` column (task_type ``"all"``);
    extra: split, suite, policy, errors, mean_score; details: policy, suite, split,
    task_type, success, n. audit_tables: the audit summary first, then per-audit details
    (shown folded).
    """
    head = "".join(f"<th data-type='{kind}' tabindex='0'>{_e(name)}</th>"
                   for name, kind in _COLUMNS)
    audits = "<p>No audit in this store; run <code>harness audit SUITE</code>.</p>"
    if audit_tables:
        audits = table_html(audit_tables[0]) + "".join(
            f"<details class='audit'><summary>{_e(t.caption)}</summary>{table_html(t)}"
            "</details>" for t in audit_tables[1:])
    provenance_json = _e(json.dumps(provenance, indent=1, sort_keys=True))
    return _TEMPLATE.format(
        title=_e(title), css=_CSS, js=_JS,
        suite_filter=_options(sorted(ranked["suite"].unique()), "Suite", "suite-filter"),
        split_filter=_options(sorted(ranked["split"].unique()), "Split", "split-filter"),
        head=head, rows=_leaderboard_rows(ranked, extra), n_rows=len(ranked),
        audits=audits, policies=_policy_sections(details, trajectories),
        trajectories=_trajectory_sections(trajectories) or "<p>No stored trajectories.</p>",
        command=_e(provenance.get("command", "")), provenance=provenance_json)


_TEMPLATE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title><style>{css}</style></head>
<body><header><h1>{title}</h1>
<p class="note">Regenerate: <code>{command}</code></p></header>
<main>
<section id="leaderboard-section"><h2>Leaderboard</h2>
<div class="filters">{suite_filter} {split_filter} <span id="row-count">{n_rows} rows</span></div>
<table id="leaderboard" class="sortable"><thead><tr>{head}</tr></thead><tbody>
{rows}
</tbody></table>
<p class="note">Success rate with its Wilson 95% interval (bar: interval, tick: estimate). Status:
the best of its suite and split, or whether it is separable from the best after Holm
(two-sided sign-flip test flipping whole tasks, α = 0.05). Click a column header to sort.</p>
</section>
<section id="audits"><h2>Audit summary</h2>{audits}</section>
<section id="policies"><h2>Policies</h2>{policies}</section>
<section id="trajectories"><h2>Trajectories</h2>{trajectories}</section>
<section id="provenance"><h2>Provenance</h2><pre>{provenance}</pre></section>
</main><script>{js}</script></body></html>
"""

_CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:0 auto;max-width:1200px;
padding:0 16px 48px;color:#1a1a1a}
h1{font-size:22px}h2{font-size:18px;margin-top:32px;border-bottom:1px solid #ddd}
table{border-collapse:collapse;margin:8px 0}th,td{padding:3px 8px;border-bottom:1px solid #eee;
text-align:left;vertical-align:top}thead th{border-bottom:2px solid #444;background:#fafafa}
table.sortable thead th{cursor:pointer;position:sticky;top:0;user-select:none}
th[aria-sort=ascending]::after{content:" \\25B2"}th[aria-sort=descending]::after{content:" \\25BC"}
caption{text-align:left;font-weight:600;padding:4px 0}.note{color:#555;font-size:12px}
.filters{margin:8px 0}.filters label{margin-right:12px}
.ci{display:inline-block;position:relative;width:80px;height:8px;margin-left:8px;
background:#f0f0f0;vertical-align:middle}.ci span{position:absolute;top:3px;height:2px;
background:#0072B2}.ci i{position:absolute;top:0;width:2px;height:8px;background:#E69F00}
pre{white-space:pre-wrap;margin:0;font-size:12px}details{margin:4px 0}
pre,code,td,summary,caption,.note{overflow-wrap:anywhere}table{max-width:100%}
summary{cursor:pointer}section.policy{margin-bottom:16px}
"""

_JS = """
(function () {
  var table = document.getElementById('leaderboard');
  var body = table.tBodies[0];
  var headers = Array.prototype.slice.call(table.tHead.rows[0].cells);
  var state = {col: -1, dir: 1};
  function sortBy(index) {
    var numeric = headers[index].getAttribute('data-type') === 'num';
    var dir = state.col === index ? -state.dir : (numeric ? -1 : 1);
    state = {col: index, dir: dir};
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (a, b) {
      var x = a.cells[index].getAttribute('data-sort');
      var y = b.cells[index].getAttribute('data-sort');
      var c = numeric ? parseFloat(x) - parseFloat(y) : x.localeCompare(y);
      return dir * c || (a.getAttribute('data-order') - b.getAttribute('data-order'));
    });
    rows.forEach(function (r) { body.appendChild(r); });
    headers.forEach(function (h) { h.removeAttribute('aria-sort'); });
    headers[index].setAttribute('aria-sort', dir > 0 ? 'ascending' : 'descending');
  }
  headers.forEach(function (th, i) {
    th.addEventListener('click', function () { sortBy(i); });
    th.addEventListener('keydown', function (e) { if (e.key === 'Enter') { sortBy(i); } });
  });
  var suite = document.getElementById('suite-filter');
  var split = document.getElementById('split-filter');
  var count = document.getElementById('row-count');
  function filter() {
    var shown = 0;
    Array.prototype.forEach.call(body.rows, function (r) {
      var ok = (suite.value === '*' || r.getAttribute('data-suite') === suite.value) &&
               (split.value === '*' || r.getAttribute('data-split') === split.value);
      r.hidden = !ok; if (ok) { shown += 1; }
    });
    count.textContent = shown + ' rows';
  }
  suite.addEventListener('change', filter);
  split.addEventListener('change', filter);
  function openTarget() {
    var target = location.hash && document.getElementById(location.hash.slice(1));
    if (target && target.tagName === 'DETAILS') { target.open = true; target.scrollIntoView(); }
  }
  window.addEventListener('hashchange', openTarget);
  openTarget();
}());
"""
