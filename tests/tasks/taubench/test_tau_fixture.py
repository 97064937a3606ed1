"""The differential fixture: our tools against upstream's on 550 generated calls per domain.

``fixtures/<domain>_tools.json`` holds call sequences (from ``fixture_calls.generate``, seed 31:
valid and invalid arguments, every tool, missing and unknown arguments), each run on a fresh
database by upstream's tool code (sierra-research/tau-bench 59a200c, run outside this
repository): the sha256 of every output and upstream's ``consistent_hash`` of the database
after each sequence. Equal outputs and equal hashes here mean equal behaviour on those calls.
"""

from __future__ import annotations

import copy
import hashlib
import json
from pathlib import Path

import pytest

from tasks.taubench.data import data_dir, database_digest, database_hash, load_domain
from tasks.taubench.grading import call_tool, toolbox

FIXTURES = Path(__file__).parent / "fixtures"


def _fixture(domain: str) -> dict:
    return json.loads((FIXTURES / f"{domain}_tools.json").read_text())


def _check(domain: str, sequences: list[dict]) -> None:
    loaded = load_domain(domain, str(data_dir()))
    tools = toolbox(domain)
    for number, sequence in enumerate(sequences):
        database = loaded.fresh_database()
        for call, expected in zip(sequence["calls"], sequence["outputs"]):
            output = call_tool(tools, database, call["name"], copy.deepcopy(call["kwargs"]))
            digest = hashlib.sha256(output.encode()).hexdigest()
            assert digest == expected["sha256"], (number, call, output[:200], expected["head"])
        assert database_hash(database) == sequence["database_hash"], (number, sequence["calls"])


def test_fixture_covers_every_tool_with_500_calls():
    for domain in ("retail", "airline"):
        sequences = _fixture(domain)["sequences"]
        names = {c["name"] for s in sequences for c in s["calls"]}
        assert sum(len(s["calls"]) for s in sequences) >= 500
        assert names == set(toolbox(domain).functions)
        errors = [o for s in sequences for o in s["outputs"] if o["head"].startswith("Error")]
        assert len(errors) > 100  # invalid arguments are exercised, not only happy paths


def test_retail_tools_equal_upstream():
    _check("retail", _fixture("retail")["sequences"])


def test_airline_tools_equal_upstream_first_sequences():
    _check("airline", _fixture("airline")["sequences"][:8])


@pytest.mark.slow
def test_airline_tools_equal_upstream_all():
    _check("airline", _fixture("airline")["sequences"])


def test_database_hash_matches_upstream_canonical_form_by_hand():
    # upstream: sha256(str(to_hashable(data))); dicts become key-sorted tuples of pairs
    data = {"b": [1, {"y": 2.5, "x": "s"}], "a": {}}
    expected = hashlib.sha256(str((("a", ()), ("b", (1, (("x", "s"), ("y", 2.5)))))).encode())
    assert database_hash(data) == expected.hexdigest()


def test_digest_keeps_the_equalities_of_the_hash():
    base = {"u": {"amount": 1, "flag": True, "items": ["a", "b"]}}
    variants = [{"u": {"amount": 1.0, "flag": True, "items": ["a", "b"]}},
                {"u": {"amount": 1, "flag": 1, "items": ["a", "b"]}},
                {"u": {"amount": 1, "flag": True, "items": ["b", "a"]}},
                {"u": {"items": ["a", "b"], "flag": True, "amount": 1}}]
    for variant in variants:
        assert (database_hash(variant) == database_hash(base)) == (
            database_digest(variant) == database_digest(base)), variant
