"""Figures for papers (PDF, fonts embedded as TrueType: ``pdf.fonttype = 42``) and the web
(PNG), in the Okabe-Ito colour-blind-safe palette (Okabe & Ito 2008) and the perceptually
uniform ``cividis`` / colour-blind-safe diverging ``PuOr`` colour maps.

Every figure is laid out at its printed size: ``width`` is `COLUMN_WIDTH` (3.5 in, one column
of a two-column paper) or `PAGE_WIDTH` (7 in, both columns), and the height grows with the
number of policies, suites and task types so that every label has a row of its own. No text
is smaller than 7 pt; long names are wrapped at their separators or truncated with a numbered
key under the figure; cell values are printed only where a cell has room for them
(`harness.report.figure_layout`).

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

from harness.report.figure_layout import (COLUMN_WIDTH, FONT, LINE_PITCH, MIN_FONT,
                                          PAGE_HEIGHT, PAGE_WIDTH, FittedLabels,
                                          fit_axes_height, fit_labels, legend_below,
                                          text_width, wrap_text)
from harness.stats.arrays import outcome_tensor
from harness.stats.estimators import probability_of_improvement

__all__ = ["OKABE_ITO", "STYLE", "COLUMN_WIDTH", "PAGE_WIDTH", "PAGE_HEIGHT", "forest_plot",
           "task_type_heatmap", "performance_profile", "pass_at_k_curves",
           "improvement_matrix", "learning_curves", "save_figure"]

OKABE_ITO = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442",
             "#000000")
"""Okabe & Ito's palette: blue, orange, bluish green, reddish purple, sky blue, vermillion,
yellow, black."""
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")
TITLE_FONT = 8.0
STYLE = {"pdf.fonttype": 42, "ps.fonttype": 42, "font.family": FONT,
         "font.size": TITLE_FONT, "axes.titlesize": TITLE_FONT, "axes.labelsize": TITLE_FONT,
         "figure.titlesize": TITLE_FONT, "xtick.labelsize": MIN_FONT,
         "ytick.labelsize": MIN_FONT, "legend.fontsize": MIN_FONT,
         "axes.spines.top": False, "axes.spines.right": False,
         "axes.prop_cycle": matplotlib.cycler(color=OKABE_ITO), "svg.hashsalt": "harness",
         "figure.dpi": 100, "figure.constrained_layout.h_pad": 4 / 72,
         "figure.constrained_layout.w_pad": 4 / 72}
COLOURBAR = 50.0
"""Points a colour bar takes beside its axes: bar, tick labels and its label."""


def _style(index: int) -> dict:
    return {"color": OKABE_ITO[index % len(OKABE_ITO)],
            "marker": MARKERS[(index // len(OKABE_ITO)) % len(MARKERS)]}


def save_figure(figure: Figure, directory: str | Path, name: str, *,
                dpi: int = 150) -> list[Path]:
    """Write ``name.pdf`` and ``name.png`` into ``directory``; returns both paths."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    paths = [directory / f"{name}.pdf", directory / f"{name}.png"]
    with matplotlib.rc_context(STYLE):
        figure.savefig(paths[0], metadata={"CreationDate": None, "Producer": "harness"})
        figure.savefig(paths[1], dpi=dpi, metadata={"Software": None})
    return paths


def _figure(width: float) -> Figure:
    with matplotlib.rc_context(STYLE):
        return Figure(figsize=(width, 3.0), layout="constrained")


def _label_budget(width: float, share: float = 0.34) -> float:
    """Points an axis's name labels may take: a third of the figure width."""
    return share * width * 72


def _title(figure: Figure, text: str) -> None:
    room = figure.get_size_inches()[0] * 72 - 12
    figure.suptitle(wrap_text(text, room, size=TITLE_FONT, max_lines=3) or text,
                    fontsize=TITLE_FONT)


def _row_pitch(lines: int) -> float:
    """Points per row of an axis whose labels take ``lines`` lines."""
    return lines * 1.2 * MIN_FONT + 1.5


