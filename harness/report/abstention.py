"""The abstention metrics in the leaderboard and the report: one metric per (suite, policy)
for ``harness leaderboard --metric NAME``, the table of every metric, and the
coverage-precision curves of refusal-threshold families (``refuse:T`` policies that differ
only in T, `harness.policies.scripted.refusal_threshold`), with their areas.

Only episodes whose task declares its answerability count (`harness.stats.abstention_runs`);
intervals are the cluster bootstrap over tasks, its RNG derived from fixed labels, so the
same store gives the same tables.
"""

from __future__ import annotations

import logging

import pandas as pd

from harness.core import HarnessError, make_rng
from harness.policies.courage import courage_threshold
from harness.policies.scripted import refusal_threshold
from harness.report.tables import Cell, Table, interval_cell, percent
from harness.stats.abstention_runs import (METRICS, abstention_table, coverage_precision_curve,
                                           declared_episodes)

__all__ = ["METRIC_LABELS", "metric_leaderboard", "metric_markdown", "format_metric_row",
           "abstention_report_tables", "refusal_families"]

log = logging.getLogger(__name__)

METRIC_LABELS = {
    "precision": "precision (correct / answered)",
    "coverage": "coverage (correct / answerable)",
    "abstention_precision": "abstention precision (on unanswerable / abstained)",
    "abstention_recall": "abstention recall (abstained / unanswerable)",
    "f1_precision_coverage": "F1 of precision and coverage (RA-F1 candidate 1)",
    "f1_answer_abstain": "harmonic mean of answer F1 and abstain F1 (RA-F1 candidate 2)",
}
"""What each metric of `harness.stats.abstention.METRICS` is, as tables caption it."""
LEADERBOARD_COLUMNS = ["suite", "policy", "n", "n_tasks", "metric", "estimate", "low", "high",
                       "best"]


def metric_leaderboard(episodes: pd.DataFrame, metric: str, *,
                       n_resamples: int = 10_000) -> pd.DataFrame:
    """One row per (suite, policy) with episodes of declared answerability: `metric` with its
    cluster-bootstrap 95% interval, best first in each suite (columns
    ``LEADERBOARD_COLUMNS``; ``best``: the highest value of the suite)."""
    if metric not in METRICS:
        raise HarnessError(f"unknown abstention metric {metric!r}; one of {', '.join(METRICS)}")
    table = abstention_table(episodes, make_rng("leaderboard/abstention"),
                             n_resamples=n_resamples)
    if table.empty:
        raise HarnessError(f"no episode declares answerability, so there is no {metric}: play "
                           "a suite that declares it (osworld-files, medagentbench, ...)")
    table = table[table["metric"] == metric].copy()
    top = table.groupby("suite")["estimate"].transform("max")
    table["best"] = table["estimate"] == top
    table = table.sort_values(["suite", "estimate", "policy"], ascending=[True, False, True],
                              na_position="last")
    return table[LEADERBOARD_COLUMNS].reset_index(drop=True)


def _pct(value: float) -> str:
    return "—" if value != value else f"{100 * value:.1f}"


def metric_header(metric: str) -> list[str]:
    return ["suite", "policy", f"{metric} %", "95% CI (task bootstrap)", "n", "tasks", ""]


def format_metric_row(row: pd.Series) -> list[str]:
    """Cells of one `metric_leaderboard` row, in `metric_header` order."""
    return [row["suite"], row["policy"], _pct(row["estimate"]),
            f"[{_pct(row['low'])}, {_pct(row['high'])}]", str(row["n"]), str(row["n_tasks"]),
            "best" if row["best"] else ""]


def metric_markdown(table: pd.DataFrame, metric: str, label: str | None = None,
                    tasks: str = "that declare answerability") -> str:
    """A metric leaderboard as Markdown, captioned with the metric's `label` and which
    `tasks` its episodes come from."""
    header = metric_header(metric)
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(format_metric_row(row)) + " |" for _, row in table.iterrows()]
    lines += ["", f"{label or METRIC_LABELS[metric]}; episodes of tasks {tasks}."]
    return "\n".join(lines)


