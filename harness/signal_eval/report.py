"""The signal report: method x metric with 95% intervals, grouped by family.

Columns: the six within-state metrics (mean over informative states, cluster-bootstrap
interval), the pooled Spearman (QVal's headline, shown separately), points scored per second,
and the paired comparison against the best method on the headline metric (Holm-adjusted
p-value; ``best`` marks the best itself). ``*`` marks the best method of each family on the
headline metric.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from harness.signal_eval.evaluate import UPPER_REFERENCES, ScoredSignal, SignalSummary
from harness.stats.estimators import Interval
from signals.metrics import HIGHER_IS_BETTER, METRICS
from signals.registry import FAMILIES

__all__ = ["HEADLINE", "report_rows", "format_markdown", "format_lines", "SHORT"]

HEADLINE = "kendall_tau"
SHORT = {"kendall_tau": "tau-b", "spearman": "rho", "pairwise_accuracy": "pair-acc",
         "top1": "top-1", "regret": "regret", "ndcg": "NDCG"}


def _cell(interval: Interval | None) -> str:
    if interval is None or not math.isfinite(interval.estimate):
        return "-"
    if not (math.isfinite(interval.low) and math.isfinite(interval.high)):
        return f"{interval.estimate:.3f}"
    return f"{interval.estimate:.3f} [{interval.low:.2f}, {interval.high:.2f}]"


def _best_per_family(summary: SignalSummary, names: Sequence[str]) -> set[str]:
    sign = 1.0 if HIGHER_IS_BETTER[HEADLINE] else -1.0
    best: dict[str, tuple[float, str]] = {}
    for m in summary.metrics:
        if m.metric != HEADLINE or m.signal not in names or not math.isfinite(m.interval.estimate):
            continue
        value = sign * m.interval.estimate
        if m.family not in best or value > best[m.family][0]:
            best[m.family] = (value, m.signal)
    return {signal for _, signal in best.values()}


def report_rows(summary: SignalSummary, scored: Sequence[ScoredSignal]) -> tuple[list[str],
                                                                                list[list[str]]]:
    """Header and rows (strings) of the report table, families in `FAMILIES` order."""
    header = (["family", "method"] + [SHORT[m] for m in METRICS] + ["pooled rho", "points/s",
                                                                    f"vs best ({SHORT[HEADLINE]})"])
    ok = [s for s in scored if s.error is None]
    best = _best_per_family(summary, [s.name for s in ok])
    against = {c.signal: c for c in summary.comparisons if c.metric == HEADLINE}
    overall = next(iter(against.values())).best if against else None
    rows = []
    for family in FAMILIES:
        for result in (s for s in scored if s.family == family):
            mark = "*" if result.name in best else ""
            if result.error is not None:
                rows.append([family, result.name, f"failed: {result.error.splitlines()[-1][:60]}"]
                            + [""] * (len(header) - 3))
                continue
            cells = [_cell(summary.interval(result.name, m)) for m in METRICS]
            if result.name == overall:
                versus = "best"
            elif result.name in UPPER_REFERENCES:
                versus = "(upper reference)"
            elif result.name in against:
                c = against[result.name]
                versus = f"p={c.p_holm:.3g}" + (" *" if c.reject else "")
            else:
                versus = "-"
            rows.append([family, result.name + mark] + cells
                        + [_cell(summary.pooled.get(result.name)),
                           f"{result.points_per_second:.1f}", versus])
    return header, rows


def _title(summary: SignalSummary) -> str:
    return (f"{summary.suite}: {summary.n_points} points ({summary.n_informative} with distinct "
            f"Q) from {summary.n_episodes} episodes, {summary.reference} reference; mean "
            f"[95% cluster-bootstrap interval]; * best in family on {SHORT[HEADLINE]}; "
            "vs best: clustered sign-flip test, Holm-adjusted (* = significant at 0.05)")


def format_markdown(summary: SignalSummary, scored: Sequence[ScoredSignal]) -> str:
    header, rows = report_rows(summary, scored)
    lines = [f"**{_title(summary)}**", "", "| " + " | ".join(header) + " |",
             "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def format_lines(summary: SignalSummary, scored: Sequence[ScoredSignal]) -> list[str]:
    """A plain fixed-width table (for terminals and logs)."""
    header, rows = report_rows(summary, scored)
    widths = [max(len(str(r[k])) for r in [header] + rows) for k in range(len(header))]
    fmt = "  ".join(f"{{:{w}}}" for w in widths)
    return [_title(summary), fmt.format(*header)] + [fmt.format(*r) for r in rows]
