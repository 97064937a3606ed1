"""`harness study report`: the study's folder of tables, figures and a methods paragraph.

Files: ``verdicts.md`` / ``verdicts.tex`` (every comparison: estimate, t interval, bootstrap
interval, adjusted p, verdict, minimum detectable effect), ``verdicts.csv``,
``headroom.csv`` and ``headroom.md`` (the headroom association per arm), ``grafting.md`` /
``grafting.tex`` (each graft against its target and its source), ``merging.md`` /
``merging.tex`` (each merge against its baseline and the other merges), ``geometry.md`` and
``geometry-*.csv`` (the merged models' task vectors against a floor and a ceiling),
``weights.csv`` and
``weights.md`` (per parameter group, the change from the start and the effective rank of the
deltas, over saved steps), ``forest.png``
(every comparison's effect and interval, coloured by verdict), ``heatmap-<mode>.png`` (the
estimate over the first two factors), ``headroom.png`` (per-task headroom of the baseline vs
the arm's gain), ``methods.md`` (design, seeds, tests, correction and the machine, generated
from the study file) and ``report.md`` (all of it).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from harness.study.analysis import StudyAnalysis
from harness.study.config import StudyConfig
from harness.compute import describe_compute

__all__ = ["write_report", "methods_paragraph", "verdict_table", "grafting_table",
           "merging_table", "weights_summary"]

COLOURS = {"better": "#1b7837", "worse": "#b2182b", "equivalent": "#2166ac",
           "inconclusive": "#777777"}


def verdict_table(cells: pd.DataFrame) -> pd.DataFrame:
    """The columns a reader needs, rounded for print."""
    table = pd.DataFrame({
        "arm": cells["arm"], "mode": cells["mode"], "role": cells["role"],
        "vs": cells["baseline"],
        "effect": cells["estimate"].map("{:+.3f}".format),
        "interval": [f"[{lo:+.3f}, {hi:+.3f}]" for lo, hi in zip(cells["low"], cells["high"])],
        "bootstrap": [f"[{lo:+.3f}, {hi:+.3f}]"
                      for lo, hi in zip(cells["boot_low"], cells["boot_high"])],
        "p adj": cells["p_adjusted"].map("{:.3g}".format),
        "verdict": cells["verdict"],
        "MDE": cells["mde"].map(lambda mde: "no variation" if pd.isna(mde) else f"{mde:.3f}"),
    })
    return table


def grafting_table(study: StudyConfig, cells: pd.DataFrame) -> pd.DataFrame:
    """Per graft arm and decoding: the groups taken, its effect against its target (the start)
    and against its source (the trained model), each with its t interval and verdict."""
    rows = []
    for graft in study.grafts:
        for mode in cells["mode"].unique():
            mine = cells[(cells["arm"] == graft.name) & (cells["mode"] == mode)]
            if mine.empty:
                continue
            row = {"graft": graft.name, "groups": " ".join(graft.groups),
                   "source": graft.source, "mode": mode}
            for role, label in (("graft", "vs target"), ("graft-vs-source", "vs source")):
                found = mine[mine["role"] == role]
                if found.empty:
                    continue
                c = found.iloc[0]
                row[label] = (f"{c['estimate']:+.3f} [{c['low']:+.3f}, {c['high']:+.3f}] "
                              f"{c['verdict']}")
            rows.append(row)
    return pd.DataFrame(rows)


def merging_table(study: StudyConfig, cells: pd.DataFrame) -> pd.DataFrame:
    """Per merge arm, decoding and comparison (its baseline, e.g. the joint model, then every
    later merge): the effect with its t interval, the TOST p against the margin and the
    verdict."""
    names = {m.name: m for m in study.merges}
    rows = cells[cells["arm"].isin(names) & cells["role"].isin(["merge", "merge-vs-merge"])]
    return pd.DataFrame([{
        "merge": c["arm"], "method": names[c["arm"]].method, "mode": c["mode"],
        "vs": c["baseline"], "effect": f"{c['estimate']:+.3f}",
        "interval": f"[{c['low']:+.3f}, {c['high']:+.3f}]", "TOST p": f"{c['tost_p']:.3g}",
        "verdict": c["verdict"]} for _, c in rows.iterrows()])


def weights_summary(changes: pd.DataFrame) -> pd.DataFrame:
    """`study_weight_changes` at each arm's last step, averaged over training seeds: per
    (arm, group) the relative change and the delta's effective rank."""
    last = changes[changes["step"] == changes.groupby("arm")["step"].transform("max")]
    table = last.groupby(["arm", "group"], as_index=False)[["relative", "delta_rank"]].mean()
    table.insert(1, "step", table["arm"].map(last.groupby("arm")["step"].max()))
    return table.round({"relative": 4, "delta_rank": 2})


