"""WebShop's reward by hand: every branch of attribute, option, price and type rewards, the
total, upstream's own unit-test cases, and both title-noun paths (spaCy and the fallback)."""

from __future__ import annotations

from math import isclose

import pytest
import spacy

from harness.core import ConfigError
from tasks.webshop import nouns
from tasks.webshop.data import Product
from tasks.webshop.goals import Goal
from tasks.webshop.nouns import FallbackNounTagger, SpacyNounTagger, default_tagger
from tasks.webshop.reward import (attribute_reward, compute_reward, normalize_color,
                                  option_reward, token_set_ratio, type_reward)


class WordsAreNouns:
    """Every space-separated word is a noun: makes title scores easy to count by hand."""

    name = "words"

    def nouns(self, text: str) -> list[str]:
        return text.lower().split()


WORDS = WordsAreNouns()


def product(**fields) -> Product:
    base = dict(asin="B0TEST0000", title="", name="", query="q", product_category="a › b › c")
    return Product(**{**base, **fields})


def goal(**fields) -> Goal:
    base = dict(asin="B0TEST0000", instruction_text="", attributes=("x",), price_upper=50.0,
                goal_options=(), name="", query="q", product_category="a › b › c")
    return Goal(**{**base, **fields})


# -- colour normalisation and the fuzzy threshold ---------------------------------------------

@pytest.mark.parametrize("text,expected", [
    ("navy blue", "blue"),          # 'blue' comes before 'navy' in COLOR_SET
    ("light grey", "grey"),
    ("standard", "tan"),            # substring match, as upstream
    ("black forest", "black"), ("123alabaster", "alabaster"), ("webshopsteel", "steel"),
    ("x-large", "x-large"),         # no colour: unchanged
])
def test_normalize_color_takes_the_first_contained_colour(text, expected):
    assert normalize_color(text) == expected


def test_token_set_ratio_threshold_is_strictly_above_85():
    assert token_set_ratio("machine wash", "machine washable") == 86
    assert token_set_ratio("wireless charging", "wireless charger") == 85
    wanted = goal(attributes=("machine washable", "wireless charger"))
    have = product(attributes=("machine wash", "wireless charging"))
    assert attribute_reward(have, wanted) == (0.5, 1)


# -- attributes -------------------------------------------------------------------------------

def test_attribute_matches_by_fuzzy_attribute_then_by_text():
    wanted = goal(attributes=("tea tree", "essential oils", "natural ingredients", "lemon",
                              "vegan"))
    have = product(attributes=("essential oil",), title="Tea Tree Shampoo",
                   bullet_points=("Smells of Lemon", "big bottle"),
                   description="Made with NATURAL INGREDIENTS.")
    # essential oils: fuzzy (96); tea tree: title; lemon: bullets; natural ingredients:
    # description (lower-cased); vegan: nowhere
    assert attribute_reward(have, wanted) == (4 / 5, 4)


def test_attribute_text_match_is_a_substring_test():
    wanted = goal(attributes=("wash",))
    assert attribute_reward(product(description="washable"), wanted) == (1.0, 1)
    assert attribute_reward(product(description="was h"), wanted) == (0.0, 0)


@pytest.mark.parametrize("purchased,expected", [
    (dict(attributes=("tea tree", "essential oil", "natural ingredients")), (1.0, 3)),
    (dict(attributes=("essential oil", "natural ingredients")), (2 / 3, 2)),
    (dict(bullet_points=("This shampoo has essential oils and smells like lemons",),
          description="Best shampoo on the market, made with natural ingredients"), (2 / 3, 2)),
    (dict(attributes=("tea bag", "earl gray", "lipton"), title="English tea for breakfast",
          bullet_points=("Soothing aroma", "Calming, great feeling"),
          description="Best tea made by Lipton, great to pair with breakfast"), (0.0, 0)),
])
def test_upstream_attribute_cases(purchased, expected):
    wanted = goal(attributes=("tea tree", "essential oils", "natural ingredients"))
    assert attribute_reward(product(**purchased), wanted) == expected


# -- options ----------------------------------------------------------------------------------

def test_size_options_match_exactly_even_where_fuzzy_would_pass():
    assert token_set_ratio("x-large", "xx-large") > 85
    assert option_reward(product(), ["xx-large"], {"size": "x-large"}) == (0.0, 0)
    assert option_reward(product(), ["xx-large"], {"Size": "xx-large"}) == (1.0, 1)


def test_other_options_match_fuzzily_after_colour_normalisation():
    assert option_reward(product(), ["cool powder snow"], {"color": "powder snow"}) == (1.0, 1)
    assert token_set_ratio("navy blue", "light blue") <= 85
    assert option_reward(product(), ["light blue"], {"color": "navy blue"}) == (1.0, 1)
    assert option_reward(product(), ["grey"], {"color": "blue"}) == (0.0, 0)


def test_unmatched_option_counts_when_it_is_in_the_product_text():
    phone_stand = product(title="Phone Stand With Case")
    assert option_reward(phone_stand, ["mini"], {"style": "with case"}) == (1.0, 1)
    sized = product(bullet_points=("fits x-large frames",))
    assert option_reward(sized, ["large"], {"size": "x-large"}) == (1.0, 1)


