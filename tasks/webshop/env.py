"""The WebShop text environment (``web_agent_site/envs/web_agent_text_env.py``, ``text`` mode).

Actions are ``search[keywords]`` and ``click[element]``, parsed as upstream's ``parse_action``
does (``re.match(r"(.+)\\[(.+)\\]")``, the argument lower-cased). ``search[...]`` with a
non-empty argument runs a search where the page has the search bar (the start page only);
``click[x]`` works when ``x`` is one of the page's clickables (lower-cased button texts,
product asins, option values) other than ``search``. Anything else changes nothing: reward 0,
the same observation, ``info["invalid"] = True``. One departure: upstream's ``step`` also runs
a ``search[...]`` typed on a page without a search bar; here that is invalid, as the page's
own controls say.

Navigation follows upstream's ``SimServer.receive``: ``Back to Search`` returns to the start
page; ``Next >``/``< Prev`` page through the (at most 50) results, ``< Prev`` on an item page
returns to its results page (options cleared), on a sub page to the item page; a product asin
opens its item page; an option value selects it in its group; ``Description``/``Features``/
``Reviews`` open the sub pages; ``Buy Now`` ends the episode with the reward
``tasks.webshop.reward.REWARDS[world.reward_version]`` (2: upstream master's
``compute_reward_master``; 1: the earlier ``compute_reward``) for the product at its
goal-generation price with the selected options. ``won`` is ``reward == 1.0`` (upstream's success), ``score`` the reward.

``info`` also holds ``admissible_actions``, ``steps``, ``page`` (the page kind),
``noun_tagger`` (which title-noun step the reward uses), ``reward_version``,
``comparability_note`` (on ``webshop@2`` without upstream's spaCy tagger; the leaderboard
lists it) and, after ``Buy Now``,
``reward_info`` (upstream's verbose reward components) and ``purchased`` (asin, options).
"""

from __future__ import annotations

import functools
import json
import threading
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from harness.core import HarnessError
from tasks.base import StepResult
from tasks.webshop.actions import parse_action, search_action
from tasks.webshop.data import Catalog, Product
from tasks.webshop.goals import Goal
from tasks.webshop.nouns import UPSTREAM_TAGGER, NounTagger, default_tagger
from tasks.webshop.oracle import expert_action
from tasks.webshop.pages import (BACK_TO_SEARCH, BUY_NOW, NEXT_PAGE, PREV_PAGE, PRODUCT_WINDOW,
                                 SUB_PAGES, PageView, done_page, item_page, results_page,
                                 search_page, sub_page)
from tasks.webshop.reward import REWARDS, Reward
from tasks.webshop.search import SEARCH_RETURN_N, BM25Index

__all__ = ["MAX_STEPS", "PageState", "WebShopWorld", "WebShopEnv"]

MAX_STEPS = 15
"""Step limit per episode (verl-agent/GiGPO's WebShop setting; upstream's gym env has none)."""
_SUB = {name.lower(): name for name in SUB_PAGES}


@dataclass(frozen=True)
class PageState:
    """Where the episode is. `kind` is ``search``, ``results``, ``item``, ``sub`` or
    ``done``; `keywords`/`page` the last search and results page; `options` the selected
    ``(group, value)`` pairs in selection order."""

    kind: str = "search"
    keywords: str | None = None
    page: int = 1
    asin: str | None = None
    options: tuple[tuple[str, str], ...] = ()
    sub: str | None = None
    reward: float | None = None


class WebShopWorld:
    """What every episode on one catalogue shares: products, prices, the search index."""

    def __init__(self, catalog: Catalog, prices: Mapping[str, float],
                 tagger: NounTagger | None = None, index: BM25Index | None = None,
                 reward_version: int = 2):
        self.catalog = catalog
        self.prices = dict(prices)
        self.tagger = tagger or default_tagger()
        self.reward_version = reward_version  # the key of `reward.REWARDS` (2: master's)
        self.comparability_note = (
            f"noun tagger {self.tagger.name}, not upstream's spaCy en_core_web_sm (install the "
            "webshop extra)" if reward_version == 2
            and not self.tagger.name.startswith(UPSTREAM_TAGGER) else None)
        self._index = index
        self._index_lock = threading.Lock()
        self._search = functools.lru_cache(maxsize=4096)(self._search_uncached)

    @property
    def index(self) -> BM25Index:
        """The catalogue's search index, built at the first search (listing the suite, or
        reading its tasks, needs none)."""
        if self._index is None:
            with self._index_lock:  # two first searches at once build it once
                if self._index is None:
                    products = self.catalog.products
                    self._index = BM25Index([p.search_text() for p in products],
                                            [p.asin for p in products])
        return self._index

    def _search_uncached(self, keywords: str) -> tuple[str, ...]:
        products = self.catalog.products
        return tuple(products[i].asin for i in self.index.search(keywords, SEARCH_RETURN_N))

    def search(self, keywords: str) -> tuple[str, ...]:
        """Asins of the top results for `keywords` (at most 50), best first (cached)."""
        return self._search(keywords)

    def clear_cache(self) -> None:
        """Forget cached searches (benchmarks time cold searches)."""
        self._search.cache_clear()


