"""The report's tables: leaderboard by suite, per task type, pass@k, paired comparisons and
audits, as `harness.report.tables.Table`s."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from harness.audit.result import AuditResult
from harness.audit.ceilings import ALL, GENERATED_NOTE, generated_records
from harness.core import HarnessError, make_rng
from harness.report.tables import Cell, Table, interval_cell, percent
from harness.stats.compare import compare_policies
from harness.stats.estimators import pass_at_k_table as pass_at_k_by_task
from harness.stats.multiplicity import adjust_results

__all__ = ["leaderboard_table", "task_type_tables", "pass_at_k_summary", "comparison_table",
           "audit_summary_table", "audit_probe_table", "audit_learnability_table",
           "audit_failures_table", "policy_order"]


def _legend(ranked: pd.DataFrame, alpha: float) -> tuple[str, ...]:
    notes = [f"Success rate in percent [Wilson 95% interval]. Bold: best in the column. "
             f"†: not separable from the best after Holm (α = {alpha:g}; two-sided sign-flip "
             "test flipping whole tasks, the best against each other policy)."]
    untested = int((~ranked["best"] & ranked["separable"].isna()).sum())
    if untested:
        notes.append(f"{untested} entries could not be paired with the best (no shared keys, "
                     "or the same keys stored by several runs) and carry no marker.")
    return tuple(notes)


def _not_separable(value: object) -> bool:
    """`rank_policies`' ``separable`` is True, False or None (untested)."""
    return value is not None and value == value and not bool(value)


def _ranked_cell(row: pd.Series | None) -> Cell:
    if row is None:
        return Cell("–")
    return interval_cell(row["success"], row["low"], row["high"], bold=bool(row["best"]),
                         marker=_not_separable(row["separable"]))


def policy_order(ranked: pd.DataFrame) -> list[str]:
    """Policies by mean success over the groups they appear in (best first), then name."""
    means = ranked.groupby("policy")["success"].mean()
    return sorted(means.index, key=lambda p: (-means[p], p))


def leaderboard_table(ranked: pd.DataFrame, *, alpha: float = 0.05) -> Table:
    """Policies x suites (`ranking.rank_policies` rows with ``task_type == "all"``)."""
    rows = ranked[ranked["task_type"] == ALL]
    suites = sorted(rows["suite"].unique())
    lookup = {(r.suite, r.policy): r for _, r in rows.iterrows()}
    body = tuple((Cell(policy), *(_ranked_cell(lookup.get((s, policy))) for s in suites))
                 for policy in policy_order(rows))
    return Table("leaderboard", "Success rate by suite", ("Policy", *suites), body,
                 "l" + "c" * len(suites), _legend(rows, alpha))


def task_type_tables(ranked: pd.DataFrame, *, alpha: float = 0.05) -> list[Table]:
    """One table per suite: policies x task types (`rank_policies(by_task_type=True)`)."""
    tables = []
    for suite, rows in ranked.groupby("suite", sort=True):
        types = sorted(rows["task_type"].unique())
        lookup = {(r.task_type, r.policy): r for _, r in rows.iterrows()}
        body = tuple((Cell(policy), *(_ranked_cell(lookup.get((t, policy))) for t in types))
                     for policy in policy_order(rows))
        tables.append(Table(f"task-types-{suite}", f"Success rate by task type on {suite}",
                            ("Policy", *types), body, "l" + "c" * len(types),
                            _legend(rows, alpha)))
    return tables


def pass_at_k_summary(df: pd.DataFrame) -> pd.DataFrame:
    """Mean pass@k over tasks per (suite, policy) for k = 1, 2, 4, ... up to the fewest
    episodes any task has, for policies with more than one sample per task. Columns: suite,
    policy, k, pass_at_k, n_tasks (empty when no policy sampled more than once)."""
    rows = []
    sampled = df.groupby(["suite", "policy"])["sample"].max()
    for (suite, policy), top in sampled.items():
        if top < 1:
            continue
        episodes = df[(df["suite"] == suite) & (df["policy"] == policy)]
        n_min = int(episodes.groupby(["train_seed", "task_id"], dropna=False).size().min())
        k = 1
        while k <= n_min:
            table = pass_at_k_by_task(episodes, k)
            rows.append({"suite": suite, "policy": policy, "k": k,
                         "pass_at_k": float(table["pass_at_k"].mean()), "n_tasks": len(table)})
            k *= 2
    return pd.DataFrame(rows, columns=["suite", "policy", "k", "pass_at_k", "n_tasks"])


