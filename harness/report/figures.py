"""Figures for papers (PDF, fonts embedded as TrueType: ``pdf.fonttype = 42``) and the web
(PNG), in the Okabe-Ito colour-blind-safe palette (Okabe & Ito 2008) and the perceptually
uniform ``cividis`` / colour-blind-safe diverging ``PuOr`` colour maps.

Figures use matplotlib's object API (`matplotlib.figure.Figure`, no pyplot state) and are
saved without creation dates, so the same data gives the same files.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import matplotlib
import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from harness.stats.arrays import outcome_tensor
from harness.stats.estimators import probability_of_improvement

__all__ = ["OKABE_ITO", "STYLE", "forest_plot", "task_type_heatmap", "performance_profile",
           "pass_at_k_curves", "improvement_matrix", "learning_curves", "save_figure"]

OKABE_ITO = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442",
             "#000000")
"""Okabe & Ito's palette: blue, orange, bluish green, reddish purple, sky blue, vermillion,
yellow, black."""
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")
STYLE = {"pdf.fonttype": 42, "ps.fonttype": 42, "font.family": "DejaVu Sans",
         "font.size": 9, "axes.spines.top": False, "axes.spines.right": False,
         "axes.prop_cycle": matplotlib.cycler(color=OKABE_ITO), "svg.hashsalt": "harness",
         "figure.dpi": 100}


def _style(index: int) -> dict:
    return {"color": OKABE_ITO[index % len(OKABE_ITO)],
            "marker": MARKERS[(index // len(OKABE_ITO)) % len(MARKERS)]}


def save_figure(figure: Figure, directory: str | Path, name: str, *,
                dpi: int = 120) -> list[Path]:
    """Write ``name.pdf`` and ``name.png`` into ``directory``; returns both paths."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    paths = [directory / f"{name}.pdf", directory / f"{name}.png"]
    with matplotlib.rc_context(STYLE):
        figure.savefig(paths[0], metadata={"CreationDate": None, "Producer": "harness"})
        figure.set_layout_engine("none")  # keep the layout the PDF computed: one pass, not two
        figure.savefig(paths[1], dpi=dpi, metadata={"Software": None})
    return paths


def _figure(width: float, height: float) -> Figure:
    with matplotlib.rc_context(STYLE):
        return Figure(figsize=(width, height), layout="constrained")


def forest_plot(rows: pd.DataFrame, title: str) -> Figure:
    """Success with 95% intervals per policy (`ranking.rank_policies` rows of one group):
    best in orange, not separable from it in sky blue, the rest in blue."""
    rows = rows.sort_values(["success", "policy"], ascending=[True, False])
    with matplotlib.rc_context(STYLE):
        figure = _figure(5.0, 0.8 + 0.22 * len(rows))
        axes = figure.add_subplot()
        y = np.arange(len(rows))
        status = np.where(rows["best"], 1, np.where(
            [s is not None and s == s and not s for s in rows["separable"]], 4, 0))
        labels = {1: "best", 4: "not separable from best (Holm)", 0: "separable"}
        for code in (0, 4, 1):
            mask = status == code
            if not mask.any():
                continue
            r = rows[mask]
            below = np.clip(r["success"] - r["low"], 0, None)  # Wilson ends may round past
            above = np.clip(r["high"] - r["success"], 0, None)  # the estimate by 1e-17
            axes.errorbar(100 * r["success"], y[mask], xerr=[100 * below, 100 * above],
                          fmt="o", color=OKABE_ITO[code], ecolor=OKABE_ITO[code], capsize=2,
                          markersize=4, label=labels[code])
        axes.set_yticks(y, rows["policy"])
        axes.set_xlim(-2, 102)
        axes.set_xlabel("success rate (%), Wilson 95% interval")
        axes.set_title(title)
        axes.legend(loc="lower right", fontsize=7, frameon=False)
    return figure


def task_type_heatmap(rows: pd.DataFrame, order: Sequence[str]) -> Figure:
    """Success in percent (``cividis``) of policies (in ``order``, top to bottom) on every
    (suite, task type), one column per task type grouped by suite
    (`ranking.rank_policies(by_task_type=True)` rows)."""
    columns = sorted({(r.suite, r.task_type) for r in rows.itertuples()})
    grid = rows.pivot_table(index="policy", columns=["suite", "task_type"], values="success",
                            aggfunc="first")
    values = 100 * grid.reindex(index=list(order), columns=pd.MultiIndex.from_tuples(columns)
                                ).to_numpy(dtype=float)
    with matplotlib.rc_context(STYLE):
        figure = _figure(2.2 + 0.32 * len(columns), 1.4 + 0.2 * len(order))
        axes = figure.add_subplot()
        image = axes.imshow(values, cmap="cividis", vmin=0, vmax=100, aspect="auto")
        axes.set_xticks(range(len(columns)), [t for _, t in columns], rotation=60, ha="right",
                        fontsize=7)
        axes.set_yticks(range(len(order)), order, fontsize=7)
        suites = [s for s, _ in columns]
        edges = [i for i in range(1, len(columns)) if suites[i] != suites[i - 1]]
        for edge in edges:
            axes.axvline(edge - 0.5, color="white", linewidth=2)
        starts = [0, *edges]
        for first, last in zip(starts, [*edges, len(columns)], strict=True):
            axes.text((first + last - 1) / 2, -0.8, suites[first], ha="center", va="bottom",
                      fontsize=7, rotation=30 if len(starts) > 4 else 0)
        if values.size <= 100:
            for (i, j), value in np.ndenumerate(values):
                if value == value:
                    axes.text(j, i, f"{value:.0f}", ha="center", va="center", fontsize=6,
                              color="black" if value > 55 else "white")
        figure.colorbar(image, ax=axes, label="success (%)")
    return figure