def test_option_reward_without_goal_options_or_without_purchased_options():
    assert option_reward(product(), [], {"color": "red"}) == (None, 0)
    assert option_reward(product(), ["goal 1", "goal 2"], {}) == (0.0, 0)
    r, n = option_reward(product(), ["grey", "XL", "pack of 12"],
                         {"amount": "pack of 12", "color": "blue", "size": "XL"})
    assert (r, n) == (2 / 3, 2)


# -- type reward ------------------------------------------------------------------------------

@pytest.mark.parametrize("bought,wanted,r_type,title_score", [
    # query matches and identical names
    (dict(name="red running shoe"), dict(name="red running shoe"), 1.0, 1.0),
    # no query/category match, but 1 of 4 goal nouns shared: 0.25 > 0.2 keeps 1.0
    (dict(name="shoe", query="p", product_category="x › y"),
     dict(name="red running shoe box"), 1.0, 0.25),
    # nothing matches and 1/5 = 0.2 is not > 0.2: 0.5
    (dict(name="shoe", query="p", product_category="x › y"),
     dict(name="a b c d shoe"), 0.5, 0.2),
    # 1/12 < 0.1: 0.1, even though the query matches
    (dict(name="shoe"), dict(name="a b c d e f g h i j k shoe"), 0.1, 1 / 12),
    # no shared noun: 0.0, even though query and category match
    (dict(name="lamp"), dict(name="shoe"), 0.0, 0.0),
    # repeated goal nouns stay in the denominator: 2 shared / 3
    (dict(name="shoe box"), dict(name="shoe shoe box"), 1.0, 2 / 3),
])
def test_type_reward_rules(bought, wanted, r_type, title_score):
    result = type_reward(product(**bought), goal(**wanted), WORDS)
    assert result.r_type == r_type
    assert isclose(result.title_score, title_score)


def test_goal_title_without_nouns_scores_0_2():
    bought, wanted = product(name="shoe"), goal(name="")
    assert type_reward(bought, wanted, WORDS).title_score == 0.2
    assert type_reward(bought, wanted, WORDS).r_type == 1.0  # the query matches
    stranger = product(name="shoe", query="p", product_category="x")
    assert type_reward(stranger, wanted, WORDS).r_type == 0.5


@pytest.mark.parametrize("category,matches", [
    ("a › b › c", True), ("b › c › a", True), ("d › e › f", False), ("a › d › b", True),
    ("a › a › b", True), ("a › a › d", False), ("", False),
])
def test_category_match_needs_two_shared_levels(category, matches):
    result = type_reward(product(product_category=category, name="x"), goal(name="x"), WORDS)
    assert result.category_match is matches


# -- the total --------------------------------------------------------------------------------

def test_total_by_hand():
    wanted = goal(attributes=("a1", "a2"), goal_options=(("color", "red"), ("size", "large")),
                  name="lamp", price_upper=50.0)
    bought = product(attributes=("a1",), name="lamp")
    options = {"color": "red", "size": "small"}
    reward = compute_reward(bought, wanted, 30.0, options, WORDS)
    # (1 attribute + 1 option + price ok) / (2 + 2 + 1), r_type 1
    assert isclose(reward.total, 3 / 5)
    assert (reward.r_att, reward.r_option, reward.r_price) == (0.5, 0.5, True)
    assert isclose(reward.w_att, 2 / 5) and isclose(reward.w_option, 2 / 5)
    assert isclose(reward.w_price, 1 / 5)
    assert isclose(compute_reward(bought, wanted, 50.01, options, WORDS).total, 2 / 5)
    halved = product(attributes=("a1",), name="lamp table", query="p", product_category="x")
    wanted_two = goal(attributes=("a1", "a2"), name="lamp shade cover base stand",
                      goal_options=(("color", "red"), ("size", "large")))
    assert isclose(compute_reward(halved, wanted_two, 30.0, options, WORDS).total, 3 / 5 * 0.5)


def test_price_exactly_at_the_ceiling_counts_and_no_options_drops_the_option_keys():
    reward = compute_reward(product(attributes=("x",)), goal(), 50.0, {}, WORDS)
    assert reward.total == 1.0 and reward.r_option is None
    assert "r_option" not in reward.info() and "w_option" not in reward.info()


def test_extra_purchased_options_can_push_the_total_above_one():
    wanted = goal(goal_options=(("color", "red"),))
    bought = product(attributes=("x",), title="large red lamp, style b")
    options = {"color": "red", "size": "large", "style": "style b"}
    assert isclose(compute_reward(bought, wanted, 10.0, options, WORDS).total, 5 / 3)


def test_non_positive_ceiling_is_rejected():
    with pytest.raises(ValueError):
        compute_reward(product(), goal(price_upper=0.0), 1.0, {}, WORDS)


def _upstream_pair():
    wanted = goal(name="Mens D.O.N. Issue 2 Gca Basketball Sneakers Shoes Casual - Off White",
                  query="Query 1", attributes=("tea tree", "essential oils", "natural ingredients"),
                  goal_options=(("color", "grey"), ("size", "XL")), price_upper=40.0)
    bought = product(name=wanted.name, query="Query 1",
                     attributes=("tea tree", "essential oil", "natural ingredients"))
    return wanted, bought


