"""WebShop's purchase reward, after ``web_agent_site/engine/goal.py:get_reward``.

Two variants share the type and attribute terms and the price term:

- `compute_reward_master` (``webshop@2``): upstream master's ``get_reward``, quirks included.
  Option matches count over the *goal's* options: a goal option counts (once) when some
  purchased value, colour-normalised, has thefuzz ``token_set_ratio > 85`` with it. A
  synthetic goal's options are ``(group, value)`` pairs (master iterates the goal dict's
  ``items()``): `normalize_color` of a pair is a colour equal to the group or the value, else
  the pair itself, whose ``str()`` thefuzz scores (``"('size', 'large')"`` -> ``size
  large``). Sizes are matched fuzzily like every group; there is no text fallback, so the
  total never exceeds 1. On the 500 test goals of the 1000-product set the exact target
  purchase scores 1.0 on 480 (a value such as ``standard``, normalised to ``tan`` on the
  purchased side only, does not match). Equal to upstream master on every case of
  ``tests/tasks/webshop/data/reward_master_fixture.jsonl``.
- `compute_reward` (``webshop@1``, the earlier variant): the terms below.

For ``webshop@1``:

``total = r_type * (attribute matches + option matches + [price <= ceiling])
                 / (n goal attributes + n goal options + 1)``

- Attribute matches: a goal attribute counts when some product attribute has thefuzz
  ``token_set_ratio > 85`` with it, else when it is a substring of the lower-cased title,
  the space-joined bullet points or the description (counted once either way).
- Option matches: for each *purchased* option ``(group, value)``, both sides colour-normalised
  (`normalize_color`: the first `COLOR_SET` word contained in the value, else the value):
  a ``size`` group must equal a goal value exactly; any other group needs a goal value with
  ``token_set_ratio > 85``; failing that, the value counts when it is a substring of the
  lower-cased title, bullet points or description. (Counting runs over purchased options, so
  a product with more option groups than the goal can push the total above 1, which
  master's cannot.)
- ``r_type`` (`type_reward`): ``query_match`` = same scraping query; ``category_match`` = at
  least two shared ``›``-separated category levels; ``title_score`` = shared title nouns /
  goal title nouns (0.2 when the goal title has none; nouns from `tasks.webshop.nouns`).
  ``r_type`` is 1.0, then 0.5 when neither match holds and ``title_score <= 0.2``, then 0.1
  when ``title_score < 0.1``, then 0.0 when ``title_score == 0`` (later rules override).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass

from thefuzz import fuzz

from tasks.webshop.data import Product
from tasks.webshop.goals import Goal
from tasks.webshop.nouns import NounTagger, default_tagger

__all__ = ["COLOR_SET", "EXACT_MATCH_OPTIONS", "FUZZY_THRESHOLD", "normalize_color",
           "token_set_ratio", "TypeReward", "type_reward", "attribute_reward", "option_reward",
           "master_option_reward", "Reward", "compute_reward", "compute_reward_master",
           "REWARDS"]

FUZZY_THRESHOLD = 85
"""A fuzzy match needs ``token_set_ratio`` strictly above this."""
EXACT_MATCH_OPTIONS = ("size",)
"""Option groups matched exactly instead of fuzzily."""
COLOR_SET = (
    "alabaster", "apricot", "aqua", "ash", "asphalt", "azure", "banana", "beige", "black",
    "blue", "blush", "bordeaux", "bronze", "brown", "burgundy", "camel", "camo", "caramel",
    "champagne", "charcoal", "cheetah", "chestnut", "chocolate", "christmas", "coffee",
    "cognac", "copper", "coral", "cranberry", "cream", "crystal", "dark", "denim", "eggplant",
    "elephant", "espresso", "fuchsia", "gold", "granite", "grape", "graphite", "grass", "gray",
    "green", "grey", "heather", "indigo", "ivory", "ivy", "khaki", "lavender", "lemon",
    "leopard", "light", "lilac", "lime", "magenta", "maroon", "mauve", "merlot", "midnight",
    "mint", "mocha", "multicolor", "mushroom", "mustard", "natural", "navy", "nude", "olive",
    "orange", "peach", "pewter", "pink", "plum", "purple", "rainbow", "red", "rose", "royal",
    "rust", "sand", "sapphire", "seashell", "silver", "skull", "slate", "steel", "stone",
    "stonewash", "sunflower", "tan", "taupe", "teal", "tiger", "turquoise", "violet", "walnut",
    "wheat", "white", "wine", "yellow",
)
"""Upstream's ``normalize.py`` colour list, in its order (the first contained one wins)."""


def normalize_color(text: str) -> str:
    """The first colour of `COLOR_SET` that is a substring of `text`, else `text` itself
    (so ``"standard"`` becomes ``"tan"``, as upstream)."""
    for color in COLOR_SET:
        if color in text:
            return color
    return text


def token_set_ratio(a: str, b: str) -> int:
    """thefuzz's ``token_set_ratio`` (0-100, rounded), the score upstream thresholds."""
    return fuzz.token_set_ratio(a, b)


def _in_text(needle: str, product: Product) -> bool:
    return (needle in product.title.lower() or needle in " ".join(product.bullet_points).lower()
            or needle in product.description.lower())


@dataclass(frozen=True)
class TypeReward:
    r_type: float
    query_match: bool
    category_match: bool
    title_score: float