def refusal_families(policies) -> dict[str, dict[str, float]]:
    """Refusal-threshold families among `policies` (``refuse:T`` policies, and model
    policies that differ only in ``courage=C``, threshold ``1 - C``): family -> {policy:
    threshold}, only families with at least two thresholds."""
    families: dict[str, dict[str, float]] = {}
    for policy in policies:
        parsed = refusal_threshold(str(policy)) or courage_threshold(str(policy))
        if parsed is not None:
            families.setdefault(parsed[0], {})[str(policy)] = parsed[1]
    return {f: members for f, members in sorted(families.items()) if len(members) >= 2}


def _metrics_table(table: pd.DataFrame) -> Table:
    lookup = {(r.suite, r.policy, r.metric): r for r in table.itertuples()}
    best = table.groupby(["suite", "metric"])["estimate"].max()
    body = []
    for suite, policy in dict.fromkeys(zip(table["suite"], table["policy"])):
        cells = []
        for metric in METRICS:
            r = lookup[suite, policy, metric]
            cells.append(interval_cell(r.estimate, r.low, r.high,
                                       bold=bool(r.estimate == best[suite, metric])))
        body.append((Cell(suite), Cell(policy), *cells))
    return Table("abstention", "Abstention metrics (tasks that declare answerability)",
                 ("Suite", "Policy", "Precision", "Coverage", "Abst. precision",
                  "Abst. recall", "F1 (prec., cov.)", "F1 (answer, abstain)"), tuple(body),
                 "ll" + "c" * len(METRICS),
                 ("Percent [95% cluster-bootstrap interval over tasks]; bold: best of the suite. "
                  "Precision: correct / answered; coverage: correct / answerable; abstention "
                  "precision and recall: abstentions on unanswerable tasks / abstentions, / "
                  "unanswerable tasks. Two candidate RA-F1 definitions under their own names: "
                  "F1 of precision and coverage; harmonic mean of that and the abstention F1. "
                  "–: undefined (an empty denominator).",))


def _curve_rows(frame: pd.DataFrame, suite: str, family: str,
                members: dict[str, float]) -> list[tuple[Cell, ...]]:
    try:
        curve = coverage_precision_curve(frame, members, make_rng("report/curve", suite, family),
                                         suite=suite)
    except HarnessError as exc:
        log.info("%s / %s: no coverage-precision curve (%s)", suite, family, exc)
        return []
    area = curve.area
    rows = []
    for i, point in enumerate(curve.points):
        rows.append((Cell(suite), Cell(family), Cell(f"{point.threshold:g}"),
                     Cell(percent(point.coverage)), Cell(percent(point.precision)),
                     Cell(f"{area.estimate:.3f}", f" [{area.low:.3f}, {area.high:.3f}]")
                     if i == 0 else Cell("")))
    return rows


def _curve_table(frame: pd.DataFrame) -> Table | None:
    body = []
    for suite, rows in frame.groupby("suite", sort=True):
        for family, members in refusal_families(rows["policy"].unique()).items():
            body += _curve_rows(frame, str(suite), family, members)
    if not body:
        return None
    return Table("coverage-precision", "Coverage-precision curves over a refusal threshold",
                 ("Suite", "Policies", "Threshold", "Coverage", "Precision",
                  "Area [95% CI]"), tuple(body), "llrrrc",
                 ("Each refusal family's policies differ only in their threshold (T in "
                  "refuse:T). Coverage and precision in percent; area under precision over "
                  "coverage (trapezoids over the points with a defined precision), its "
                  "interval the cluster bootstrap over the tasks all points played.",))


def abstention_report_tables(frame: pd.DataFrame, *, n_resamples: int = 10_000
                             ) -> list[Table]:
    """The report's abstention tables (none when no episode declares answerability)."""
    if declared_episodes(frame).empty:
        return []
    table = abstention_table(frame, make_rng("report/abstention"), n_resamples=n_resamples)
    curves = _curve_table(frame)
    return [_metrics_table(table)] + ([curves] if curves is not None else [])
