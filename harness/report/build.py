"""`build_report`: one folder with tables (Markdown + LaTeX), figures (PDF + PNG), the
leaderboard page and provenance, all from the results store.

Layout of ``OUT``: ``index.html`` (the page), ``README.md`` (every Markdown table, the
figures, provenance), ``tables/NAME.md``, ``tables/NAME.tex``, ``tables/tables.tex`` (a
compilable document inputting every table), ``figures/NAME.pdf|png`` (learning curves too when
the store holds training metrics; 7 in wide, for two columns) and ``figures/column/NAME.pdf|png``
(3.5 in, for one column, where the figure fits a page), ``provenance.json``.
Episodes of audit runs (run ids ``audit-...``) feed the audit tables, not the leaderboard,
unless run ids are selected explicitly.
"""

from __future__ import annotations

import json
import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from harness.audit.records import latest_audits, load_audits
from harness.core import HarnessError
from harness.records import EpisodeKey
from harness.report import figures as fig
from harness.report.abstention import abstention_report_tables
from harness.report.compaction import budget_rows, policy_budgets
from harness.report.scope import scope_report_tables, with_scope
from harness.report import table_builders as tb
from harness.report.page import Trajectory, anchor, page_html
from harness.report.provenance import provenance_comment, report_provenance
from harness.report.ranking import rank_policies
from harness.report.tables import Table, latex_document, to_latex, to_markdown
from harness.report.leaderboard import AUDIT_RUN_PREFIX
from harness.store import Store
from harness.train.metrics_table import load_train_metrics

__all__ = ["ReportOptions", "ReportSummary", "build_report", "AUDIT_RUN_PREFIX"]

log = logging.getLogger(__name__)



@dataclass(frozen=True)
class ReportOptions:
    """Choices of `build_report`. `split`: the split the paper tables and figures use
    (default ``test`` when present, else the first); the page shows every split."""

    run_ids: tuple[str, ...] | None = None
    split: str | None = None
    alpha: float = 0.05
    margin: float | None = 0.05
    max_compare: int = 3
    figures: bool = True
    trajectories_per_pair: int = 2
    max_steps_shown: int = 30
    max_observation_chars: int = 400
    title: str = "Agent RL Harness leaderboard"


@dataclass(frozen=True)
class ReportSummary:
    out: Path
    page: Path
    files: tuple[Path, ...]
    n_episodes: int
    n_policies: int
    n_suites: int
    split: str | None
    n_audits: int
    computes: tuple[str, ...] = ()
    """The machines the runs' figures came from (`harness.compute`), one line each."""


def _load(store: Store, options: ReportOptions) -> pd.DataFrame:
    frame = store.load_episodes(run_id=list(options.run_ids) if options.run_ids else None)
    if options.run_ids is None:
        frame = frame[~frame["run_id"].str.startswith(AUDIT_RUN_PREFIX)]
    return frame.reset_index(drop=True)


def _split(frame: pd.DataFrame, wanted: str | None) -> str | None:
    splits = sorted(frame["split"].unique())
    if wanted is not None:
        if wanted not in splits:
            raise HarnessError(f"no episodes of split {wanted!r} in the store (present: "
                               f"{', '.join(splits) or 'none'})")
        return wanted
    if not splits:
        return None
    return "test" if "test" in splits else splits[0]


def _trajectories(store: Store, frame: pd.DataFrame, options: ReportOptions) -> list[Trajectory]:
    """Per (policy, suite): the first success and the first failure (stored key order)."""
    picked = []
    ok = frame[frame["status"] == "ok"].sort_values(["policy", "suite", "task_id", "eval_seed",
                                                     "sample"])
    for (policy, suite), rows in ok.groupby(["policy", "suite"], sort=True):
        chosen = pd.concat([rows[rows["success"]].head(1), rows[~rows["success"]].head(1)])
        for row in chosen.head(options.trajectories_per_pair).itertuples():
            key = EpisodeKey(row.policy, row.suite, row.task_id, int(row.eval_seed),
                             int(row.sample))
            try:
                steps = store.load_steps(row.run_id, key)
            except HarnessError:
                continue
            shown = tuple((s.t, s.observation[:options.max_observation_chars], s.action,
                           float(s.reward)) for s in steps[:options.max_steps_shown])
            picked.append(Trajectory(anchor("trajectory", policy, suite, row.task_id,
                                            row.eval_seed, row.sample), policy, suite,
                                     row.task_id, int(row.eval_seed), int(row.sample),
                                     bool(row.success), shown,
                                     max(0, len(steps) - options.max_steps_shown)))
    return picked


def _ranked_by_split(frame: pd.DataFrame, options: ReportOptions) -> dict[str, pd.DataFrame]:
    return {split: rank_policies(rows, alpha=options.alpha).assign(split=split)
            for split, rows in frame.groupby("split", sort=True)}


