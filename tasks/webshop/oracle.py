"""The scripted expert behind ``WebShopEnv.oracle_action()``.

From the current page it does what a shopper who knows the goal's product would do:

- start page: search for the instruction text; if the goal's product is not among that
  search's results, search for the product's title instead (`expert_query`);
- results page: open the goal's product when it is on this page, else page towards it with
  ``Next >``/``< Prev``; go ``Back to Search`` when it is not in the results at all;
- the goal's item page: select each goal option not yet selected, then ``Buy Now``;
  another product's item page or a sub page: ``< Prev``.

When neither query finds the product (it never happens on the 1000-product set), the expert
searches the instruction and buys the first result as it comes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tasks.webshop.actions import parse_action, search_action
from tasks.webshop.pages import PRODUCT_WINDOW

if TYPE_CHECKING:
    from tasks.webshop.env import WebShopEnv

__all__ = ["expert_query", "expert_action"]


def expert_query(env: WebShopEnv) -> tuple[str, bool]:
    """``(query, finds the goal's product)``: the instruction if its search lists the product,
    else the product's title if that does, else the instruction."""
    goal = env.goal
    for text in (goal.instruction_text, env.world.catalog.get(goal.asin).title):
        keywords = (parse_action(search_action(text))[1] or "").lower()
        if goal.asin in env.world.search(keywords):
            return text, True
    return goal.instruction_text, False


def _pending_option(env: WebShopEnv) -> str | None:
    clickables = env.view().clickables
    chosen = dict(env.state.options)
    for group, value in env.goal.goal_options:
        value = value.lower()
        where = clickables.get(value)
        if where is None or where == "button":
            continue
        if group is None:  # human goal: values only
            if value not in chosen.values():
                return value
        elif where == group and chosen.get(group) != value:
            return value
    return None


def expert_action(env: WebShopEnv) -> str:
    """The expert's next action on `env`'s current page."""
    state, goal = env.state, env.goal
    if state.kind == "search":
        return search_action(expert_query(env)[0])
    if state.kind == "results":
        hits = env.world.search(state.keywords or "")
        if goal.asin not in hits:
            if not expert_query(env)[1] and hits:  # unreachable: take the first result
                return f"click[{hits[0].lower()}]" if state.page == 1 else "click[< prev]"
            return "click[back to search]"
        target_page = hits.index(goal.asin) // PRODUCT_WINDOW + 1
        if target_page == state.page:
            return f"click[{goal.asin.lower()}]"
        return "click[next >]" if target_page > state.page else "click[< prev]"
    if state.kind == "item":
        if state.asin != goal.asin and expert_query(env)[1]:
            return "click[< prev]"
        value = _pending_option(env) if state.asin == goal.asin else None
        return f"click[{value}]" if value is not None else "click[buy now]"
    if state.kind == "sub":
        return "click[< prev]"
    return "click[buy now]"
