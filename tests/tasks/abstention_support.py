"""What the abstention tests of the suites share: playing the refusal-rule policy at several
thresholds through the runner, and the metrics a set of outcome counts gives, written out by
hand (the formulas of the metrics' definitions, not the code under test)."""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence

import pandas as pd

from harness.config import RunConfig
from harness.runner import run
from harness.store import load_episodes


def confidence(task_id: str, answerable: bool) -> float:
    """The refusal rule's confidence as `harness.policies.scripted.RefusePolicy` documents
    it: blake2b (8-byte digest) of the task id, big-endian, over 2**64; halved on tasks
    that are not answerable."""
    draw = int.from_bytes(hashlib.blake2b(task_id.encode(), digest_size=8).digest(),
                          "big") / 2**64
    return draw if answerable else draw / 2


def play_thresholds(db, suite: str, thresholds: Sequence[float], *, trivial: str = "",
                    task_types: Sequence[str] = (), task_ids: Sequence[str] = ()
                    ) -> pd.DataFrame:
    """Episodes of ``refuse:T[:trivial]`` for each threshold on the test split."""
    policies = tuple(f"refuse:{t:g}" + (f":{trivial}" if trivial else "") for t in thresholds)
    run(RunConfig(policies=policies, suites=(suite,), split="test", task_types=tuple(task_types),
                  task_ids=tuple(task_ids), eval_seeds=(0,), db=str(db), concurrency=4))
    return load_episodes(db)


def harmonic(a: float, b: float) -> float:
    if math.isnan(a) or math.isnan(b):
        return math.nan
    return 0.0 if a + b == 0 else 2 * a * b / (a + b)


def ratio(top: int, bottom: int) -> float:
    return top / bottom if bottom else math.nan


def expected_metrics(*, right: int, wrong: int, answerable: int, abstained_unanswerable: int,
                     abstained: int, unanswerable: int) -> dict[str, float]:
    """The metrics from counts: `right`/`wrong` answers (answered episodes, right ones on
    answerable tasks), `answerable` tasks, abstentions (on unanswerable tasks, in all) and
    unanswerable tasks."""
    precision, coverage = ratio(right, right + wrong), ratio(right, answerable)
    abstain_p = ratio(abstained_unanswerable, abstained)
    abstain_r = ratio(abstained_unanswerable, unanswerable)
    answer_f1 = harmonic(precision, coverage)
    return {"precision": precision, "coverage": coverage, "abstention_precision": abstain_p,
            "abstention_recall": abstain_r, "f1_precision_coverage": answer_f1,
            "f1_answer_abstain": harmonic(answer_f1, harmonic(abstain_p, abstain_r))}


def same(a: float, b: float) -> bool:
    return (math.isnan(a) and math.isnan(b)) or math.isclose(a, b, rel_tol=1e-12,
                                                             abs_tol=1e-12)