def markdown_table(frame: pd.DataFrame) -> str:
    """A GitHub-flavoured Markdown table of ``frame`` (cells as ``str``, pipes escaped)."""
    def cell(value) -> str:
        return str(value).replace("|", "\\|")

    lines = ["| " + " | ".join(cell(c) for c in frame.columns) + " |",
             "|" + "|".join("---" for _ in frame.columns) + "|"]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |"
              for row in frame.itertuples(index=False)]
    return "\n".join(lines)


def latex_table(frame: pd.DataFrame) -> str:
    """A booktabs ``tabular`` of ``frame`` with LaTeX special characters escaped."""
    from harness.report.tables import latex_escape

    head = " & ".join(latex_escape(str(c)) for c in frame.columns) + r" \\"
    body = [" & ".join(latex_escape(str(v)) for v in row) + r" \\"
            for row in frame.itertuples(index=False)]
    return "\n".join([r"\begin{tabular}{" + "l" * frame.shape[1] + "}", r"\toprule", head,
                      r"\midrule", *body, r"\bottomrule", r"\end{tabular}", ""])


def methods_paragraph(study: StudyConfig, analysis: StudyAnalysis, compute: list[str]) -> str:
    """A paragraph a paper can cite, generated from the study file and the data."""
    arms = study.arms_resolved()
    cells = [a for a in arms if a.role == "cell"]
    e, a = study.eval, study.analysis
    factors = "; ".join(f"{k} ∈ {{{', '.join(str(v) for v in levels)}}}"
                        for k, levels in study.factors.items()) or "none"
    controls = [x for x in arms if x.role == "positive_control"]
    modes = " and ".join(m for m, on in (("greedy", e.greedy), ("sampled", bool(e.samples)))
                         if on)
    text = (
        f"Study `{study.name}`: {len(cells)} recipe cells ({factors}; "
        f"{'listed combinations' if study.cells else 'full factorial'}), each trained with "
        f"{len(study.seeds)} training seeds ({', '.join(map(str, study.seeds))}), compared with "
        f"the baseline arm `{a.baseline}`. Every model was evaluated {modes} "
        f"({e.samples} samples per task and evaluation seed when sampled) on the first "
        f"{e.n_tasks} tasks of the {e.split} split with {len(e.eval_seeds)} evaluation seeds, "
        "the same tasks and environment seeds for every model (paired). Per cell, the mean "
        f"paired difference in {a.metric} was tested with a two-way crossed random-effects "
        "model (training seeds x evaluation seeds, tasks fixed; ANOVA moment estimates, "
        "Satterthwaite degrees of freedom); a hierarchical bootstrap over training-seed "
        "effects and tasks gives a second interval. p-values were adjusted across cells "
        f"({a.multiplicity}, alpha = {a.alpha:g}) separately for each decoding; equivalence "
        f"was tested by TOST against a margin of ±{a.margin:g}, adjusted the same way, and "
        "not claimed where both arms scored one same value on every episode (no variation). "
        f"Minimum detectable effects are stated at power {a.power:g} for the level of Holm's "
        f"first step (alpha / {len(cells)})."
    )
    if controls:
        text += (" Positive control(s): " + ", ".join(f"`{c.name}` vs `{c.baseline}` on "
                 f"{c.recipe.suite}" for c in controls) + ", each a single pre-declared test.")
    if study.grafts:
        text += (f" Grafts: {len(study.grafts)} parameter-group grafts, each compared with its "
                 f"target and its source; these {2 * len(study.grafts)} comparisons were "
                 f"adjusted as one family ({a.multiplicity}) per decoding.")
    if a.headroom_k:
        text += (f" Headroom is the baseline's pass@{a.headroom_k} (unbiased estimator) minus "
                 "its greedy success per task; its association with a cell's per-task gain is "
                 "Spearman's rho with a task-bootstrap interval.")
    if compute:
        text += " Compute: " + "; ".join(sorted(set(compute))) + "."
    return text


