from hypothesis import given, settings, strategies as st

from signals.prompts import (ROLE_LABELS, parse_batch_scores, parse_number, parse_ranking,
                             parse_role, state_prompt)


@settings(max_examples=200, deadline=None)
@given(st.text(), st.integers(1, 6))
def test_parsers_never_raise_and_stay_in_range(text, n):
    value = parse_number(text, 0, 10)
    assert value is None or 0 <= value <= 10
    scores = parse_batch_scores(text, n)
    assert len(scores) == n and all(s is None or 0 <= s <= 10 for s in scores)
    order = parse_ranking(text, n)
    assert len(set(order)) == len(order) and all(0 <= k < n for k in order)
    assert parse_role(text) in (None, *ROLE_LABELS)


def test_parsers_by_hand():
    assert parse_number("I give it 7/10", 0, 10) == 7.0
    assert parse_number("12", 0, 10) is None and parse_number("", 0, 10) is None
    assert parse_batch_scores("1: 4\n(2) = 9\n2: 1\n5: 3", 3) == [4.0, 9.0, None]
    assert parse_ranking("3 > 1 > 3 > 9 > 2", 3) == [2, 0, 1]
    assert parse_role("It is No Progress, maybe decisive") == "no-progress"
    assert parse_role("REGRESSION") == "regression" and parse_role("good move") is None


def test_state_prompt_holds_rules_history_and_candidates(point_factory):
    point = point_factory(3)[2]
    system, user = state_prompt(point)
    assert system == {"role": "system", "content": "Reach the goal."}
    assert "Action: Down" in user["content"] and point.observation in user["content"]
    assert "Left, Down, Right, Up" in user["content"]