def forest_plot(rows: pd.DataFrame, title: str, *, width: float = PAGE_WIDTH) -> Figure:
    """Success with 95% intervals per policy (`ranking.rank_policies` rows of one group):
    best in orange, not separable from it in sky blue, the rest in blue. ``width`` in
    inches; the height follows the number of policies."""
    rows = rows.sort_values(["success", "policy"], ascending=[True, False])
    names = fit_labels(list(rows["policy"]), _label_budget(width),
                       max_lines=2 if len(rows) <= 12 else 1)
    with matplotlib.rc_context(STYLE):
        figure = _figure(width)
        axes = figure.add_subplot()
        y = np.arange(len(rows))
        status = np.where(rows["best"], 1, np.where(
            [s is not None and s == s and not s for s in rows["separable"]], 4, 0))
        labels = {1: "best", 4: "not separable from best (Holm)", 0: "separable"}
        handles, texts = [], []
        for code in (0, 4, 1):
            mask = status == code
            if not mask.any():
                continue
            r = rows[mask]
            below = np.clip(r["success"] - r["low"], 0, None)  # Wilson ends may round past
            above = np.clip(r["high"] - r["success"], 0, None)  # the estimate by 1e-17
            handles.append(axes.errorbar(100 * r["success"], y[mask],
                                         xerr=[100 * below, 100 * above], fmt="o",
                                         color=OKABE_ITO[code], ecolor=OKABE_ITO[code],
                                         capsize=2, markersize=3.5))
            texts.append(labels[code])
        axes.set_yticks(y, names.labels)
        axes.set_ylim(-0.6, len(rows) - 0.4)
        axes.set_xlim(-2, 102)
        axes.set_xlabel("success rate (%), Wilson 95% interval")
        legend_below(figure, handles, texts, key=names.key)
        _title(figure, title)
        fit_axes_height(figure, [axes], max(0.5, len(rows) * _row_pitch(names.lines) / 72))
    return figure


def _suite_label(axes, suite: str, first: int, last: int, pitch: float, key: list[str],
                 start: int) -> None:
    """Name the column group ``first..last`` (inclusive) above the axes: horizontal and
    wrapped when it fits the group's width, else vertical (truncated with a key entry)."""
    centre = (first + last) / 2
    transform = axes.get_xaxis_transform()
    flat = wrap_text(suite, (last - first + 1) * pitch - 4, max_lines=3)
    if flat is not None:
        axes.text(centre, 1.02, flat, transform=transform, ha="center", va="bottom",
                  fontsize=MIN_FONT)
        return
    fitted = fit_labels([suite], 80.0, start=start + len(key))
    key.extend(fitted.key)
    axes.text(centre, 1.02, fitted.labels[0], transform=transform, ha="center",
              va="bottom", rotation=90, fontsize=MIN_FONT)


def _panels(columns: list[tuple[str, str]], per_panel: int) -> list[list[int]]:
    """Column indices per panel: whole suites where they fit, at most ``per_panel`` each."""
    panels: list[list[int]] = [[]]
    for index, (suite, _) in enumerate(columns):
        starts_suite = index == 0 or columns[index - 1][0] != suite
        size = sum(1 for s, _ in columns[index:] if s == suite) if starts_suite else 0
        full = len(panels[-1]) >= per_panel
        if panels[-1] and (full or (starts_suite and len(panels[-1]) + min(size, per_panel)
                                    > per_panel)):
            panels.append([])
        panels[-1].append(index)
    return panels


def _annotate(axes, values: np.ndarray, fmt: str, dark, n_columns: int) -> None:
    """Print each cell's value where the cell (``values`` is ``(rows, columns)``) has room."""
    box = axes.get_window_extent()
    figure = axes.get_figure()
    scale = 72 / figure.dpi
    pitch_x = box.width * scale / n_columns
    pitch_y = box.height * scale / values.shape[0]
    widest = max((text_width(fmt.format(v)) for v in values.flat if v == v), default=0)
    if pitch_x < widest + 4 or pitch_y < MIN_FONT + 3:
        return
    for (i, j), value in np.ndenumerate(values):
        if value == value:
            axes.text(j, i, fmt.format(value), ha="center", va="center", fontsize=MIN_FONT,
                      color="white" if dark(value) else "black")


