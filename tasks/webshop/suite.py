"""The WebShop suites.

- ``webshop@2`` (`WebShopSuite`): the official catalogue found by `tasks.webshop.data`
  (``$WEBSHOP_DATA``, else the ``harness data pull webshop`` cache, else
  ``../shared/data/webshop``: the real 1000-product set, 6,910 synthetic goals), synthetic
  goals, upstream's split convention (goals 0-499 test, 500-1499 dev, the rest train), and
  upstream master's reward (`reward.compute_reward_master`, fixture-checked).
- ``webshop@1`` (`WebShopSuiteV1`): the earlier variant, the same except its reward
  (`reward.compute_reward`: a hybrid option match that can credit wrong options and exceed 1). The catalogue it ran on is named in ``description`` and in
  every task's metadata (``data``): a different copy (the full 1.18M-product download) gives
  different tasks under the same id, so compare scores only on the same data.
- `WebShopHumanSuite` (``webshop-human``): the crowd-sourced goals of the same catalogue.
  The 1000-product set carries only 13 of them (all ``test``), so it is not registered.
- ``webshop-synthetic@1`` (`WebShopSyntheticSuite`): a generated 1,000-product catalogue
  (`tasks.webshop.synthetic`, seed 0) for the quickstart and for runs without the data;
  ``WebShopSyntheticSuite(n_products=100_000)`` is the same generator at scale.

Task ids are ``goal-NNNNN`` (the goal's index in upstream's shuffled order); ``task_type`` is
the product's WebShop category (beauty, electronics, fashion, garden, grocery).
"""

from __future__ import annotations

import os
from dataclasses import replace
from typing import Any

from tasks.base import Comparability, SuiteBase, TaskSpec
from tasks.webshop.data import Catalog, load_catalog
from tasks.webshop.env import MAX_STEPS, WebShopEnv, WebShopWorld
from tasks.webshop.goals import Goal, build_goals, split_of
from tasks.webshop.synthetic import generate_catalog

__all__ = ["INSTRUCTIONS", "WebShopSuite", "WebShopSuiteV1", "WebShopHumanSuite",
           "WebShopSyntheticSuite", "task_id", "COMPARABILITY", "COMPARABILITY_V1",
           "COMPARABILITY_SYNTHETIC"]

COMPARABILITY = Comparability(
    engine="upstream", tasks="upstream", grader="upstream", protocol="rebuilt", data="upstream",
    comparable="comparable with published WebShop scores on the 1,000-product set's synthetic "
               "goals only (price ceilings seeded; 15-step limit; spaCy tagger needed)",
    evidence="tests/tasks/webshop/test_webshop_reward_master.py")
COMPARABILITY_V1 = Comparability(
    engine="upstream", tasks="upstream", grader="rebuilt", protocol="rebuilt", data="upstream",
    comparable="not comparable: its option reward differs from upstream's (use webshop@2)",
    evidence="tests/tasks/webshop/test_webshop_reward_master.py")
COMPARABILITY_SYNTHETIC = Comparability(
    engine="upstream", tasks="generated", grader="rebuilt", protocol="rebuilt",
    data="generated", comparable="not comparable: a generated catalogue",
    generated_records=True)

INSTRUCTIONS = (
    "You are shopping on WebShop, a simulated online store, for the product the instruction "
    "describes. Each observation is the current web page as its visible texts separated by "
    "' [SEP] '. Answer with exactly one action: search[your keywords] (only on the page with "
    "the search bar) or click[element], where element is one of the page's clickable texts, "
    "lower-cased: a button such as 'back to search', 'next >', '< prev', 'description', "
    "'buy now', a product id from the results, or an option value such as a size or colour. "
    "Choose the options the instruction asks for before clicking 'buy now'; buying ends the "
    "episode and the reward scores how well the product, its options and its price match."
)


def task_id(index: int) -> str:
    return f"goal-{index:05d}"


def _metadata(goal: Goal, index: int, source: str) -> dict[str, Any]:
    return {"index": index, "asin": goal.asin, "instruction": goal.instruction_text,
            "attributes": list(goal.attributes), "price_upper": goal.price_upper,
            "goal_options": [[g, v] for g, v in goal.goal_options], "goal_kind": goal.kind,
            "data": source}


class WebShopSuite(SuiteBase):
    """WebShop on an official catalogue with synthetic goals (module docstring)."""

    name = "webshop"
    version = 2
    comparability = COMPARABILITY
    trivial_actions = {"buy-now": "click[buy now]", "back-to-search": "click[back to search]"}
    instructions = INSTRUCTIONS
    goal_kind = "synthetic"

    def __init__(self, path: str | os.PathLike | None = None, *, catalog: Catalog | None = None,
                 max_steps: int = MAX_STEPS):
        catalog = catalog if catalog is not None else self._catalog(path)
        goals, prices = build_goals(catalog, self.goal_kind)
        self.catalog, self.goals, self.max_steps = catalog, goals, max_steps
        self.world = WebShopWorld(catalog, prices, reward_version=self.reward_version)
        self.description = (f"WebShop text mode, {self.goal_kind} goals, {len(catalog)} "
                            f"products ({catalog.source}), reward v{self.reward_version}, "
                            f"noun tagger {self.world.tagger.name}")
        if self.comparability.grader == "upstream" and self.world.comparability_note:
            # without upstream's tagger the type term is not upstream's: say so per instance
            self.comparability = replace(self.comparability, grader="rebuilt",
                                         comparable=f"not comparable: "
                                                    f"{self.world.comparability_note}")
        super().__init__([TaskSpec(task_id(i), split_of(i), g.category or "unknown",
                                   _metadata(g, i, catalog.source))
                          for i, g in enumerate(goals)])

    def _catalog(self, path: str | os.PathLike | None) -> Catalog:
        return load_catalog(path)

    def goal(self, task: str) -> Goal:
        return self.goals[self.task(task).metadata["index"]]

    def make_env(self, task_id: str) -> WebShopEnv:
        return WebShopEnv(self.world, self.goal(task_id), self.max_steps)


    @property
    def reward_version(self) -> int:
        """The key of `tasks.webshop.reward.REWARDS` this suite scores purchases with."""
        return self.version


class WebShopSuiteV1(WebShopSuite):
    """``webshop@1``: the earlier variant (its own option reward, `reward.compute_reward`)."""

    version = 1
    comparability = COMPARABILITY_V1


class WebShopHumanSuite(WebShopSuite):
    """The crowd-sourced goals of an official catalogue (upstream's ``human_goals=True``)."""

    name = "webshop-human"
    goal_kind = "human"


class WebShopSyntheticSuite(WebShopSuite):
    """WebShop's protocol on a generated catalogue (`tasks.webshop.synthetic`)."""

    name = "webshop-synthetic"
    version = 1
    comparability = COMPARABILITY_SYNTHETIC

    def __init__(self, n_products: int = 1000, seed: int = 0, *, max_steps: int = MAX_STEPS):
        self.n_products, self.seed = n_products, seed
        super().__init__(catalog=generate_catalog(n_products, seed), max_steps=max_steps)
