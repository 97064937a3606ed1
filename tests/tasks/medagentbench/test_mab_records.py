"""The record generator: each branch writes a chart in that branch (checked by reading the
chart, not by trusting the label), deterministically; branch quotas are exact."""

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.core import make_rng
from tasks.medagentbench.branches import KINDS, branches_of, task_record
from tasks.medagentbench.clinical import NOW
from tasks.medagentbench.grading import latest, readings, within
from tasks.medagentbench.rules import (ONE_YEAR_AGO, TEN_YEARS_AGO, bp_is_high, mg_dose,
                                       mg_to_mgdl, weight_kg)
from tasks.medagentbench.taskdefs import KIND, OFFICIAL_MIX, TYPE_BRANCHES, equal_mix, quota

SEEDS = range(12)


def chart(kind, branch, seed):
    return task_record(kind, branch, "S1", make_rng("test", kind, branch, seed))


def last_in_24h(records, code):
    return latest(within(readings(records, code), 24))


BRANCH_FACTS = {
    ("mg", "recent"): lambda r: last_in_24h(r, "MG") is not None,
    ("mg", "normal"): lambda r: mg_dose(last_in_24h(r, "MG").value) is None,
    ("mg", "mild"): lambda r: mg_dose(last_in_24h(r, "MG").value) == (1, 1),
    ("mg", "moderate"): lambda r: mg_dose(last_in_24h(r, "MG").value) == (2, 2),
    ("mg", "severe"): lambda r: mg_dose(last_in_24h(r, "MG").value) == (4, 4),
    ("mg", "mmol"): lambda r: last_in_24h(r, "MG").unit == "mmol/L" and 1.0 < mg_to_mgdl(
        last_in_24h(r, "MG").value, "mmol/L") < 2.7,
    ("mg", "stale"): lambda r: readings(r, "MG") and last_in_24h(r, "MG") is None,
    ("mg", "none"): lambda r: not readings(r, "MG"),
    ("glu", "values"): lambda r: len(within(readings(r, "GLU"), 24)) >= 1,
    ("glu", "low"): lambda r: last_in_24h(r, "GLU").value < 70,
    ("glu", "normal"): lambda r: last_in_24h(r, "GLU").value >= 70,
    ("glu", "history"): lambda r: latest(readings(r, "GLU")) is not None,
    ("glu", "many_high"): lambda r: sum(x.value > 180 for x in within(readings(r, "GLU"), 24)) >= 2,
    ("glu", "few_high"): lambda r: sum(x.value > 180 for x in within(readings(r, "GLU"), 24)) < 2,
    ("glu", "stale"): lambda r: readings(r, "GLU") and last_in_24h(r, "GLU") is None,
    ("glu", "none"): lambda r: not readings(r, "GLU"),
    ("k", "low"): lambda r: latest(readings(r, "K")).value < 3.5,
    ("k", "normal"): lambda r: latest(readings(r, "K")).value >= 3.5,
    ("k", "none"): lambda r: not readings(r, "K"),
    ("a1c", "recent"): lambda r: latest(readings(r, "A1C")).when >= ONE_YEAR_AGO,
    ("a1c", "old"): lambda r: latest(readings(r, "A1C")).when < ONE_YEAR_AGO,
    ("a1c", "high"): lambda r: latest(readings(r, "A1C")).value >= 9.0,
    ("a1c", "below"): lambda r: latest(readings(r, "A1C")).value < 9.0,
    ("a1c", "none"): lambda r: not readings(r, "A1C"),
    ("creat", "high"): lambda r: latest(readings(r, "CREAT")).value > 1.3,
    ("creat", "normal"): lambda r: latest(readings(r, "CREAT")).value <= 1.3,
    ("creat", "none"): lambda r: not readings(r, "CREAT"),
    ("allergy", "allergic"): lambda r: any("91936005" in json.dumps(x) for x in r),
    ("allergy", "not_allergic"): lambda r: not any("91936005" in json.dumps(x) for x in r),
    ("aspirin", "active"): lambda r: any(x.get("status") == "active" and "aspirin" in json.dumps(x)
                                         for x in r),
    ("aspirin", "absent"): lambda r: not any("aspirin" in json.dumps(x) for x in r),
    ("aspirin", "stopped"): lambda r: all(x.get("status") == "stopped" for x in r
                                          if "aspirin" in json.dumps(x)),
    ("weight", "heavy_kg"): lambda r: latest(readings(r, "WT")).unit == "kg"
    and weight_kg(latest(readings(r, "WT")).value, "kg") >= 52,
    ("weight", "heavy_lb"): lambda r: weight_kg(latest(readings(r, "WT")).value, "[lb_av]") >= 52,
    ("weight", "light_kg"): lambda r: latest(readings(r, "WT")).value <= 48,
    ("weight", "light_lb"): lambda r: latest(readings(r, "WT")).unit == "[lb_av]"
    and weight_kg(latest(readings(r, "WT")).value, "[lb_av]") <= 48,
    ("bp", "high"): lambda r: bp_is_high(latest(readings(r, "BP")).text),
    ("bp", "normal"): lambda r: bp_is_high(latest(readings(r, "BP")).text) is False,
    ("bp", "none"): lambda r: not readings(r, "BP"),
    ("colonoscopy", "recent"): lambda r: latest(readings(r, "45378", "Procedure")).when
    >= TEN_YEARS_AGO,
    ("colonoscopy", "old"): lambda r: latest(readings(r, "45378", "Procedure")).when
    < TEN_YEARS_AGO,
    ("colonoscopy", "none"): lambda r: not readings(r, "45378", "Procedure"),
}