def task_type_heatmap(rows: pd.DataFrame, order: Sequence[str], *,
                      width: float = PAGE_WIDTH) -> Figure:
    """Success in percent (``cividis``) of policies (in ``order``, top to bottom) on every
    (suite, task type), one column per task type grouped by suite
    (`ranking.rank_policies(by_task_type=True)` rows). Columns that do not fit the width at
    7 pt continue in further panels below; cell values are printed where they fit."""
    columns = sorted({(r.suite, r.task_type) for r in rows.itertuples()})
    grid = rows.pivot_table(index="policy", columns=["suite", "task_type"], values="success",
                            aggfunc="first")
    values = 100 * grid.reindex(index=list(order), columns=pd.MultiIndex.from_tuples(columns)
                                ).to_numpy(dtype=float)
    names = fit_labels(list(order), _label_budget(width))
    room = width * 72 - max(text_width(n) for n in names.labels) - COLOURBAR - 24
    per_panel = max(1, int(room // LINE_PITCH))
    panels = _panels(columns, per_panel)
    per_panel = max(len(p) for p in panels)
    pitch = room / per_panel
    key = list(names.key)
    types = fit_labels([t for _, t in columns], 72.0, start=len(key) + 1)
    key += types.key
    vertical = any(text_width(t) > pitch - 3 for t in types.labels)
    with matplotlib.rc_context(STYLE):
        figure = _figure(width)
        all_axes = figure.subplots(len(panels), 1, squeeze=False)[:, 0]
        for axes, panel in zip(all_axes, panels, strict=True):
            image = axes.imshow(values[:, panel], cmap="cividis", vmin=0, vmax=100,
                                aspect="auto")
            axes.set_xlim(-0.5, per_panel - 0.5)
            axes.set_xticks(range(len(panel)), [types.labels[i] for i in panel],
                            rotation=90 if vertical else 0)
            axes.set_yticks(range(len(order)), names.labels)
            axes.tick_params(length=2)
            suites = [columns[i][0] for i in panel]
            edges = [k for k in range(1, len(panel)) if suites[k] != suites[k - 1]]
            for edge in edges:
                axes.axvline(edge - 0.5, color="white", linewidth=2)
            for first, last in zip([0, *edges], [*edges, len(panel)], strict=True):
                _suite_label(axes, suites[first], first, last - 1, pitch, key, 1)
        bar = figure.colorbar(image, ax=list(all_axes), label="success (%)")
        bar.set_ticks([0, 50, 100])
        if key:
            legend_below(figure, [], [], key=key)
        wanted = max(0.9, len(order) * _row_pitch(1) / 72) if len(panels) == 1 else \
            len(order) * _row_pitch(1) / 72 + 0.1
        fit_axes_height(figure, list(all_axes), wanted)
        for axes, panel in zip(all_axes, panels, strict=True):
            _annotate(axes, values[:, panel], "{:.0f}", lambda v: v <= 55, per_panel)
    return figure


def _curve_figure(width: float) -> tuple[Figure, object]:
    figure = _figure(width)
    return figure, figure.add_subplot()


def _finish_curves(figure: Figure, axes, title: str, width: float) -> None:
    handles, labels = axes.get_legend_handles_labels()
    legend_below(figure, handles, labels)
    _title(figure, title)
    fit_axes_height(figure, [axes], min(2.4, 0.62 * width))


def performance_profile(df: pd.DataFrame, policies: Sequence[str], *,
                        width: float = PAGE_WIDTH) -> Figure:
    """rliable's performance profile (Agarwal et al. 2021): for each policy, the share of
    tasks (all suites pooled) whose mean success exceeds tau, for tau in [0, 1]."""
    scores = df.groupby(["policy", "suite", "task_id"])["success"].mean()
    taus = np.linspace(0, 1, 101)
    with matplotlib.rc_context(STYLE):
        figure, axes = _curve_figure(width)
        for index, policy in enumerate(policies):
            values = scores.loc[policy].to_numpy(dtype=float)
            share = (values[None, :] > taus[:, None]).mean(axis=1)
            axes.step(100 * taus, share, where="post", label=policy, linewidth=1.2,
                      **{"color": _style(index)["color"]})
        axes.set_xlabel("success threshold τ (%)")
        axes.set_ylabel("share of tasks with success > τ")
        axes.set_ylim(-0.02, 1.02)
        _finish_curves(figure, axes, "Performance profile", width)
    return figure


def pass_at_k_curves(summary: pd.DataFrame, title: str, *,
                     width: float = PAGE_WIDTH) -> Figure:
    """Mean pass@k against k (log2 axis) per policy (`pass_at_k_summary` rows of a suite)."""
    with matplotlib.rc_context(STYLE):
        figure, axes = _curve_figure(width)
        for index, (policy, rows) in enumerate(summary.groupby("policy", sort=True)):
            axes.plot(rows["k"], 100 * rows["pass_at_k"], label=policy, linewidth=1.2,
                      markersize=3.5, **_style(index))
        axes.set_xscale("log", base=2)
        axes.set_xlabel("k (samples)")
        axes.set_ylabel("pass@k (%)")
        axes.set_ylim(-2, 102)
        _finish_curves(figure, axes, title, width)
    return figure


def _matrix_labels(policies: Sequence[str], width: float):
    """Tick labels of the improvement matrix: names on both axes when a 7 pt row fits each
    column, else rank numbers on x and ``rank. name`` on y. Returns (y labels, x labels,
    x tick positions, key, column pitch in points)."""
    n = len(policies)
    names = fit_labels(list(policies), _label_budget(width))
    room = width * 72 - max(text_width(t) for t in names.labels) - COLOURBAR - 24
    if room / n >= LINE_PITCH:
        pitch = min(room / n, 26.0)
        return names.labels, names.labels, list(range(n)), names.key, pitch
    names = fit_labels(list(policies), _label_budget(width, 0.42) - text_width(f"{n}. "))
    names = FittedLabels(tuple(f"{k + 1}. {label}" for k, label in enumerate(names.labels)),
                         names.key)
    room = width * 72 - max(text_width(t) for t in names.labels) - COLOURBAR - 24
    step = next(s for s in (1, 2, 5, 10, 20, 50, 100, 200, 500, n)
                if s * room / n >= text_width(str(n)) + 4)
    ticks = list(range(step - 1, n, step)) if step > 1 else list(range(n))
    return names.labels, [str(t + 1) for t in ticks], ticks, names.key, room / n


def improvement_matrix(df: pd.DataFrame, policies: Sequence[str], *,
                       width: float = PAGE_WIDTH) -> tuple[Figure, np.ndarray]:
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
    y_labels, x_labels, x_ticks, key, pitch = _matrix_labels(policies, width)
    square = pitch >= LINE_PITCH
    with matplotlib.rc_context(STYLE):
        figure = _figure(width)
        axes = figure.add_subplot()
        image = axes.imshow(matrix, cmap="PuOr", vmin=0, vmax=1,
                            aspect="equal" if square else "auto")
        axes.set_xticks(x_ticks, x_labels, rotation=90 if square else 0)
        axes.set_yticks(range(n), y_labels)
        axes.tick_params(length=2)
        if square:  # a bar beside the matrix, which stays centred on the page
            side = n * pitch
            bar_axes = axes.inset_axes([1 + 8 / side, 0, 7 / side, 1])
            bar = figure.colorbar(image, cax=bar_axes, label="P(row > column)")
        else:
            bar = figure.colorbar(image, ax=axes, label="P(row > column)")
        bar.set_ticks([0, 0.5, 1])
        if key:
            legend_below(figure, [], [], key=key)
        _title(figure, f"Probability of improvement ({values.shape[2]} shared tasks)")
        fit_axes_height(figure, [axes], max(1.0, n * (pitch if square else _row_pitch(1)) / 72))
        _annotate(axes, matrix, "{:.2f}", lambda v: abs(v - 0.5) > 0.3, n)
    return figure, matrix


def learning_curves(metrics: pd.DataFrame, metric: str = "success", *,
                    width: float = PAGE_WIDTH) -> Figure:
    """``metric`` against update step per training run (`harness.train.metrics_table.load_train_metrics` rows:
    run_id, train_seed, step, metrics...): each training seed thin, the seed mean thick."""
    rows = metrics.dropna(subset=[metric])
    with matplotlib.rc_context(STYLE):
        figure, axes = _curve_figure(width)
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
        _finish_curves(figure, axes, f"Learning curves: {metric.replace('_', ' ')}", width)
    return figure


def score_against_budget(rows: pd.DataFrame, title: str, *,
                         width: float = PAGE_WIDTH) -> Figure:
    """Mean score against the context compaction budget (log2 axis, tokens) per base policy,
    with 95% intervals (`harness.report.compaction.budget_rows` of one suite); a base's full
    context (no compaction) is a dashed line with its interval shaded."""
    with matplotlib.rc_context(STYLE):
        figure, axes = _curve_figure(width)
        for index, (base, points) in enumerate(rows.groupby("base", sort=True)):
            style = _style(index)
            compacted = points[points["budget"].notna()].sort_values("budget")
            axes.errorbar(compacted["budget"], compacted["score"],
                          yerr=[compacted["score"] - compacted["low"],
                                compacted["high"] - compacted["score"]],
                          label=base, linewidth=1.2, markersize=3.5, capsize=2, **style)
            full = points[points["budget"].isna()]
            if not full.empty:
                axes.axhline(full["score"].iloc[0], color=style["color"], linestyle="--",
                             linewidth=0.9)
                axes.axhspan(full["low"].iloc[0], full["high"].iloc[0],
                             color=style["color"], alpha=0.12, linewidth=0)
        axes.set_xscale("log", base=2)
        axes.set_xlabel("context budget (tokens; dashed: no compaction)")
        axes.set_ylabel("mean score")
        _finish_curves(figure, axes, title, width)
    return figure
