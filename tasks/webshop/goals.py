"""WebShop goals (``web_agent_site/engine/goal.py``) and the upstream split convention.

Synthetic goals: for every product (in load order) with an ``items_ins_v2`` instruction, one
goal per combination of its option values (option groups in sorted order, values in data
order, ``itertools.product``). The instruction text is
``"{instruction} with {name}: {value}, and {name2}: {value2}, and price lower than
{ceiling:.2f} dollars"`` (the option part absent when the product has no options). Human
goals: one per crowd-sourced instruction whose ``instruction_attributes`` is non-empty,
``instruction.strip(".") + price text``, options as the worker listed them (values only).

Price ceiling rule (both kinds): the product's price is its single price, or for a
``[low, high]`` range ``random.uniform(low, high)`` (``generate_product_prices``); the
candidate ceilings are the first four of ``10, 20, ..., 990`` strictly above that price; when
there are at least two, two are drawn (``random.sample``) and the larger is the ceiling,
otherwise the ceiling is 1,000,000 and the instruction has no price clause.

Order and seeds: the goal list is shuffled with ``random.seed(233)`` exactly as upstream's
``SimServer`` does, so goal *i* here is upstream's goal *i* for the same products. Upstream
draws the prices and ceilings from Python's global RNG without seeding it first, so its
ceilings differ from run to run; here they come from ``random.Random(PRICE_SEED)``, consumed
in upstream's call order (all range prices in load order, then one ceiling per product or
human instruction), which makes them reproducible. This is the one documented departure.

Splits (the convention of WebShop's IL/RL code): goals 0-499 are ``test``, 500-1499 ``dev``,
the rest ``train``.
"""

from __future__ import annotations

import itertools
import random
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass

from tasks.webshop.data import Catalog

__all__ = ["Goal", "PRICE_RANGE", "SHUFFLE_SEED", "PRICE_SEED", "SPLIT_BOUNDS",
           "product_prices", "price_ceiling", "synthetic_goals", "human_goals", "build_goals",
           "split_of"]

PRICE_RANGE = tuple(10.0 * i for i in range(1, 100))
"""Candidate price ceilings, 10 to 990 dollars."""
SHUFFLE_SEED = 233
"""``random.seed`` of upstream's goal shuffle."""
PRICE_SEED = 233
"""Seed of the price and ceiling draws (upstream leaves them unseeded)."""
SPLIT_BOUNDS = {"test": (0, 500), "dev": (500, 1500)}
"""Goal index ranges per split; every other index is ``train``."""
NO_CEILING = 1_000_000.0


@dataclass(frozen=True)
class Goal:
    """One shopping goal. `goal_options` holds ``(option group, value)`` pairs; the group is
    None for human goals, whose options upstream keeps as a bare list of values."""

    asin: str
    instruction_text: str
    attributes: tuple[str, ...]
    price_upper: float
    goal_options: tuple[tuple[str | None, str], ...]
    name: str = ""
    query: str = ""
    category: str = ""
    product_category: str = ""
    weight: float = 1.0
    kind: str = "synthetic"

    @property
    def option_values(self) -> tuple[str, ...]:
        return tuple(value for _, value in self.goal_options)


def product_prices(catalog: Catalog, rng: random.Random) -> dict[str, float]:
    """``{asin: price}``: the single price, or ``rng.uniform(low, high)`` for a range."""
    prices = {}
    for product in catalog.products:
        pricing = product.pricing
        if not pricing:
            prices[product.asin] = 100.0
        elif len(pricing) == 1:
            prices[product.asin] = pricing[0]
        else:
            prices[product.asin] = rng.uniform(*pricing[:2])
    return prices


def price_ceiling(price: float, rng: random.Random) -> tuple[float, str]:
    """``(ceiling, instruction suffix)`` by the price ceiling rule (module docstring)."""
    candidates = [p for p in PRICE_RANGE if p > price][:4]
    if len(candidates) < 2:
        return NO_CEILING, ""
    _, upper = sorted(rng.sample(candidates, 2))
    return upper, f", and price lower than {upper:.2f} dollars"


def synthetic_goals(catalog: Catalog, prices: Mapping[str, float],
                    rng: random.Random) -> list[Goal]:
    """Unshuffled synthetic goals, in upstream's order (see the module docstring)."""
    goals: list[Goal] = []
    for product in catalog.products:
        if product.instruction is None:
            continue
        attributes = tuple(product.instruction_attributes or ())
        if not attributes:
            raise ValueError(f"{product.asin}: a synthetic instruction without attributes")
        upper, price_text = price_ceiling(prices[product.asin], rng)
        names = sorted(product.options)
        for combination in itertools.product(*(product.options[n] for n in names)):
            pairs = tuple(zip(names, combination))
            option_text = ", and ".join(f"{name}: {value}" for name, value in pairs)
            option_text = f" with {option_text}" if option_text else ""
            text = f"{product.instruction}{option_text}{price_text}"
            goals.append(Goal(
                asin=product.asin, instruction_text=text, attributes=attributes,
                price_upper=upper, goal_options=pairs, name=product.title, query=product.query,
                category=product.category, product_category=product.product_category))
    counts: dict[str, int] = defaultdict(int)
    for goal in goals:
        for attribute in goal.attributes:
            counts[attribute] += 1
    return [_with_weight(g, sum(1.0 / counts[a] for a in g.attributes) / len(g.attributes))
            for g in goals]


def _with_weight(goal: Goal, weight: float) -> Goal:
    return Goal(**{**goal.__dict__, "weight": weight})


def human_goals(catalog: Catalog, prices: Mapping[str, float], rng: random.Random) -> list[Goal]:
    """Unshuffled human goals: one per crowd-sourced instruction with attributes."""
    goals = []
    for product in catalog.products:
        for entry in product.human_instructions:
            attributes = tuple(entry.get("instruction_attributes") or ())
            if not attributes:
                continue
            upper, price_text = price_ceiling(prices[product.asin], rng)
            goals.append(Goal(
                asin=product.asin,
                instruction_text=entry["instruction"].strip(".") + price_text,
                attributes=attributes, price_upper=upper,
                goal_options=tuple((None, v) for v in entry.get("instruction_options") or ()),
                name=product.name, query=product.query, category=product.category,
                product_category=product.product_category, kind="human"))
    return goals


def build_goals(catalog: Catalog, kind: str = "synthetic", *,
                seed: int = PRICE_SEED) -> tuple[tuple[Goal, ...], dict[str, float]]:
    """``(goals shuffled as upstream, {asin: price})`` for ``kind`` synthetic or human."""
    rng = random.Random(seed)
    prices = product_prices(catalog, rng)
    if kind == "synthetic":
        goals = synthetic_goals(catalog, prices, rng)
    elif kind == "human":
        goals = human_goals(catalog, prices, rng)
    else:
        raise ValueError(f"goal kind must be 'synthetic' or 'human', not {kind!r}")
    random.Random(SHUFFLE_SEED).shuffle(goals)
    return tuple(goals), prices


def split_of(index: int) -> str:
    """The split of goal `index`: 0-499 test, 500-1499 dev, else train."""
    for split, (low, high) in SPLIT_BOUNDS.items():
        if low <= index < high:
            return split
    return "train"