def pass_at_k_table(summary: pd.DataFrame) -> Table | None:
    """pass@k per (suite, policy) from `pass_at_k_summary`, the best of each suite and k in
    bold (None when the summary is empty)."""
    if summary.empty:
        return None
    ks = sorted(summary["k"].unique())
    best = summary.groupby(["suite", "k"])["pass_at_k"].max()
    body = []
    for (suite, policy), rows in summary.groupby(["suite", "policy"], sort=True):
        by_k = dict(zip(rows["k"], rows["pass_at_k"], strict=True))
        cells = [Cell(percent(by_k[k]), bold=by_k[k] == best[suite, k]) if k in by_k
                 else Cell("–") for k in ks]
        body.append((Cell(suite), Cell(policy), *cells, Cell(str(int(rows["n_tasks"].iloc[0])))))
    return Table("pass-at-k", "pass@k (unbiased estimator of Chen et al. 2021, mean over tasks)",
                 ("Suite", "Policy", *(f"pass@{k}" for k in ks), "Tasks"), tuple(body),
                 "ll" + "r" * (len(ks) + 1),
                 ("pass@k in percent, episodes of a task (eval seeds x samples) pooled; bold: "
                  "the best of the suite at that k.",))


def comparison_table(df: pd.DataFrame, ranked: pd.DataFrame, *, max_compare: int = 3,
                     margin: float | None = 0.05, alpha: float = 0.05,
                     n_resamples: int = 10_000) -> Table | None:
    """Per suite, the best policy against the next ``max_compare - 1`` (`compare_policies`):
    difference with its 95% bootstrap interval, permutation p, Holm-adjusted p within the
    suite, and the TOST verdict at ``margin``. None when no suite has two policies."""
    body = []
    rows = ranked[ranked["task_type"] == ALL]
    for suite, group in rows.groupby("suite", sort=True):
        order = group.sort_values(["success", "policy"], ascending=[False, True])
        policies = order["policy"].tolist()[:max_compare]
        episodes = df[(df["suite"] == suite) & df["policy"].isin(policies)]
        results = []
        for other in policies[1:]:
            try:
                results.append(compare_policies(
                    episodes, policies[0], other, suite=suite, margin=margin,
                    rng=make_rng("report/compare", suite, other), n_resamples=n_resamples))
            except HarnessError:
                continue
        if not results:
            continue
        for adjusted in adjust_results(results, method="holm", alpha=alpha):
            c = adjusted.result
            d = c.difference
            body.append((Cell(suite), Cell(c.policy_a), Cell(c.policy_b),
                         Cell(f"{100 * d.estimate:+.1f}",
                              f" [{100 * d.low:+.1f}, {100 * d.high:+.1f}]"),
                         Cell(_p(adjusted.p_value)), Cell(_p(adjusted.p_adjusted),
                                                          bold=adjusted.reject),
                         Cell(c.verdict)))
    if not body:
        return None
    margin_text = f"±{100 * margin:g} points" if margin else "none"
    return Table("comparisons", "Paired comparisons with the best policy of each suite",
                 ("Suite", "A", "B", "A − B [95% CI]", "p", "p (Holm)", "Equivalence"),
                 tuple(body), "lllcrrl",
                 (f"Differences in percentage points, paired bootstrap over tasks; p: sign-flip "
                  f"permutation test flipping whole tasks; Holm within each suite (bold: "
                  f"rejected at α = {alpha:g}); equivalence: paired TOST, margin "
                  f"{margin_text}.",))


def _p(p: float) -> str:
    return "<0.0001" if p < 1e-4 else f"{p:.4f}"


def _overall(table: pd.DataFrame, column: str) -> float | None:
    row = table[table["task_type"] == ALL]
    return None if row.empty else float(row[column].iloc[0])


def audit_summary_table(audits: Sequence[AuditResult]) -> Table:
    """One row per audit: oracle, silent-finish ceiling, flags, learnability, determinism."""
    body = []
    for audit in audits:
        s = audit.summary
        oracle = audit.rates[(audit.rates["kind"] == "oracle") & (audit.rates["task_type"] == ALL)]
        ceiling = audit.ceiling[audit.ceiling["task_type"] == ALL].iloc[0]
        body.append((
            Cell(audit.suite), Cell(audit.split),
            Cell("–") if oracle.empty else interval_cell(*oracle[["success", "low", "high"]]
                                                         .iloc[0]),
            interval_cell(ceiling["success"], ceiling["low"], ceiling["high"],
                          bold=bool(ceiling["flagged"])),
            Cell(str(ceiling["probe"]) + (f"; {GENERATED_NOTE}" if generated_records(
                audit.suite) else "")),
            Cell(", ".join(s["flagged_types"]) or "none"),
            Cell(percent(s["zero_gradient"])), Cell(percent(s["pass_at_k"])),
            Cell(percent(s["headroom"])),
            Cell(f"{s['n_flaky']} / {s['n_regraded']}"),
            Cell(percent(s["exploit_max"]))))
    k = {a.config.get("k") for a in audits}
    return Table("audit-summary", "Benchmark audits",
                 ("Suite", "Split", "Oracle", "Trivial ceiling", "Best trivial probe",
                  "Flagged task types", "Zero-gradient", f"pass@{'/'.join(map(str, k))}",
                  "Headroom", "Flaky / re-graded", "Best exploit"), tuple(body),
                 "llccllrrrrr",
                 ("Success in percent [Wilson 95% interval]. Trivial ceiling: the best trivial "
                  "probe (declared trivial actions, empty answer, invalid output, random); bold "
                  "and flagged when above the audit threshold. Zero-gradient: share of "
                  "(task, eval seed) groups of the base policy's k samples that all fail or all "
                  "succeed (no GRPO gradient). pass@k: base policy's capability ceiling. "
                  "Headroom: pass@k minus greedy (or single-sample) success.",))