def _forest(cells: pd.DataFrame, path: Path) -> None:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    rows = cells.reset_index(drop=True)
    fig = Figure(figsize=(7, 0.35 * len(rows) + 1.2))
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    y = np.arange(len(rows))[::-1]
    for yi, (_, r) in zip(y, rows.iterrows()):
        colour = COLOURS.get(r["verdict"], "#000000")
        ax.plot([r["low"], r["high"]], [yi, yi], color=colour, lw=2)
        ax.plot([r["estimate"]], [yi], "o", color=colour)
    ax.axvline(0, color="black", lw=0.8)
    ax.set_yticks(y, [f"{r.arm} ({r.mode}): {r.verdict}" for r in rows.itertuples()],
                  fontsize=7)
    ax.set_xlabel("paired difference vs baseline")
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def _heatmap(cells: pd.DataFrame, factors: list[str], mode: str, path: Path) -> bool:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    rows = cells[(cells["mode"] == mode) & (cells["role"] == "cell")]
    columns = [f"factor:{f}" for f in factors[:2]]
    if len(columns) < 2 or rows.empty or not all(c in rows for c in columns):
        return False
    grid = rows.pivot_table(index=columns[0], columns=columns[1], values="estimate",
                            aggfunc="mean")
    fig = Figure(figsize=(5, 4))
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    limit = float(np.nanmax(np.abs(grid.to_numpy()))) or 1.0
    image = ax.imshow(grid.to_numpy(), cmap="RdBu", vmin=-limit, vmax=limit)
    ax.set_xticks(range(grid.shape[1]), [str(c) for c in grid.columns])
    ax.set_yticks(range(grid.shape[0]), [str(i) for i in grid.index])
    ax.set_xlabel(factors[1])
    ax.set_ylabel(factors[0])
    ax.set_title(f"mean effect ({mode}, averaged over other factors)", fontsize=9)
    fig.colorbar(image)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    return True


def _scatter(headroom: pd.DataFrame, path: Path) -> None:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(5, 4))
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    for arm, rows in headroom.groupby("arm"):
        ax.scatter(rows["headroom"], rows["gain"], s=10, label=str(arm))
    ax.axhline(0, color="black", lw=0.6)
    ax.set_xlabel("baseline headroom: pass@k - greedy (per task)")
    ax.set_ylabel("greedy gain of the arm (per task)")
    if headroom["arm"].nunique() <= 8:
        ax.legend(fontsize=6)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def _geometry(study: StudyConfig, out: Path) -> list[str]:
    from harness.study.merge_geometry import geometry_summary, study_geometry

    geometry = study_geometry(study)
    if geometry is None:
        return []
    for name in ("cosine", "jaccard", "overlap"):
        getattr(geometry, name).to_csv(out / f"geometry-{name}.csv", index=False)
    summary = geometry_summary(geometry)
    (out / "geometry.md").write_text(markdown_table(summary) + "\n")
    return ["## Task-vector geometry", "", f"The sources of merge {study.merges[0].name!r} "
            "(first training seed) against a floor (two sources at different seeds) and a "
            "ceiling (two saved steps of one run); per group, per layer and RAM's overlap in "
            "geometry-*.csv.", "", markdown_table(summary), ""]


