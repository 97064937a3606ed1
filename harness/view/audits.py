"""The viewer's audits page: every audit `harness audit` stored (the latest per suite and
split), read back with the audit package's own record functions and shown as the CLI shows
it (`harness.audit.text.summary_lines`), then its tables with a link to the episodes behind
each number.

An audit plays two runs (`harness.audit.auditor`): the *base run* (the base policy, k samples
per task: learnability and headroom) and the *probe run* (trivial probes, the oracle, the
suite's exploits, the greedy policy: the ceilings). Each rate links to its probe's episodes of
that task type in the probe run (its successes, its failures); each learnability row to the
base policy's episodes of that task type; each oracle failure to the oracle's episodes of that
task; each flaky trajectory to its episode.
"""

from __future__ import annotations

from collections.abc import Sequence

from harness.audit.result import AuditResult
from harness.audit.ceilings import ALL
from harness.audit.records import latest_audits, result_from_dict
from harness.audit.tables import load_audit_rows
from harness.audit.text import summary_lines
from harness.core import HarnessError
from harness.store import Store
from harness.view.html import esc, link, table, url

__all__ = ["stored_audits", "audits_page"]


def stored_audits(store: Store) -> tuple[list[AuditResult], list[str]]:
    """The latest stored audit per (suite, split), and one line per stored audit that this
    harness cannot read (an older record version)."""
    results, unreadable = [], []
    for row in load_audit_rows(store):
        try:
            results.append(result_from_dict(row["result"]))
        except HarnessError as exc:
            unreadable.append(f"{row['audit_id']}: {exc}")
    return latest_audits(results), unreadable


def _episodes(run: str, label: str, **filters: object) -> str:
    return link(url("/episodes", run=run, **filters), label, **{"class": "audit-link"})


def _task_type(task_type: str) -> str:
    return "" if task_type == ALL else task_type


def _pct(value: float) -> str:
    return "—" if value != value else f"{100 * value:.1f}"


def _rates(audit: AuditResult, probe_run: str) -> str:
    rows = []
    for r in audit.rates.itertuples():
        where = dict(policy=r.policy, task_type=_task_type(r.task_type))
        rows.append([esc(r.probe), esc(r.kind), esc(r.task_type),
                     _episodes(probe_run, str(r.n), **where),
                     _episodes(probe_run, str(r.successes), **where, success="1"),
                     _pct(r.success), f"[{_pct(r.low)}, {_pct(r.high)}]"])
    return table(["probe", "kind", "task type", "episodes", "successes", "success %",
                  "95% CI (Wilson)"], rows, id=f"rates-{audit.audit_id}", cls="rates")


def _ceiling(audit: AuditResult, probe_run: str) -> str:
    policy = dict(zip(audit.rates["probe"], audit.rates["policy"]))
    rows = []
    for r in audit.ceiling.itertuples():
        where = dict(policy=policy.get(r.probe, ""), task_type=_task_type(r.task_type))
        mark = "FLAGGED" + (" (significant)" if r.significant else "") if r.flagged else ""
        rows.append([esc(r.task_type), esc(r.probe),
                     _episodes(probe_run, f"{_pct(r.success)}% of {r.n}", **where,
                               success="1"),
                     f"[{_pct(r.low)}, {_pct(r.high)}]", mark])
    return table(["task type", "best trivial probe", "success (its successes)",
                  "95% CI (Wilson)", f"above {_pct(audit.config['threshold'])}%"], rows,
                 id=f"ceiling-{audit.audit_id}", cls="ceiling")