class WebShopEnv:
    """One goal of WebShop as a text environment (see the module docstring)."""

    free_form_actions = True
    """``search[...]`` takes any text: `admissible_actions` lists one example search only."""

    def __init__(self, world: WebShopWorld, goal: Goal, max_steps: int = MAX_STEPS):
        self.world = world
        self.goal = goal
        self.max_steps = max_steps
        self.state = PageState()
        self._steps = 0
        self._done = False
        self._reward_info: dict[str, Any] | None = None

    # -- pages ---------------------------------------------------------------------------------
    def view(self, state: PageState | None = None) -> PageView:
        """The rendered page of `state` (default: the current one)."""
        state = state or self.state
        text = self.goal.instruction_text
        if state.kind == "search":
            return search_page(text)
        if state.kind == "results":
            hits = self.world.search(state.keywords or "")
            first = (state.page - 1) * PRODUCT_WINDOW
            shown = [self.world.catalog.get(a) for a in hits[max(first, 0):first + PRODUCT_WINDOW]]
            return results_page(text, shown, state.page, len(hits))
        if state.kind == "item":
            return item_page(text, self._product(state))
        if state.kind == "sub":
            return sub_page(text, self._product(state), state.sub or "")
        return done_page(state.asin or "", dict(state.options), state.reward or 0.0)

    def _product(self, state: PageState) -> Product:
        return self.world.catalog.get(state.asin or "")

    # -- transitions ---------------------------------------------------------------------------
    def _transition(self, state: PageState, action: str) -> PageState | None:
        name, argument = parse_action(action)
        argument = argument.lower() if argument is not None else None
        view = self.view(state)
        if name == "search" and argument:
            if not view.has_search_bar:
                return None
            return PageState("results", keywords=argument, page=1)
        if name == "click" and argument in view.clickables and argument != "search":
            return self._click(state, argument, view.clickables[argument])
        return None

    def _click(self, state: PageState, target: str, what: str) -> PageState:
        if target == BUY_NOW.lower():
            return replace(state, kind="done")
        if target == BACK_TO_SEARCH.lower():
            return PageState()
        if target in (NEXT_PAGE.lower(), PREV_PAGE.lower()) and state.kind == "results":
            step = 1 if target == NEXT_PAGE.lower() else -1
            return replace(state, page=state.page + step)
        if target == PREV_PAGE.lower() and state.kind == "sub":
            return replace(state, kind="item", sub=None)
        if target == PREV_PAGE.lower() and state.kind == "item":
            return replace(state, kind="results", asin=None, options=())
        if target in _SUB:
            return replace(state, kind="sub", sub=_SUB[target])
        if what == "product":
            return replace(state, kind="item", asin=target.upper())
        if what != "button":
            options = dict(state.options)
            options[what] = target
            return replace(state, kind="item", options=tuple(options.items()))
        return replace(state, kind="item")

    def _buy(self, state: PageState) -> Reward:
        product = self._product(state)
        return REWARDS[self.world.reward_version](
            product, self.goal, self.world.prices[product.asin], dict(state.options),
            self.world.tagger)

    # -- Env contract --------------------------------------------------------------------------
    def reset(self, *, seed: int) -> tuple[str, dict[str, Any]]:
        """Start on the search page. The goal is fixed by the task and the pages are
        deterministic, so `seed` changes nothing."""
        self.state, self._steps, self._done, self._reward_info = PageState(), 0, False, None
        return self.view().text, self._info(invalid=False)

    def step(self, action: str) -> StepResult:
        if self._done:
            raise HarnessError("step() called after the episode ended; call reset() first")
        new = self._transition(self.state, action) if isinstance(action, str) else None
        reward, invalid = 0.0, new is None
        if new is not None:
            if new.kind == "done":
                bought = self._buy(new)
                new, reward = replace(new, reward=bought.total), float(bought.total)
                self._reward_info = bought.info()
            self.state = new
        self._steps += 1
        terminated = self.state.kind == "done"
        truncated = not terminated and self._steps >= self.max_steps
        self._done = terminated or truncated
        return StepResult(self.view().text, reward, terminated, truncated, self._info(invalid))

    def admissible_actions(self) -> list[str]:
        """``click[x]`` for every clickable of the page. Any ``search[...]`` is valid where
        there is a search bar (`free_form_actions`); the one listed is the instruction text.
        Listing the expert's own query would leak the product's title to other policies."""
        if self.state.kind == "done":
            return []
        view = self.view()
        actions = [search_action(self.goal.instruction_text)] if view.has_search_bar else []
        return actions + [f"click[{c}]" for c in view.clickables if c != "search"]

    def _info(self, invalid: bool) -> dict[str, Any]:
        reward = self.state.reward if self.state.kind == "done" else None
        info: dict[str, Any] = {
            "won": reward == 1.0, "score": float(reward or 0.0), "invalid": invalid,
            "admissible_actions": self.admissible_actions(), "steps": self._steps,
            "page": self.state.kind, "noun_tagger": self.world.tagger.name,
            "reward_version": self.world.reward_version,
        }
        if self.world.comparability_note:
            info["comparability_note"] = self.world.comparability_note
        if self._reward_info is not None:
            info["reward_info"] = self._reward_info
            info["purchased"] = {"asin": self.state.asin, "options": dict(self.state.options)}
        return info

    def state_key(self) -> str:
        """The page state as canonical JSON."""
        return json.dumps(self.state.__dict__, sort_keys=True)

    def snapshot(self) -> tuple:
        return (self.state, self._steps, self._done, self._reward_info)

    def restore(self, snapshot: tuple) -> None:
        self.state, self._steps, self._done, self._reward_info = snapshot

    def oracle_action(self) -> str:
        """The scripted expert's next action (`tasks.webshop.oracle.expert_action`)."""
        return expert_action(self)