def _page_frames(frame: pd.DataFrame, ranked: dict[str, pd.DataFrame]):
    keys = ["split", "suite", "policy"]
    extra = pd.DataFrame({"errors": (frame["status"] != "ok").groupby(
                              [frame[k] for k in keys]).sum().astype(int),
                          "mean_score": frame.groupby(keys)["score"].mean()}).reset_index()
    details = (frame.groupby(["policy", "suite", "split", "task_type"], sort=True)["success"]
               .agg(success="mean", n="size").reset_index())
    return pd.concat(ranked.values(), ignore_index=True), extra, details


def _episode_tables(frame: pd.DataFrame, ranked: pd.DataFrame, by_type: pd.DataFrame,
                    passk: pd.DataFrame, options: ReportOptions) -> list[Table]:
    tables = [tb.leaderboard_table(ranked, alpha=options.alpha),
              *tb.task_type_tables(by_type, alpha=options.alpha)]
    extra = [tb.pass_at_k_table(passk),
             tb.comparison_table(frame, ranked, max_compare=options.max_compare,
                                 margin=options.margin, alpha=options.alpha)]
    return tables + [t for t in extra if t is not None] + abstention_report_tables(frame)


def _audit_tables(audits) -> list[Table]:
    if not audits:
        return []
    tables = [tb.audit_summary_table(audits)]
    for audit in audits:
        tables += [tb.audit_probe_table(audit), tb.audit_learnability_table(audit)]
        failures = tb.audit_failures_table(audit)
        if failures is not None:
            tables.append(failures)
    return tables


def _write_tables(tables: list[Table], directory: Path, comment: str) -> list[Path]:
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    md_comment = "".join(f"<!-- {line} -->\n" for line in comment.splitlines())
    for table in tables:
        md, tex = directory / f"{table.name}.md", directory / f"{table.name}.tex"
        md.write_text(md_comment + to_markdown(table), encoding="utf-8")
        tex.write_text(to_latex(table, comment=comment), encoding="utf-8")
        written += [md, tex]
    master = directory / "tables.tex"
    master.write_text(latex_document([t.name for t in tables], comment=comment),
                      encoding="utf-8")
    return written + [master]


def _figure_makers(frame, ranked, by_type, passk, train_metrics, budgets=None):
    """``(name, make)`` per figure; ``make(width)`` draws it at ``width`` inches."""
    makers = []
    for suite, rows in (budgets if budgets is not None else pd.DataFrame(
            columns=["suite"])).groupby("suite", sort=True):  # runs at several budgets
        makers.append((f"score-vs-budget-{suite}", lambda w, rows=rows, suite=suite:
                       fig.score_against_budget(rows, f"{suite}: score against context "
                                                "budget", width=w)))
    for suite, rows in ranked.groupby("suite", sort=True):
        makers.append((f"forest-{suite}", lambda w, rows=rows, suite=suite: fig.forest_plot(
            rows, f"{suite}: success rate", width=w)))
        curves = passk[passk["suite"] == suite]
        if not curves.empty:
            makers.append((f"pass-at-k-{suite}", lambda w, c=curves, suite=suite:
                           fig.pass_at_k_curves(c, f"{suite}: pass@k", width=w)))
    order = tb.policy_order(ranked)
    makers.append(("task-types", lambda w: fig.task_type_heatmap(by_type, order, width=w)))
    makers.append(("performance-profile",
                   lambda w: fig.performance_profile(frame, order[:8], width=w)))
    if train_metrics is not None and not train_metrics.empty:
        for metric in ("success", "mean_reward"):
            if metric in train_metrics.columns and train_metrics[metric].notna().any():
                makers.append((f"learning-curves-{metric}", lambda w, m=metric:
                               fig.learning_curves(train_metrics, m, width=w)))
    makers.append(("probability-of-improvement",
                   lambda w: fig.improvement_matrix(frame, order[:12], width=w)[0]))
    return makers


def _write_figures(frame, ranked, by_type, passk, directory: Path,
                   train_metrics: pd.DataFrame | None = None,
                   budgets: pd.DataFrame | None = None) -> list[Path]:
    """Each figure at double-column width (`figures.PAGE_WIDTH`) into ``directory`` and at
    single-column width (`figures.COLUMN_WIDTH`) into ``directory/column`` where it is no
    taller than a page (`figures.PAGE_HEIGHT`)."""
    written: list[Path] = []
    for name, make in _figure_makers(frame, ranked, by_type, passk, train_metrics, budgets):
        try:
            figure = make(fig.PAGE_WIDTH)
        except HarnessError as exc:
            log.warning("no %s figure: %s", name, exc)
            continue
        written += fig.save_figure(figure, directory, name)
        narrow = make(fig.COLUMN_WIDTH)
        if narrow.get_size_inches()[1] <= fig.PAGE_HEIGHT:
            written += fig.save_figure(narrow, directory / "column", name)
        else:
            log.info("%s: %.1f in tall at column width, taller than a page; only the "
                     "double-column figure is written", name, narrow.get_size_inches()[1])
    return written