def _learnability(audit: AuditResult, base_run: str) -> str:
    base = audit.config["base_policy"]
    headroom = {r.task_type: r for r in audit.headroom.itertuples()}
    rows = []
    for r in audit.learnability.itertuples():
        where = dict(policy=base, task_type=_task_type(r.task_type))
        room = headroom.get(r.task_type)
        rows.append([esc(r.task_type), _episodes(base_run, f"{r.n_groups} groups", **where),
                     _pct(r.zero_gradient), _pct(r.all_fail), _pct(r.all_succeed),
                     _pct(r.pass_at_k),
                     "—" if room is None else f"{100 * room.headroom:+.1f}"])
    return table(["task type", f"{base} episodes (k={audit.config['k']})", "zero gradient %",
                  "all fail %", "all succeed %", f"pass@{audit.config['k']} %",
                  "headroom (points)"], rows, id=f"learnability-{audit.audit_id}",
                 cls="learnability")


def _oracle_failures(audit: AuditResult, probe_run: str) -> str:
    oracle = audit.rates.loc[audit.rates["kind"] == "oracle", "policy"]
    if audit.oracle_failures.empty or oracle.empty:
        return ""
    rows = [[_episodes(probe_run, r.task_id, policy=oracle.iloc[0], task=r.task_id),
             esc(r.task_type), f"{r.successes} of {r.n}", esc(r.verdict)]
            for r in audit.oracle_failures.itertuples()]
    return "<h3>Tasks the oracle failed</h3>" + table(
        ["task", "task type", "oracle successes", "verdict"], rows,
        id=f"oracle-failures-{audit.audit_id}")


def _flaky(audit: AuditResult) -> str:
    if audit.flaky.empty:
        return ""
    rows = [[link(url("/episode", run=r.run_id, policy=r.policy, suite=audit.suite,
                      task=r.task_id, seed=int(r.eval_seed), sample=int(r.sample)),
                  f"{r.task_id} / seed {int(r.eval_seed)} / sample {int(r.sample)}"),
             esc(r.policy), esc(r.detail)] for r in audit.flaky.itertuples()]
    return "<h3>Trajectories whose rewards did not reproduce</h3>" + table(
        ["episode", "policy", "what differed"], rows, id=f"flaky-{audit.audit_id}")


def _audit(audit: AuditResult) -> str:
    base_run, probe_run = audit.run_ids
    summary = "\n".join(summary_lines(audit))
    exploits = audit.rates[audit.rates["kind"] == "exploit"]
    exploit_line = ("" if exploits.empty else
                    "<p>Exploit probes: " + ", ".join(
                        _episodes(probe_run, f"{r.probe} {_pct(r.success)}%", policy=r.policy,
                                  success="1")
                        for r in exploits[exploits["task_type"] == ALL].itertuples()) + "</p>")
    return (f'<section class="audit" id="{esc(audit.audit_id)}"><h2>{esc(audit.suite)} '
            f"({esc(audit.split)} split)</h2>"
            f'<pre class="text summary">{esc(summary)}</pre>'
            f"<p>runs: {_episodes(base_run, base_run)} (base policy) · "
            f"{_episodes(probe_run, probe_run)} (probes)</p>{exploit_line}"
            f"<h3>Trivial ceiling per task type</h3>{_ceiling(audit, probe_run)}"
            f"<h3>Learnability and headroom</h3>{_learnability(audit, base_run)}"
            f"<h3>Every probe's success</h3>{_rates(audit, probe_run)}"
            f"{_oracle_failures(audit, probe_run)}{_flaky(audit)}</section>")


def audits_page(audits: Sequence[AuditResult], unreadable: Sequence[str] = ()) -> str:
    notes = "".join(f'<p class="notes">cannot read audit {esc(line)}</p>' for line in unreadable)
    if not audits:
        return notes + ("<p>No audit stored: <code>harness audit SUITE --db …</code> measures "
                        "a suite's ceilings, exploit probes and zero-gradient task types and "
                        "stores them here.</p>")
    index = "<ul>" + "".join(f'<li>{link("#" + a.audit_id, f"{a.suite} ({a.split})")}</li>'
                             for a in audits) + "</ul>"
    return notes + index + "".join(_audit(a) for a in audits)