def type_reward(purchased: Product, goal: Goal, tagger: NounTagger | None = None) -> TypeReward:
    """Whether the purchased product is the goal's kind of product (module docstring)."""
    tagger = tagger or default_tagger()
    query_match = purchased.query == goal.query
    bought = {x.strip() for x in purchased.product_category.split("›")}
    wanted = {x.strip() for x in goal.product_category.split("›")}
    category_match = len(bought & wanted) >= 2
    bought_nouns = tagger.nouns(purchased.name)
    wanted_nouns = tagger.nouns(goal.name)
    if wanted_nouns:
        title_score = len(set(bought_nouns) & set(wanted_nouns)) / len(wanted_nouns)
    else:
        title_score = 0.2
    r_type = 1.0
    if not (query_match or category_match or title_score > 0.2):
        r_type = 0.5
    if title_score < 0.1:
        r_type = 0.1
    if title_score == 0.0:
        r_type = 0.0
    return TypeReward(r_type, query_match, category_match, title_score)


def attribute_reward(purchased: Product, goal: Goal) -> tuple[float, int]:
    """``(fraction of goal attributes matched, number matched)``."""
    matches = 0
    for wanted in goal.attributes:
        if any(token_set_ratio(have, wanted) > FUZZY_THRESHOLD for have in purchased.attributes):
            matches += 1
        elif _in_text(wanted, purchased):
            matches += 1
    return matches / len(goal.attributes), matches


def option_reward(purchased: Product, goal_values: Sequence[str],
                  options: Mapping[str, str]) -> tuple[float | None, int]:
    """``(matches / len(goal_values) or None when the goal has no options, matches)``."""
    chosen = {group: normalize_color(value) for group, value in options.items()}
    wanted = [normalize_color(value) for value in goal_values]
    matches = 0
    for group, value in chosen.items():
        if group.lower() in EXACT_MATCH_OPTIONS:
            matched = value in wanted
        else:
            matched = any(token_set_ratio(w, value) > FUZZY_THRESHOLD for w in wanted)
        if matched or _in_text(value, purchased):
            matches += 1
    return (matches / len(wanted) if wanted else None), matches


@dataclass(frozen=True)
class Reward:
    """The total and upstream's verbose components (``w_*`` are the weights in the total)."""

    total: float
    r_type: float
    query_match: bool
    category_match: bool
    title_score: float
    r_att: float
    w_att: float
    r_option: float | None
    w_option: float | None
    r_price: bool
    w_price: float

    def info(self) -> dict:
        """JSON-ready components (``r_option``/``w_option`` absent without goal options)."""
        data = asdict(self)
        if self.r_option is None:
            data.pop("r_option")
            data.pop("w_option")
        return data


def compute_reward(purchased: Product, goal: Goal, price: float, options: Mapping[str, str],
                   tagger: NounTagger | None = None) -> Reward:
    """The reward for buying `purchased` at `price` with `options` ``{group: value}``."""
    if goal.price_upper <= 0:
        raise ValueError("a goal's price ceiling must be positive")
    kind = type_reward(purchased, goal, tagger)
    r_price = price <= goal.price_upper
    r_att, n_att = attribute_reward(purchased, goal)
    r_option, n_option = option_reward(purchased, goal.option_values, options)
    denominator = len(goal.attributes) + len(goal.goal_options) + 1
    total = (n_att + n_option + r_price) / denominator * kind.r_type
    return Reward(
        total=total, r_type=kind.r_type, query_match=kind.query_match,
        category_match=kind.category_match, title_score=kind.title_score, r_att=r_att,
        w_att=len(goal.attributes) / denominator, r_option=r_option,
        w_option=len(goal.goal_options) / denominator if r_option is not None else None,
        r_price=r_price, w_price=1 / denominator)


def _master_goal_option(group: str | None, value: str) -> str:
    """What master's ``normalize_color`` makes of one goal option: a human goal's bare value
    is normalised as a string; a synthetic goal's ``(group, value)`` pair becomes the first
    colour *equal* to one of its two items (tuple membership), else the pair, which thefuzz
    scores as its ``str()``."""
    if group is None:
        return normalize_color(value)
    pair = (group, value)
    for color in COLOR_SET:
        if color in pair:
            return color
    return str(pair)


def master_option_reward(goal_options: Sequence[tuple[str | None, str]],
                         options: Mapping[str, str]) -> tuple[float | None, int]:
    """Master's ``get_option_reward``: ``(matches / n goal options or None, matches)``,
    each goal option counted once when a purchased value matches it fuzzily."""
    bought = [normalize_color(value) for value in options.values()]
    wanted = [_master_goal_option(group, value) for group, value in goal_options]
    matches = sum(any(token_set_ratio(have, w) > FUZZY_THRESHOLD for have in bought)
                  for w in wanted)
    return (matches / len(wanted) if wanted else None), matches


def compute_reward_master(purchased: Product, goal: Goal, price: float,
                          options: Mapping[str, str],
                          tagger: NounTagger | None = None) -> Reward:
    """Upstream master's reward for buying `purchased` at `price` with `options`."""
    if goal.price_upper <= 0:
        raise ValueError("a goal's price ceiling must be positive")
    kind = type_reward(purchased, goal, tagger)
    r_price = price <= goal.price_upper
    r_att, n_att = attribute_reward(purchased, goal)
    r_option, n_option = master_option_reward(goal.goal_options, options)
    denominator = len(goal.attributes) + len(goal.goal_options) + 1
    total = (n_att + n_option + r_price) / denominator
    total *= kind.r_type
    return Reward(
        total=total, r_type=kind.r_type, query_match=kind.query_match,
        category_match=kind.category_match, title_score=kind.title_score, r_att=r_att,
        w_att=len(goal.attributes) / denominator, r_option=r_option,
        w_option=len(goal.goal_options) / denominator if r_option is not None else None,
        r_price=r_price, w_price=1 / denominator)


REWARDS = {1: compute_reward, 2: compute_reward_master}
"""The reward of each ``webshop`` suite version."""