def _readme(tables: list[Table], figure_files: list[Path], provenance: dict[str, Any],
            out: Path) -> str:
    parts = [f"# Report\n\nRegenerate with `{provenance['command']}` (code version "
             f"{provenance['code_version']}; {provenance['episodes']} episodes from "
             f"{len(provenance['runs'])} runs; see provenance.json).\n",
             "Open `index.html` for the sortable leaderboard.\n"]
    parts += [to_markdown(t) for t in tables]
    pngs = [p for p in figure_files if p.suffix == ".png" and p.parent.name != "column"]
    if pngs:
        parts.append("## Figures\n\n" + "\n".join(
            f"![{p.stem}]({p.relative_to(out).as_posix()})" for p in pngs) + "\n")
    return "\n".join(parts)


def _empty_page_frames():
    return (pd.DataFrame(columns=["suite", "split", "policy", "n", "success", "low", "high",
                                  "best", "separable"]),
            pd.DataFrame(columns=["split", "suite", "policy", "errors", "mean_score"]),
            pd.DataFrame(columns=["policy", "suite", "split", "task_type", "success", "n"]))


def _write_page(out: Path, frame, ranked, audit_tables, trajectories, provenance,
                options: ReportOptions) -> Path:
    frames = _page_frames(frame, ranked) if not frame.empty else _empty_page_frames()
    page = out / "index.html"
    page.write_text(page_html(title=options.title, ranked=frames[0], extra=frames[1],
                              details=frames[2], audit_tables=audit_tables,
                              trajectories=trajectories, provenance=provenance),
                    encoding="utf-8")
    return page


def build_report(db: str | os.PathLike, out: str | os.PathLike, *, command: str,
                 options: ReportOptions = ReportOptions()) -> ReportSummary:
    """Write the report of ``db`` into ``out`` (see the module docstring). ``command`` is the
    exact command that regenerates it (recorded in the provenance)."""
    if not Path(db).exists():
        raise HarnessError(f"no results database at {db}; run `harness run` first")
    out = Path(out)
    with Store(db, readonly=True) as store:
        frame = _load(store, options)
        audits = latest_audits(load_audits(db))
        if frame.empty and not audits:
            raise HarnessError(f"{db} holds no episodes and no audits to report")
        split = _split(frame, options.split)
        paper = frame[frame["split"] == split] if split else frame
        provenance = report_provenance(
            store, frame, command=command, audit_ids=[a.audit_id for a in audits],
            audit_run_ids=[r for a in audits for r in a.run_ids], db=db)
        train_metrics = load_train_metrics(  # training logs, if any
            store, run_id=list(options.run_ids) if options.run_ids else None)
        ranked = _ranked_by_split(frame, options)
        tables: list[Table] = []
        if not paper.empty:
            by_type = rank_policies(paper, by_task_type=True, alpha=options.alpha)
            passk = tb.pass_at_k_summary(paper)
            tables = _episode_tables(paper, ranked[split], by_type, passk, options)
            tables += scope_report_tables(with_scope(store, paper))
        audit_tables = _audit_tables(audits)
        tables += audit_tables
        files = _write_tables(tables, out / "tables", provenance_comment(provenance))
        trajectories = _trajectories(store, frame, options) if not frame.empty else []
        budgets = budget_rows(paper, policy_budgets(store, paper["policy"].unique())) \
            if not paper.empty else None
    figure_files = (_write_figures(paper, ranked[split], by_type, passk, out / "figures",
                                   train_metrics, budgets)
                    if options.figures and not paper.empty else [])
    page = _write_page(out, frame, ranked, audit_tables, trajectories, provenance, options)
    (out / "provenance.json").write_text(json.dumps(provenance, indent=1, sort_keys=True) + "\n",
                                         encoding="utf-8")
    (out / "README.md").write_text(_readme(tables, figure_files, provenance, out),
                                   encoding="utf-8")
    files += [*figure_files, page, out / "provenance.json", out / "README.md"]
    computes = tuple(sorted({r["packages"]["compute"] for r in provenance["runs"]
                             if r.get("packages", {}).get("compute")}))
    return ReportSummary(out, page, tuple(files), len(frame), int(frame["policy"].nunique()),
                         int(frame["suite"].nunique()), split, len(audits), computes)