def performance_profile(df: pd.DataFrame, policies: Sequence[str]) -> Figure:
    """rliable's performance profile (Agarwal et al. 2021): for each policy, the share of
    tasks (all suites pooled) whose mean success exceeds tau, for tau in [0, 1]."""
    scores = df.groupby(["policy", "suite", "task_id"])["success"].mean()
    taus = np.linspace(0, 1, 101)
    with matplotlib.rc_context(STYLE):
        figure = _figure(5.0, 3.4)
        axes = figure.add_subplot()
        for index, policy in enumerate(policies):
            values = scores.loc[policy].to_numpy(dtype=float)
            share = (values[None, :] > taus[:, None]).mean(axis=1)
            axes.step(100 * taus, share, where="post", label=policy, linewidth=1.2,
                      **{"color": _style(index)["color"]})
        axes.set_xlabel("success threshold τ (%)")
        axes.set_ylabel("share of tasks with success > τ")
        axes.set_ylim(-0.02, 1.02)
        axes.legend(fontsize=6, frameon=False, loc="upper right")
        axes.set_title("Performance profile")
    return figure


def pass_at_k_curves(summary: pd.DataFrame, title: str) -> Figure:
    """Mean pass@k against k (log2 axis) per policy (`pass_at_k_summary` rows of a suite)."""
    with matplotlib.rc_context(STYLE):
        figure = _figure(4.5, 3.2)
        axes = figure.add_subplot()
        for index, (policy, rows) in enumerate(summary.groupby("policy", sort=True)):
            axes.plot(rows["k"], 100 * rows["pass_at_k"], label=policy, linewidth=1.2,
                      markersize=4, **_style(index))
        axes.set_xscale("log", base=2)
        axes.set_xlabel("k (samples)")
        axes.set_ylabel("pass@k (%)")
        axes.set_ylim(-2, 102)
        axes.legend(fontsize=6, frameon=False)
        axes.set_title(title)
    return figure


def improvement_matrix(df: pd.DataFrame, policies: Sequence[str]) -> tuple[Figure, np.ndarray]:
    """Probability of improvement of row over column policy (rliable's definition,
    `harness.stats.estimators.probability_of_improvement`) over the tasks every listed policy
    ran (all suites pooled; runs = training x eval seeds). Returns the figure and the matrix
    ``(n_policies, n_policies)`` (diagonal NaN)."""
    values, labels = outcome_tensor(df[df["policy"].isin(list(policies))], metric="success",
                                    missing="drop_tasks")
    order = [labels.policies.index(p) for p in policies]
    runs = [values[i].transpose(0, 2, 1).reshape(-1, values.shape[2]) for i in order]
    n = len(policies)
    matrix = np.full((n, n), np.nan)
    for i in range(n):
        for j in range(n):
            if i != j:
                matrix[i, j] = probability_of_improvement(runs[i], runs[j])
    with matplotlib.rc_context(STYLE):
        figure = _figure(1.5 + 0.35 * n, 1.2 + 0.3 * n)
        axes = figure.add_subplot()
        image = axes.imshow(matrix, cmap="PuOr", vmin=0, vmax=1)
        axes.set_xticks(range(n), policies, rotation=45, ha="right")
        axes.set_yticks(range(n), policies)
        if n <= 15:
            for (i, j), value in np.ndenumerate(matrix):
                if value == value:
                    axes.text(j, i, f"{value:.2f}", ha="center", va="center", fontsize=5)
        figure.colorbar(image, ax=axes, label="P(row > column)")
        axes.set_title(f"Probability of improvement ({values.shape[2]} shared tasks)")
    return figure, matrix


def learning_curves(metrics: pd.DataFrame, metric: str = "success") -> Figure:
    """``metric`` against update step per training run (`Store.load_train_metrics` rows:
    run_id, train_seed, step, metrics...): each training seed thin, the seed mean thick."""
    rows = metrics.dropna(subset=[metric])
    with matplotlib.rc_context(STYLE):
        figure = _figure(5.0, 3.2)
        axes = figure.add_subplot()
        for index, (run_id, run) in enumerate(rows.groupby("run_id", sort=True)):
            colour = _style(index)["color"]
            for _, seed in run.groupby("train_seed", sort=True):
                axes.plot(seed["step"], seed[metric], color=colour, linewidth=0.6, alpha=0.5)
            mean = run.groupby("step")[metric].mean()
            seeds = run["train_seed"].nunique()
            axes.plot(mean.index, mean.to_numpy(), color=colour, linewidth=1.8,
                      label=f"{run_id} (mean of {seeds} seeds)")
        axes.set_xlabel("update step")
        axes.set_ylabel(metric.replace("_", " "))
        axes.legend(fontsize=6, frameon=False)
        axes.set_title(f"Learning curves: {metric.replace('_', ' ')}")
    return figure
