"""WebShop's action syntax: ``search[keywords]`` and ``click[element]``."""

from __future__ import annotations

import re

__all__ = ["parse_action", "search_action", "click_action"]

_ACTION = re.compile(r"(.+)\[(.+)\]")


def parse_action(action: str) -> tuple[str, str | None]:
    """``(name, argument)`` as upstream's ``engine.parse_action``: ``re.match`` of
    ``(.+)\\[(.+)\\]`` (greedy, anchored at the start only); argument None when the text does
    not match."""
    match = _ACTION.match(action)
    if match is None:
        return action, None
    return match.group(1), match.group(2)


def search_action(text: str) -> str:
    """A ``search[...]`` action for `text` that `parse_action` reads back (brackets and line
    breaks, which the pattern cannot carry, become spaces)."""
    return "search[" + re.sub(r"[\[\]\r\n]", " ", text) + "]"


def click_action(element: str) -> str:
    return f"click[{element}]"