def test_every_branch_has_a_stated_fact():
    branches = {(kind, b) for kind, (_, gens) in KINDS.items() for b in gens
                if kind != "demographics"}
    assert branches == set(BRANCH_FACTS)


@pytest.mark.parametrize("kind,branch", sorted(BRANCH_FACTS))
def test_each_branch_writes_a_chart_in_that_branch(kind, branch):
    fact = BRANCH_FACTS[(kind, branch)]
    for seed in SEEDS:
        records = chart(kind, branch, seed)
        assert fact(records), f"{kind}/{branch} seed {seed}"
        assert all(r["subject"]["reference"] == "Patient/S1" for r in records)
        stamps = [r.get("effectiveDateTime") or r.get("performedDateTime") or
                  r.get("authoredOn") or r.get("onsetDateTime") for r in records]
        assert all(s <= "2023-11-13T10:15:00+00:00" for s in stamps), "nothing after the clock"


def test_windowed_readings_keep_clear_of_the_24h_boundary():
    for seed in SEEDS:
        for branch in ("recent", "stale", "mild"):
            for reading in readings(chart("mg", branch, seed), "MG"):
                hours = (NOW - reading.when).total_seconds() / 3600
                assert not 23.5 < hours < 24.5


def test_charts_are_deterministic_and_seeds_vary_them():
    assert chart("k", "low", 3) == chart("k", "low", 3)
    assert chart("k", "low", 3) != chart("k", "low", 4)
    ids = [r["id"] for r in chart("glu", "values", 1)]
    assert len(ids) == len(set(ids))


def test_quota_hand_computed():
    assert quota({"a": 0.9, "b": 0.1}, 10) == {"a": 9, "b": 1}
    assert quota({"a": 0.6, "b": 0.2, "c": 0.2}, 30) == {"a": 18, "b": 6, "c": 6}
    assert quota({"x": 1 / 3, "y": 1 / 3, "z": 1 / 3}, 10) == {"x": 4, "y": 3, "z": 3}
    assert quota({"a": 0.7, "b": 0.2, "c": 0.1}, 4) == {"a": 3, "b": 1, "c": 0}


def test_the_official_mix_is_equal_shares_over_each_types_branches():
    assert OFFICIAL_MIX == equal_mix(TYPE_BRANCHES)
    for task_type, branches in TYPE_BRANCHES.items():
        assert set(branches) <= set(branches_of(KIND[task_type]))
        counts = quota(OFFICIAL_MIX[task_type], 30)
        assert max(counts.values()) - min(counts.values()) <= 1 and sum(counts.values()) == 30
    assert quota(OFFICIAL_MIX["task5"], 30) == dict.fromkeys(TYPE_BRANCHES["task5"], 5)


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.sampled_from("abcdef"), st.floats(0.01, 10), min_size=1),
       st.integers(0, 500))
def test_quota_sums_to_n_and_rounds_each_share(mix, n):
    counts = quota(mix, n)
    assert sum(counts.values()) == n
    total = sum(mix.values())
    assert all(abs(counts[b] - n * w / total) < 1 for b, w in mix.items())