def audit_probe_table(audit: AuditResult) -> Table:
    """Every probe's success per task type; trivial cells above the threshold in bold."""
    rates = audit.rates
    types = sorted(t for t in rates["task_type"].unique() if t != ALL) + [ALL]
    threshold = float(audit.config["threshold"])
    body = []
    for (probe, kind), rows in rates.groupby(["probe", "kind"], sort=False):
        lookup = {r.task_type: r for r in rows.itertuples()}
        cells = [interval_cell(r.success, r.low, r.high,
                               bold=kind != "oracle" and r.success > threshold)
                 if (r := lookup.get(t)) is not None else Cell("–") for t in types]
        body.append((Cell(probe), Cell(kind), *cells))
    return Table(f"audit-probes-{audit.suite}-{audit.split}",
                 f"Audit of {audit.suite} ({audit.split}): success of every probe by task type",
                 ("Probe", "Kind", *types), tuple(body), "ll" + "c" * len(types),
                 (f"Bold: a trivial or exploit probe above the {100 * threshold:g}% threshold.",
                  *audit.notes))


def audit_learnability_table(audit: AuditResult) -> Table:
    """Learnability under GRPO and headroom per task type (the capability ceiling)."""
    head = audit.headroom.set_index("task_type")
    k = audit.config.get("k")
    body = []
    for row in audit.learnability.itertuples():
        h = head.loc[row.task_type] if row.task_type in head.index else None
        body.append((Cell(row.task_type), Cell(str(row.n_tasks)), Cell(percent(row.success)),
                     Cell(percent(row.all_fail)), Cell(percent(row.all_succeed)),
                     Cell(percent(row.zero_gradient), bold=row.zero_gradient >= 0.5),
                     Cell(percent(row.pass_at_k)),
                     Cell("–" if h is None else percent(h["greedy"])),
                     Cell("–" if h is None else percent(h["headroom"]))))
    base = audit.config.get("base_policy")
    greedy = "Greedy" if audit.config.get("greedy_policy") else "pass@1"
    return Table(f"audit-learnability-{audit.suite}-{audit.split}",
                 f"Learnability of {audit.suite} ({audit.split}) under GRPO: {base}, k={k}",
                 ("Task type", "Tasks", "Success", "All fail", "All succeed", "Zero-gradient",
                  f"pass@{k}", greedy, "Headroom"), tuple(body), "lrrrrrrrr",
                 ("Percent of (task, eval seed) groups; bold: half or more of the groups give "
                  "no gradient.",))


def audit_failures_table(audit: AuditResult) -> Table | None:
    """Tasks the oracle fails, tasks whose environment did not build (apart: not oracle
    failures) and trajectories that did not re-grade the same (None if none)."""
    body = [(Cell("oracle failure"), Cell(r.task_id), Cell(r.task_type),
             Cell(f"{r.successes} / {r.n} solved; {r.verdict}"))
            for r in audit.oracle_failures.itertuples()]
    body += [(Cell("environment did not build"), Cell(r.task_id), Cell(r.task_type),
              Cell(r.reason)) for r in audit.unbuilt.itertuples()]
    body += [(Cell("flaky grader"), Cell(r.task_id), Cell(r.task_type),
              Cell(f"{r.policy}, eval seed {r.eval_seed}: {r.detail}"))
             for r in audit.flaky.itertuples()]
    if not body:
        return None
    return Table(f"audit-failures-{audit.suite}-{audit.split}",
                 f"Audit of {audit.suite} ({audit.split}): oracle failures, environments "
                 "that did not build and flaky grading",
                 ("Finding", "Task", "Task type", "Detail"), tuple(body), "llll")

