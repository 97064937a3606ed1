"""The ablation report: Markdown and LaTeX tables, as the other reports write them.

Files in the output folder: ``ablation.md`` (the layer table, the arm table, final success,
the maturity score and the control line), ``layers.tex`` and ``arms.tex`` (booktabs tables,
`harness.report.tables`) and ``ablation.tex`` (a compilable document that inputs both).
Final success and the maturity score are separate lines, never one number.
"""

from __future__ import annotations

from pathlib import Path

from harness.ablation.analysis import AblationResult, Effect
from harness.report.tables import (Cell, Table, interval_cell, latex_document, percent,
                                   to_latex, to_markdown)
from harness.store import check_output_dir

__all__ = ["layer_table", "arm_table", "summary_lines", "ablation_markdown", "ablation_latex",
           "write_ablation_report"]


def _signed(value: float) -> str:
    return "–" if value != value else f"{100 * value:+.1f}"


def _effect_cell(effect: Effect | None) -> Cell:
    if effect is None:
        return Cell("–")
    i = effect.interval
    return Cell(_signed(i.estimate), f" [{_signed(i.low)}, {_signed(i.high)}]",
                bold=i.low > 0 or i.high < 0)


def layer_table(result: AblationResult) -> Table:
    """Per layer: paired effects (percentage points, 95% interval over tasks), activation
    rate, tokens per episode and whether the effect is credibly non-negative."""
    rows = tuple((Cell(f.layer), _effect_cell(f.off), _effect_cell(f.on),
                  Cell(percent(f.activation)), Cell(f"{f.tokens_per_episode:.1f}"),
                  Cell("yes" if f.credibly_non_negative else "no"))
                 for f in result.layers)
    confidence = f"{100 * result.plan.config.confidence:g}%"
    return Table(
        "ablation-layers", f"Harness layers of {result.plan.config.base}: paired effect on "
        f"success (points, {confidence} interval over tasks)",
        ("layer", "off: all - without", "on: only - none", "fires (% steps)", "tokens/episode",
         "lower bound >= 0"), rows, align="lrrrrc",
        notes=("Bold: the interval excludes 0. Effects pair the arms on the same episode keys "
               "and sampling seeds; the interval resamples whole tasks (percentile bootstrap).",
               "Activation and tokens: the layer's per-step log in the all-layers arm."))


def arm_table(result: AblationResult) -> Table:
    """Per arm: its policy id, run, success rate (Wilson interval), episodes, tokens."""
    rows = tuple((Cell(s.arm.name), Cell(s.arm.spec), Cell(s.arm.run_id),
                  interval_cell(s.success.estimate, s.success.low, s.success.high),
                  Cell(str(s.episodes)), Cell(f"{s.tokens_per_episode:.1f}"))
                 for s in result.arms)
    return Table("ablation-arms", "Ablation arms: success rate (%, Wilson interval)",
                 ("arm", "policy", "run", "success", "episodes", "tokens/episode"), rows,
                 align="lllrrr")


def summary_lines(result: AblationResult) -> list[str]:
    """Final success, the maturity score and the control's difference: one line each."""
    final, control = result.final_success, result.control.interval
    noise = "inside" if control.low <= 0 <= control.high else "OUTSIDE"
    return [
        f"Final success (all layers): {percent(final.estimate)}% "
        f"[{percent(final.low)}, {percent(final.high)}] over {result.arms[0].episodes} "
        "episodes",
        f"Maturity score: {result.maturity:.2f} ({result.n_credible} of {len(result.layers)} "
        "layers credibly non-negative: interval lower bound >= 0); reported beside final "
        "success, never combined with it",
        f"Control (all layers run twice, runs {result.plan.run_ids[0]} and "
        f"{result.plan.run_ids[1]}): difference {_signed(control.estimate)} points "
        f"[{_signed(control.low)}, {_signed(control.high)}], p = {result.control.p_value:.3g}; "
        f"0 is {noise} the interval",
    ]


def ablation_markdown(result: AblationResult) -> str:
    lines = [f"# Layer ablation of {result.plan.config.base}", ""]
    lines += [f"- {line}" for line in summary_lines(result)] + [""]
    return "\n".join(lines) + "\n" + to_markdown(layer_table(result)) + "\n" + \
        to_markdown(arm_table(result))


def ablation_latex(result: AblationResult) -> str:
    """Both tables as LaTeX floats, the summary lines as a comment on top."""
    comment = "\n".join(summary_lines(result))
    return to_latex(layer_table(result), comment=comment) + "\n" + to_latex(arm_table(result))


def write_ablation_report(result: AblationResult, out: str | Path) -> Path:
    """Write the report files (module docstring) into `out`; returns ``ablation.md``."""
    folder = check_output_dir(out)
    comment = "\n".join(summary_lines(result))
    (folder / "layers.tex").write_text(to_latex(layer_table(result), comment=comment))
    (folder / "arms.tex").write_text(to_latex(arm_table(result)))
    (folder / "ablation.tex").write_text(latex_document(["layers", "arms"], comment=comment))
    path = folder / "ablation.md"
    path.write_text(ablation_markdown(result))
    return path
