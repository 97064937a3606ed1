"""Terminal text of an audit: a few lines with the headline numbers and every flag."""

from __future__ import annotations

from harness.audit.result import AuditResult
from harness.audit.ceilings import ALL, GENERATED_NOTE, generated_records

__all__ = ["summary_lines", "one_line"]


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{100 * value:.1f}%"


def _interval(row) -> str:
    return f"{100 * row['success']:.1f}% [{100 * row['low']:.1f}, {100 * row['high']:.1f}]"


def summary_lines(result: AuditResult) -> list[str]:
    """The headline findings of `result`, one per line."""
    s, c = result.summary, result.config
    rates = result.rates
    overall = rates[rates["task_type"] == ALL]
    oracle = overall[overall["kind"] == "oracle"]
    ceiling = result.ceiling
    top = ceiling[ceiling["task_type"] == ALL].iloc[0]
    flagged = ceiling[ceiling["flagged"] & (ceiling["task_type"] != ALL)]
    n_tasks = int(result.learnability.loc[result.learnability["task_type"] == ALL,
                                          "n_tasks"].iloc[0])
    lines = [f"audit of {result.suite} ({result.split} split, {n_tasks} tasks), stored as "
             f"{result.audit_id}"]
    if oracle.empty:
        lines.append("  oracle           not measured (the suite has no oracle)")
    else:
        lines.append(f"  oracle           {_interval(oracle.iloc[0])}  "
                     f"({s['oracle_failing_tasks']} tasks failed at least once)")
    lines += _task_lists(result)
    flag = ("; FLAGGED above " + _pct(s["threshold"]) + ": " + ", ".join(
        f"{r.task_type} {_pct(r.success)} ({r.probe})" for r in flagged.itertuples())
            if len(flagged) else f"; no task type above {_pct(s['threshold'])}")
    origin = f" ({GENERATED_NOTE})" if generated_records(result.suite) else ""
    lines.append(f"  trivial ceiling  {_interval(top)} by {top['probe']}{origin}{flag}")
    learn = result.learnability[result.learnability["task_type"] == ALL].iloc[0]
    lines.append(f"  learnability     {c['base_policy']}, k={c['k']}: "
                 f"{_pct(learn['zero_gradient'])} of (task, eval seed) groups give zero GRPO "
                 f"gradient ({_pct(learn['all_fail'])} all fail, {_pct(learn['all_succeed'])} "
                 f"all succeed); pass@{c['k']} {_pct(learn['pass_at_k'])}")
    greedy = c.get("greedy_policy") or "pass@1"
    lines.append(f"  headroom         pass@{c['k']} - {greedy}: {100 * s['headroom']:+.1f} points")
    if s["n_flaky"]:
        lines.append(f"  grader           FLAKY: {s['n_flaky']} of {s['n_regraded']} re-graded "
                     "trajectories did not reproduce their rewards")
    else:
        lines.append(f"  grader           deterministic on {s['n_regraded']} re-graded "
                     f"trajectories ({c['regrades']} re-grades each)")
    exploits = overall[overall["kind"] == "exploit"]
    if exploits.empty:
        lines.append("  exploits         none declared by the suite")
    for row in exploits.itertuples():
        lines.append(f"  exploit          {row.probe}: {_pct(row.success)} (ceiling "
                     f"{_pct(s['ceiling'])})")
    lines += _forgery_lines(result)
    lines += [f"  note: {note}" for note in result.notes]
    return lines


def _forgery_lines(result: AuditResult) -> list[str]:
    """How many tasks the forgery probes forged, and which (none when not declared)."""
    forgery = result.forgery
    if forgery.empty:
        return []
    forged = forgery[forgery["forgeable"].astype(bool)]
    line = (f"  forgery          {len(forged)} of {len(forgery)} tasks forgeable (a forgery "
            "probe changed the verdict)")
    if len(forged):
        line += ": " + ", ".join(f"{r.task_id} ({r.probes})" for r in forged.itertuples())
    return [line]


def _task_lists(result: AuditResult) -> list[str]:
    """The tasks the oracle failed and, apart, those whose environment did not build."""
    lines = []
    if len(result.oracle_failures):
        lines.append(f"  oracle failed    {len(result.oracle_failures)} tasks: "
                     + ", ".join(result.oracle_failures["task_id"]))
    if len(result.unbuilt):
        lines.append(f"  not built        {len(result.unbuilt)} tasks' environment did not build "
                     "(not oracle failures, left out of every rate): "
                     + ", ".join(result.unbuilt["task_id"]))
    return lines


def one_line(result: AuditResult) -> str:
    """One line per audit, for the quickstart."""
    s = result.summary
    flagged = ", ".join(s["flagged_types"]) or "none"
    origin = f", {GENERATED_NOTE}" if generated_records(result.suite) else ""
    return (f"audit {result.suite}: oracle {_pct(s['oracle_success'])}, trivial ceiling "
            f"{_pct(s['ceiling'])} ({s['ceiling_probe']}{origin}; flagged task types: "
            f"{flagged}), "
            f"zero-gradient {_pct(s['zero_gradient'])} for {result.config['base_policy']} "
            f"k={result.config['k']}, {s['n_flaky']} flaky of {s['n_regraded']} re-graded")