def _grafts_and_weights(study: StudyConfig, cells: pd.DataFrame, out: Path) -> list[str]:
    """The grafting table and the weight changes (files and report sections)."""
    from harness.study.weight_changes import study_weight_changes

    parts: list[str] = []
    grafts = grafting_table(study, cells) if study.grafts and len(cells) else pd.DataFrame()
    if len(grafts):
        (out / "grafting.md").write_text(markdown_table(grafts) + "\n")
        (out / "grafting.tex").write_text(latex_table(grafts))
        parts += ["## Grafting", "", "Each graft is the target's model with the listed "
                  "parameter groups of the source's (same training seed), compared with both; "
                  "the grafts' comparisons are one family, adjusted together.",
                  "", markdown_table(grafts), ""]
    merges = merging_table(study, cells) if study.merges and len(cells) else pd.DataFrame()
    if len(merges):
        (out / "merging.md").write_text(markdown_table(merges) + "\n")
        (out / "merging.tex").write_text(latex_table(merges))
        parts += ["## Merging", "", f"Each merge against its baseline and against every other "
                  f"merge (paired by training seed; equivalence margin "
                  f"{study.analysis.margin:g}).", "", markdown_table(merges), ""]
    parts += _geometry(study, out)
    changes = study_weight_changes(study)
    if len(changes):
        changes.to_csv(out / "weights.csv", index=False)
        summary = weights_summary(changes)
        (out / "weights.md").write_text(markdown_table(summary) + "\n")
        parts += ["## Weight changes", "", "Relative change ||trained - start|| / ||start|| "
                  "per parameter group at the last step, and the mean entropy-based effective "
                  "rank of the group's weight deltas (training seeds averaged; every saved "
                  "step in weights.csv).", "", markdown_table(summary), ""]
    return parts


def write_report(study: StudyConfig, analysis: StudyAnalysis, out: str | Path, *,
                 jobs: pd.DataFrame | None = None) -> Path:
    """Write the study's folder (see module); returns the path of ``report.md``."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    cells = analysis.cells
    table = verdict_table(cells)
    cells.to_csv(out / "verdicts.csv", index=False)
    (out / "verdicts.md").write_text(markdown_table(table) + "\n")
    (out / "verdicts.tex").write_text(latex_table(table))
    compute = ([describe_compute(json.loads(c)) for c in jobs["compute"]]
               if jobs is not None and len(jobs) else [])
    methods = methods_paragraph(study, analysis, compute)
    (out / "methods.md").write_text(methods + "\n")
    _forest(cells, out / "forest.png")
    parts = [f"# Study {study.name}", "", "## Verdicts", ""]
    parts += [f"Rule ({mode}): {rule}" for mode, rule in analysis.rules.items()] + [""]
    parts += [markdown_table(table), "", "![forest](forest.png)", ""]
    for mode in analysis.rules:
        if _heatmap(cells, list(study.factors), mode, out / f"heatmap-{mode}.png"):
            parts += [f"![heatmap {mode}](heatmap-{mode}.png)", ""]
    if analysis.association is not None and len(analysis.association):
        analysis.headroom.to_csv(out / "headroom.csv", index=False)
        association = analysis.association.round(3)
        (out / "headroom.md").write_text(markdown_table(association) + "\n")
        _scatter(analysis.headroom, out / "headroom.png")
        parts += ["## Headroom", "", markdown_table(association), "",
                  "![headroom](headroom.png)", ""]
    parts += _grafts_and_weights(study, cells, out)
    if jobs is not None and len(jobs):
        wall = jobs.groupby("job")["wall_s"].sum()
        parts += ["## Compute", "", "; ".join(f"{k}: {v:.0f} s" for k, v in wall.items()), ""]
    parts += ["## Methods", "", methods, ""]
    path = out / "report.md"
    path.write_text("\n".join(parts))
    return path