def test_upstream_get_reward_cases_with_the_fallback_tagger():
    tagger = FallbackNounTagger()
    wanted, bought = _upstream_pair()
    options = {"color": "grey", "size": "XL"}
    assert compute_reward(bought, wanted, 35, options, tagger).total == 1
    # upstream passes the bullet points as one string, which its join splits into characters
    bought = Product(**{**bought.__dict__, "attributes": (),
                        "bullet_points": tuple("This shampoo has essential oils and smells "
                                               "like lemons"),
                        "description": "Best shampoo on the market, made with natural ingredients"})
    assert isclose(compute_reward(bought, wanted, 35, options, tagger).total, 2 / 3)
    more = wanted.goal_options + (("amount", "pack of 12"),)
    wanted = Goal(**{**wanted.__dict__, "goal_options": more})
    assert isclose(compute_reward(bought, wanted, 35, options, tagger).total, 4 / 7)
    wanted = Goal(**{**wanted.__dict__, "name": "Saireed UL Listed 2 Prong Power Cord for JBL Bar "
                                                "3.1 Bar 2.1 Channel 4K Ultra HD Soundbar"})
    bought = Product(**{**bought.__dict__, "query": "Query 2", "product_category": "a › d › e",
                        "name": "BRST AC Power Cord Outlet Socket Cable Plug Lead for Panasonic "
                                "SC-HT830V DVD/VCR Combo Home Theater System"})
    kind = type_reward(bought, wanted, tagger)
    assert isclose(kind.title_score, 2 / 14)  # power, cord of 14 content words
    assert isclose(compute_reward(bought, wanted, 35, options, tagger).total, 4 / 7 * 0.5)


# -- the title-noun step: fallback and spaCy --------------------------------------------------

def test_fallback_keeps_content_words():
    assert FallbackNounTagger().nouns("Guy Harvey Ladies' Fishing Short, 2 Pack for the Beach") \
        == ["guy", "harvey", "ladies", "fishing", "short", "pack", "beach"]
    assert FallbackNounTagger().nouns("adidas Unisex-Adult D.o.n. Issue 2 Basketball Shoe") == [
        "adidas", "unisex", "adult", "d", "o", "n", "issue", "basketball", "shoe"]


def _rule_pipeline():
    """A blank English pipeline whose attribute ruler tags a few words (no trained model)."""
    nlp = spacy.blank("en")
    ruler = nlp.add_pipe("attribute_ruler")
    ruler.add([[{"LOWER": {"IN": ["shoe", "court", "basketball", "issue"]}}]], {"POS": "NOUN"})
    ruler.add([[{"LOWER": "adidas"}]], {"POS": "PROPN"})
    ruler.add([[{"LOWER": "indoor"}]], {"POS": "ADJ"})
    return nlp


def test_spacy_path_keeps_noun_and_propn_tokens():
    tagger = SpacyNounTagger(_rule_pipeline(), "spacy:rules")
    assert tagger.nouns("adidas Unisex-Adult D.o.n. Issue 2 Basketball Shoe") == [
        "adidas", "issue", "basketball", "shoe"]
    wanted = goal(name="adidas Unisex-Adult D.o.n. Issue 2 Basketball Shoe")
    bought = product(name="adidas Unisex-Adult D.o.n. Issue 2 Indoor Court Shoe")
    assert isclose(type_reward(bought, wanted, tagger).title_score, 3 / 4)


@pytest.fixture
def fresh_tagger(monkeypatch):
    nouns._tagger.cache_clear()
    yield monkeypatch
    nouns._tagger.cache_clear()


def test_default_tagger_loads_a_spacy_pipeline_through_spacy_load(fresh_tagger, tmp_path):
    _rule_pipeline().to_disk(tmp_path / "pipeline")
    fresh_tagger.setenv(nouns.TAGGER_ENV, f"spacy:{tmp_path / 'pipeline'}")
    tagger = default_tagger()
    assert isinstance(tagger, SpacyNounTagger) and tagger.name.startswith("spacy:")
    assert tagger.nouns("Indoor Court Shoe") == ["court", "shoe"]


def test_default_tagger_falls_back_without_a_model(fresh_tagger):
    fresh_tagger.delenv(nouns.TAGGER_ENV, raising=False)
    fresh_tagger.setattr(nouns, "SPACY_MODELS", ("no_such_model_installed",))
    assert default_tagger().name == "fallback@1"
    fresh_tagger.setenv(nouns.TAGGER_ENV, "fallback")
    assert isinstance(default_tagger(), FallbackNounTagger)


@pytest.mark.parametrize("value", ["spacy:no_such_model_installed", "bogus"])
def test_bad_tagger_choice_is_a_config_error(fresh_tagger, value):
    fresh_tagger.setenv(nouns.TAGGER_ENV, value)
    with pytest.raises(ConfigError, match=nouns.TAGGER_ENV):
        default_tagger()
