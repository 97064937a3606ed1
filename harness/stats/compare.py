"""The paired comparison of two policies that ``harness compare`` prints.

`compare_policies` aligns two policies on shared keys and reports, on one metric:

- the mean difference ``a - b`` with a paired bootstrap interval that resamples whole tasks
  (`harness.stats.bootstrap.paired_bootstrap`, percentile), and Miller's clustered SE;
- the sign-flip permutation test flipping whole tasks: the headline p-value (``p_value``),
  valid when a task's keys are correlated, and the one a family adjustment should use;
- McNemar exact (success) or Wilcoxon signed-rank (score) over keys taken as independent
  pairs, the classical tests readers expect;
- the paired TOST verdict on task means when a margin is given;
- the GEE policy effect (log odds ratio for success, mean difference for scores).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from harness.core import HarnessError
from harness.stats.bootstrap import paired_bootstrap
from harness.stats.equivalence import EquivalenceResult, check_margin, paired_tost
from harness.stats.estimators import Interval
from harness.stats.frame import paired_outcomes
from harness.stats.models import (ClusteredEstimate, PolicyEffect, clustered_paired_difference,
                                  policy_effect)
from harness.stats.paired import HypothesisTestResult, mcnemar_test, sign_flip_test, wilcoxon_test

__all__ = ["Comparison", "compare_policies", "format_comparison", "NO_MARGIN"]

NO_MARGIN = "no margin given: equivalence not tested"


@dataclass(frozen=True)
class Comparison:
    """Everything `compare_policies` found; ``p_value`` is the clustered permutation p."""

    policy_a: str
    policy_b: str
    suite: str | None
    metric: str
    n_keys: int
    n_tasks: int
    mean_a: float
    mean_b: float
    difference: Interval
    clustered: ClusteredEstimate
    test: HypothesisTestResult
    permutation: HypothesisTestResult
    equivalence: EquivalenceResult | None
    verdict: str
    model: PolicyEffect | None
    model_note: str
    n_resamples: int

    @property
    def p_value(self) -> float:
        return self.permutation.p_value


def compare_policies(df: pd.DataFrame, a: str, b: str, *, rng: np.random.Generator,
                     suite: str | None = None, metric: str = "success",
                     margin: float | None = None, n_resamples: int = 10_000,
                     confidence: float = 0.95, alpha: float = 0.05) -> Comparison:
    """Paired comparison of policies ``a`` and ``b`` in the episode frame ``df``.

    ``rng`` drives the bootstrap and the permutation test. ``margin`` (outcome units, e.g.
    0.02) turns on the TOST at level ``alpha``; without one the verdict says equivalence was
    not tested. Needs at least two shared tasks (intervals are clustered by task).
    """
    if margin is not None:
        check_margin(margin)
    paired = paired_outcomes(df, a, b, metric=metric, suite=suite)
    if paired.n_tasks < 2:
        raise HarnessError(f"policies {a!r} and {b!r} share only {paired.n_tasks} task; a "
                           "comparison clustered by task needs at least 2")
    x, y, tasks = paired.a, paired.b, paired.tasks
    difference = paired_bootstrap(x, y, rng, clusters=tasks, n_resamples=n_resamples,
                                  confidence=confidence, method="percentile")
    if metric == "success":
        test = mcnemar_test(x, y)
    else:
        test = wilcoxon_test(x, y)
    permutation = sign_flip_test(x, y, rng=rng, clusters=tasks, n_resamples=n_resamples)
    equivalence = None
    verdict = NO_MARGIN
    if margin is not None:
        equivalence = paired_tost(x, y, margin=margin, alpha=alpha, clusters=tasks)
        verdict = equivalence.verdict
    try:
        model, model_note = policy_effect(paired, model="gee", confidence=confidence), ""
    except HarnessError as error:
        model, model_note = None, f"model not estimated: {error}"
    return Comparison(a, b, suite, metric, paired.n_keys, paired.n_tasks, float(x.mean()),
                      float(y.mean()), difference,
                      clustered_paired_difference(x, y, tasks, confidence=confidence), test,
                      permutation, equivalence, verdict, model, model_note, n_resamples)


def _p(p: float) -> str:
    return "p < 0.0001" if p < 1e-4 else f"p = {p:.4f}"


def _ci(interval: Interval, signed: bool = True) -> str:
    f = "{:+.4f}" if signed else "{:.4f}"
    pct = f"{100 * interval.confidence:g}%"
    return f"{f.format(interval.estimate)}  {pct} CI [{f.format(interval.low)}, " \
           f"{f.format(interval.high)}]"


def format_comparison(c: Comparison) -> str:
    """Terminal text of a `Comparison`, one finding per line."""
    what = "success rate" if c.metric == "success" else "mean score"
    scope = c.suite if c.suite is not None else "all shared suites"
    ci = c.clustered.interval
    lines = [
        f"{c.policy_a} (A) vs {c.policy_b} (B) on {scope}: {c.n_keys} paired keys over "
        f"{c.n_tasks} tasks, metric {c.metric}",
        f"  {what:<22} A {c.mean_a:.4f}   B {c.mean_b:.4f}",
        f"  {'difference A - B':<22} {_ci(c.difference)}  ({c.difference.method} bootstrap "
        f"over tasks, {c.n_resamples} resamples)",
        f"  {'clustered SE':<22} {c.clustered.se:.4f}  normal CI [{ci.low:+.4f}, "
        f"{ci.high:+.4f}]  (Miller 2024, cluster = task)",
        f"  {'permutation test':<22} {_p(c.permutation.p_value)}  ({c.permutation.method}, "
        f"{c.permutation.n_informative} tasks with a difference)",
    ]
    if c.metric == "success":
        n10 = (c.test.n_informative + (c.mean_a - c.mean_b) * c.n_keys) / 2
        lines.append(f"  {'McNemar exact':<22} {_p(c.test.p_value)}  (discordant: A only "
                     f"{round(n10)}, B only {c.test.n_informative - round(n10)}; keys as "
                     "independent pairs)")
    else:
        lines.append(f"  {'Wilcoxon signed-rank':<22} {_p(c.test.p_value)}  "
                     f"({c.test.n_informative} non-zero differences; keys as independent "
                     "pairs)")
    if c.equivalence is not None:
        e = c.equivalence
        lines.append(f"  {'equivalence (TOST)':<22} {e.verdict}  ({_p(e.p_value)}, "
                     f"{100 * (1 - 2 * e.alpha):g}% CI [{e.low:+.4f}, {e.high:+.4f}] on "
                     f"{e.n} task means)")
    else:
        lines.append(f"  {'equivalence':<22} {c.verdict}")
    if c.model is not None:
        m = c.model
        text = f"{m.scale} {_ci(m.effect)}"
        if m.odds_ratio is not None:
            text += f"; odds ratio {m.odds_ratio.estimate:.3f} [{m.odds_ratio.low:.3f}, " \
                    f"{m.odds_ratio.high:.3f}]"
        lines.append(f"  {'model':<22} {text}  ({m.model}{'; ' + m.note if m.note else ''})")
    else:
        lines.append(f"  {'model':<22} {c.model_note}")
    return "\n".join(lines)
