"""The @2 graders give the reference grader's verdict on every episode of the differential
fixture (refsol_fixture/README.md: where the reference grader came from, how it was run),
and the official-protocol env reproduces the fixture's transcripts."""

import gzip
import hashlib
import json
from collections import Counter
from functools import cache
from pathlib import Path

import pytest

from harness.core import make_rng
from tasks import get_suite
from tasks.medagentbench.branches import task_record
from tasks.medagentbench.clinical import OFFICIAL_API_BASE
from tasks.medagentbench.data import load_patients
from tasks.medagentbench.graders_refsol import GRADERS
from tasks.medagentbench.grading import Case
from tasks.medagentbench.official_protocol import Turn

FIXTURE = Path(__file__).parent / "refsol_fixture" / "fixture.jsonl.gz"
CORE_BEHAVIOURS = {"oracle-refsol", "oracle-funcs", "finish-empty", "finish-minus-one",
                   "wrong-value", "date-forms", "permuted", "invalid-post-first", "extra-post",
                   "invalid-turn", "fenced", "number-forms", "mentions-post", "over-limit"}


@cache
def episodes():
    with gzip.open(FIXTURE, "rt", encoding="utf-8") as lines:
        return [json.loads(line) for line in lines]


@cache
def patients():
    return {p["id"]: p for p in load_patients()}


def case_of(row):
    task = get_suite(row["suite"]).task_def(row["task"])
    records = task_record(task.kind, task.branch, task.mrn,
                          make_rng(row["suite"], task.id, row["seed"])) if task.mrn else []
    return Case(task, patients().get(task.mrn), tuple(records))


def digest(records):
    return hashlib.sha256(json.dumps(list(records), sort_keys=True).encode()).hexdigest()


def transcript(row):
    turns = [Turn("user", "<the task prompt>")]
    for role, content in row["turns"]:
        turns.append(Turn("user", f"<GET reply {content}>") if role == "get-reply"
                     else Turn(role, content))
    return turns


def project_verdict(row, case):
    if row["status"] != "finished":
        return False  # the official harness grades only episodes that end with FINISH
    grade = GRADERS[case.task.task_type](case, transcript(row), row["result"], OFFICIAL_API_BASE)
    return grade.passed


def test_fixture_covers_the_behaviours_both_suites_and_both_verdicts():
    rows = episodes()
    assert len(rows) >= 600
    assert {r["suite"] for r in rows} == {"medagentbench-v1@2", "medagentbench-v2@2"}
    assert CORE_BEHAVIOURS <= {r["behaviour"] for r in rows}
    by_type = Counter((r["task"].split("_")[0], r["refsol"]) for r in rows)
    for n in range(1, 11):
        assert by_type[(f"task{n}", True)] >= 20 and by_type[(f"task{n}", False)] >= 20
    assert Counter(r["behaviour"] for r in rows if r["refsol"])["oracle-refsol"] == 400


def test_project_graders_agree_with_the_reference_grader_on_every_episode():
    disagreements, stale = [], []
    for row in episodes():
        case = case_of(row)
        if digest(case.records) != row["chart"]:
            stale.append(row["task"])
            continue
        if project_verdict(row, case) != row["refsol"]:
            disagreements.append((row["suite"], row["task"], row["behaviour"], row["refsol"]))
    assert not stale, f"charts changed since the fixture was made ({len(stale)}): regenerate it"
    assert disagreements == [], f"{len(disagreements)} of {len(episodes())} disagree"


def test_oracle_conventions_differ_under_the_reference_grader():
    """The two payload conventions: funcs_v1.json's fails where the reference grader wants a
    plain-string route or a single note object (tasks 5, 8, 9 with an order)."""
    rows = episodes()
    funcs = Counter(r["task"].split("_")[0] for r in rows
                    if r["behaviour"] == "oracle-funcs" and not r["refsol"])
    assert set(funcs) <= {"task5", "task8", "task9"} and funcs["task8"] == 40


@pytest.mark.parametrize("k", range(0, 2400, 41))
def test_env_reproduces_the_fixture_transcript(k):
    row = episodes()[k]
    suite = get_suite(row["suite"])
    env = suite.make_env(row["task"])
    env.reset(seed=row["seed"])
    result = None
    for role, content in row["turns"]:
        if role == "agent":
            result = env.step(content)
    got = env.transcript()[1:]
    assert len(got) == len(row["turns"])
    for (role, content), turn in zip(row["turns"], got):
        if role == "get-reply":
            text = turn.content
            assert content == f"sha256:{hashlib.sha256(text.encode()).hexdigest()}:{len(text)}"
        else:
            assert (role, content) == tuple(turn)
    status = ("invalid" if result.info["invalid"] else "finished") if result.terminated else \
        "limit"
    assert status == row["status"] and result.info["won"] == row["refsol"]
    env.close()
