"""The viewer's query helpers on hand-made cases: divergence, error kinds, filter state in the
URL, the LIKE pattern of the search."""

from __future__ import annotations

from urllib.parse import parse_qsl

import pytest

from harness.records import StepRecord
from harness.view.queries import EpisodeFilter, _like, error_kind, first_divergence


def _steps(*pairs: tuple[str, str]) -> list[StepRecord]:
    return [StepRecord(t, obs, action, action, 0.0, False, False, {})
            for t, (obs, action) in enumerate(pairs)]


@pytest.mark.parametrize("a, b, expected", [
    (_steps(("s0", "up"), ("s1", "up")), _steps(("s0", "up"), ("s1", "up")), None),
    (_steps(("s0", "up"), ("s1", "up")), _steps(("s0", "up"), ("s1", "down")), 1),
    (_steps(("s0", "up")), _steps(("s0'", "up")), 0),              # observations differ
    (_steps(("s0", "up")), _steps(("s0", "up"), ("s1", "up")), 1),  # one ended first
    ([], _steps(("s0", "up")), 0),
    ([], [], None),
])
def test_first_divergence(a, b, expected):
    assert first_divergence(a, b) == expected
    assert first_divergence(b, a) == expected


@pytest.mark.parametrize("status, error, kind", [
    ("timeout", "episode exceeded 0.2s", "timeout"),
    ("error", "Traceback (most recent call last):\n  File \"x\", line 1\nValueError: bad\n",
     "ValueError"),
    ("error", "Traceback ...\nharness.core.HarnessError: no\n\n", "harness.core.HarnessError"),
    ("error", "KeyboardInterrupt", "KeyboardInterrupt"),
    ("error", None, "error"),
    ("error", "  !! 3 things went wrong", "!! 3 things went wrong"),
])
def test_error_kind(status, error, kind):
    assert error_kind(status, error) == kind


def test_filter_round_trips_through_the_query_string():
    selected = EpisodeFilter(run="r 1", policy="a&b", success="0", q="50% <x>", page=3)
    back = EpisodeFilter.from_query(dict(parse_qsl(selected.query_string())))
    assert back == selected
    assert "page" not in EpisodeFilter(run="r").query_string()
    assert dict(parse_qsl(selected.query_string(page=4)))["page"] == "4"


@pytest.mark.parametrize("params, expected", [
    ({"page": "x"}, EpisodeFilter()),
    ({"page": "-2"}, EpisodeFilter()),
    ({"success": "yes", "flag": "drop table"}, EpisodeFilter()),
    ({"success": "1", "flag": "invalid", "unknown": "z"}, EpisodeFilter(success="1",
                                                                       flag="invalid")),
])
def test_filter_ignores_what_it_does_not_know(params, expected):
    assert EpisodeFilter.from_query(params) == expected


def test_like_pattern_escapes_wildcards():
    assert _like("a%b_c!d") == "%a!%b!_c!!d%"
