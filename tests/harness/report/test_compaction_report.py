"""`harness report` draws score against context budget when runs at several compaction
budgets of one policy exist."""

import numpy as np
import pandas as pd
import pytest

from harness.config import make_run_config
from harness.report.build import build_report
from harness.report.compaction import base_policy, budget_rows, policy_budgets
from harness.runner import run
from harness.store import Store


@pytest.mark.parametrize("policy, base", [
    ("random?layers=compaction&compact_budget=64", "random"),
    ("random?layers=compaction,repair&compact_budget=64&compact_tokens=9&stream=1",
     "random?layers=repair&stream=1"),
    ("hf:m?temperature=0&layers=compaction&compact_budget=64", "hf:m?temperature=0"),
    ("oracle", "oracle"),
])
def test_base_policy_drops_the_compaction_options(policy, base):
    assert base_policy(policy) == base


def test_budget_rows_hand_computed():
    frame = pd.DataFrame({
        "suite": ["s"] * 6, "status": ["ok"] * 6, "task_id": ["a", "b"] * 3,
        "policy": ["p"] * 2 + ["p?layers=compaction&compact_budget=8"] * 2
        + ["q"] * 2, "score": [1.0, 0.0, 0.5, 0.5, 1.0, 1.0]})
    rows = budget_rows(frame, {"p": None, "p?layers=compaction&compact_budget=8": 8, "q": None})
    assert list(rows.base) == ["p", "p"]  # q has no compacted variant
    full, eight = rows[rows.budget.isna()].iloc[0], rows[rows.budget == 8].iloc[0]
    assert full.score == 0.5 and full.n_tasks == 2
    assert full.high - full.score == pytest.approx(1.96 * np.std([1, 0], ddof=1) / np.sqrt(2))
    assert eight.score == 0.5 and eight.low == eight.high == 0.5


def test_report_draws_score_against_budget(tmp_path):
    policies = ["random"] + [f"random?layers=compaction&compact_budget={b}" for b in (40, 80)]
    config = make_run_config({"policies": policies, "suites": ["frozenlake"], "n_tasks": 4,
                              "max_steps": 8, "db": str(tmp_path / "h.db")})
    run(config)
    with Store(config.db, readonly=True) as store:
        budgets = policy_budgets(store, policies)
    assert budgets == {"random": None, policies[1]: 40, policies[2]: 80}
    summary = build_report(config.db, tmp_path / "r", command="x")
    names = {p.name for p in summary.files}
    assert "score-vs-budget-frozenlake@1.png" in names
    assert "score-vs-budget-frozenlake@1.pdf" in names
