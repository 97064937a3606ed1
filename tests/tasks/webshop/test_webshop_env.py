"""The WebShop text env: page texts against upstream's format, navigation, invalid actions,
buying, the Env contract and the suites' shape."""

from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from harness.core import HarnessError
from tasks import check_env
from tasks.webshop import MAX_STEPS, parse_action, search_action
from tasks.webshop.pages import done_page, item_page, results_page, search_page, sub_page
from tasks.webshop.reward import compute_reward, compute_reward_master
from webshop_testdata import play, real_suite, real_suite_v1, synthetic_suite

INSTRUCTION = "i need a fishing short, and price lower than 40.00 dollars"

# The texts below were produced by rendering WebShop's own templates (search, results, item,
# features, description and done pages) with Jinja2 and converting them as
# WebAgentTextEnv.convert_html_to_text(simple=True) does (BeautifulSoup visible texts joined
# with " [SEP] "), for these products of the real 1000-product set.
ITEM_TEXT = (
    "Instruction: [SEP] i need a fishing short, and price lower than 40.00 dollars [SEP] "
    "Back to Search [SEP] < Prev [SEP] size [SEP] 16 [SEP] 16\" [SEP] color [SEP] red [SEP] "
    "navy [SEP] Guy Harvey Ladies Fishing Short [SEP] Price: $29.99 [SEP] Rating: N.A. [SEP] "
    "Description [SEP] Features [SEP] Reviews [SEP] Buy Now")
ITEM_CLICKABLES = ["back to search", "< prev", "description", "features", "reviews",
                   "buy now", "16", "16\"", "red", "navy"]
RESULTS_TEXT = (
    "Instruction: [SEP] i need a fishing short, and price lower than 40.00 dollars [SEP] "
    "Back to Search [SEP] Page 2 (Total results: 13) [SEP] < Prev [SEP] Next > [SEP] "
    "B088TWNTRB [SEP] MIA Delena [SEP] $21.89 to $55.08 [SEP] B09P71WY8C [SEP] $18.0 [SEP] "
    "B09S2ZQ49B [SEP] Vostoktech [SEP] $15.99")
RESULTS_CLICKABLES = ["back to search", "< prev", "next >", "b088twntrb", "b09p71wy8c",
                      "b09s2zq49b"]
FIRST_PAGE_TEXT = (
    "Instruction: [SEP] i need a fishing short, and price lower than 40.00 dollars [SEP] "
    "Back to Search [SEP] Page 1 (Total results: 1) [SEP] Next > [SEP] B091DMZNR4 [SEP] "
    "Body Scrubber [SEP] $16.0")
FEATURES_TEXT = ("Instruction: [SEP] i need a fishing short, and price lower than 40.00 dollars"
                 " [SEP] Back to Search [SEP] < Prev [SEP] ")   # one empty bullet point
DESCRIPTION_TEXT = ("Instruction: [SEP] i need a fishing short, and price lower than 40.00 "
                    "dollars [SEP] Back to Search [SEP] < Prev")   # empty description
SEARCH_TEXT = ("WebShop [SEP] Instruction: [SEP] i want a blue shirt, and price lower than "
               "30.00 dollars [SEP] Search")
DONE_TEXT = (
    "Thank you for shopping with us! [SEP] Your code: [SEP] None [SEP] (Paste it in your MTurk "
    "interface.) [SEP] Purchased [SEP] asin [SEP] B000ABC [SEP] options [SEP] {\"color\": "
    "\"blue\", \"size\": \"x-large\"} [SEP] attrs [SEP] None [SEP] category [SEP] None [SEP] "
    "query [SEP] None [SEP] product category [SEP] None [SEP] Target [SEP] asin [SEP] options "
    "[SEP] attrs [SEP] price upper [SEP] instuction text [SEP] category [SEP] product category "
    "[SEP] query [SEP] Goal [SEP] None [SEP] Reward [SEP] Your score (min 0.0, max 1.0) [SEP] "
    "0.6666666666666666 [SEP] Reward Details [SEP] None")


@pytest.fixture(scope="module")
def suite():
    return real_suite()


def product(asin):
    return real_suite().catalog.get(asin)


def test_item_page_matches_upstream_text():
    view = item_page(INSTRUCTION, product("B005WXS61A"))
    assert view.text == ITEM_TEXT and list(view.clickables) == ITEM_CLICKABLES
    assert not view.has_search_bar


def test_results_pages_match_upstream_text():
    shown = [product(a) for a in ("B088TWNTRB", "B09P71WY8C", "B09S2ZQ49B")]  # one untitled
    view = results_page(INSTRUCTION, shown, page=2, total=13)
    assert view.text == RESULTS_TEXT and list(view.clickables) == RESULTS_CLICKABLES
    assert results_page(INSTRUCTION, [product("B091DMZNR4")], 1, 1).text == FIRST_PAGE_TEXT


def test_other_pages_match_upstream_text():
    assert sub_page(INSTRUCTION, product("B005WXS61A"), "Features").text == FEATURES_TEXT
    assert sub_page(INSTRUCTION, product("B005WXS61A"), "Description").text == DESCRIPTION_TEXT
    start = search_page("i want a blue shirt, and price lower than 30.00 dollars")
    assert start.text == SEARCH_TEXT and start.has_search_bar
    assert list(start.clickables) == ["search"]
    done = done_page("B000ABC", {"size": "x-large", "color": "blue"}, 0.6666666666666666)
    assert done.text == DONE_TEXT and not done.clickables


# -- actions and navigation -------------------------------------------------------------------

@pytest.mark.parametrize("action,parsed", [
    ("search[red shoes]", ("search", "red shoes")),
    ("click[buy now] and more", ("click", "buy now")),      # anchored at the start only
    ("search[a [b] c]", ("search[a ", "b] c")),              # greedy, as upstream
    ("search[]", ("search[]", None)),
    ("buy now", ("buy now", None)),
])
def test_parse_action_as_upstream(action, parsed):
    assert parse_action(action) == parsed


def test_search_action_always_parses_back():
    assert parse_action(search_action("shoes [2 pack]\nred")) == ("search", "shoes  2 pack  red")


def test_start_page_and_search(suite):
    env = suite.make_env("goal-00000")
    obs, info = env.reset(seed=0)
    instruction = suite.goal("goal-00000").instruction_text
    assert obs == f"WebShop [SEP] Instruction: [SEP] {instruction} [SEP] Search"
    assert info["admissible_actions"] == [search_action(instruction)]
    assert info["page"] == "search" and info["won"] is False and info["invalid"] is False
    result = env.step("search[Wireless Earbuds]")   # upper case: lowered, as upstream
    hits = suite.world.search("wireless earbuds")
    expected = results_page(instruction, [product(a) for a in hits[:10]], 1, len(hits))
    assert result.observation == expected.text and result.reward == 0.0
    assert result.info["admissible_actions"] == [f"click[{c}]" for c in expected.clickables]


def test_paging_goes_past_the_last_page_as_upstream(suite):
    env = suite.make_env("goal-00000")
    hits = suite.world.search("shoes")
    assert len(hits) == 39
    results = play(env, ["search[shoes]"] + ["click[next >]"] * 4)
    assert [r.info["invalid"] for r in results] == [False] * 5
    instruction = env.goal.instruction_text
    assert results[1].observation == results_page(
        instruction, [product(a) for a in hits[10:20]], 2, 39).text
    assert results[4].observation == results_page(instruction, [], 5, 39).text
    assert "Next >" in results[4].observation         # always shown
    back = env.step("click[< prev]")
    assert back.observation == results[3].observation


def test_item_sub_pages_options_and_back(suite):
    env = suite.make_env("goal-00000")
    asin = suite.world.search("shoes")[0]
    pages = play(env, ["search[shoes]", f"click[{asin.lower()}]"])
    assert pages[1].observation == item_page(env.goal.instruction_text, product(asin)).text
    group, values = next(iter(product(asin).options.items()))
    assert env.step(f"click[{values[-1]}]").observation == pages[1].observation
    assert env.state.options == ((group, values[-1]),)
    features = env.step("click[features]")
    assert features.observation == sub_page(env.goal.instruction_text, product(asin),
                                             "Features").text
    assert env.step("click[< prev]").observation == pages[1].observation
    assert env.state.options == ((group, values[-1]),)   # kept across the sub page
    assert env.step("click[< prev]").observation == pages[0].observation
    assert env.state.options == () and env.state.page == 1
    assert env.step("click[back to search]").observation == env.reset(seed=0)[0]


@pytest.mark.parametrize("action", [
    "click[nonexistent]", "Click[buy now]", "click[search]", "search[]", "buy now", "",
    "click[ back to search]", "search[shoes]",
])
def test_invalid_actions_change_nothing(suite, action):
    env = suite.make_env("goal-00000")
    before = play(env, ["search[shoes]"])[-1]
    key = env.state_key()
    result = env.step(action) if action != "search[shoes]" else env.step("search[hats]")
    assert result.info["invalid"] is True and result.reward == 0.0
    assert result.observation == before.observation and env.state_key() == key


def test_click_search_on_the_start_page_is_invalid(suite):
    env = suite.make_env("goal-00000")
    obs, _ = env.reset(seed=0)
    result = env.step("click[search]")
    assert result.info["invalid"] and result.observation == obs


def test_buying_ends_the_episode_with_upstreams_reward(suite):
    env = suite.make_env("goal-00000")
    asin = suite.world.search("shoes")[1]
    group, values = next(iter(product(asin).options.items()), ("size", ("?",)))
    actions = ["search[shoes]", f"click[{asin.lower()}]"]
    if product(asin).options:
        actions.append(f"click[{values[0]}]")
    results = play(env, actions + ["click[Buy Now]"])
    done = results[-1]
    options = {group: values[0]} if product(asin).options else {}
    expected = compute_reward_master(product(asin), env.goal, suite.world.prices[asin],
                                     options, suite.world.tagger)
    assert done.info["reward_version"] == 2
    assert done.terminated and not done.truncated and done.reward == expected.total
    assert done.info["score"] == expected.total and done.info["won"] is (expected.total == 1.0)
    assert done.info["reward_info"] == expected.info()
    assert done.info["purchased"] == {"asin": asin, "options": options}
    assert done.observation == done_page(asin, options, expected.total).text
    assert done.info["admissible_actions"] == []
    with pytest.raises(HarnessError):
        env.step("click[buy now]")


def test_webshop_at_1_keeps_its_earlier_reward():
    """``webshop@1`` (the earlier variant) scores with `compute_reward`: on the first test goal
    whose exact target master scores below 1.0, its oracle still gets 1.0 or more."""
    suite_v1 = real_suite_v1()
    assert suite_v1.id == "webshop@1" and suite_v1.world.reward_version == 1
    differs = next(i for i, g in enumerate(suite_v1.goals[:500])
                   if compute_reward_master(product(g.asin), g, suite_v1.world.prices[g.asin],
                                            dict(g.goal_options), suite_v1.world.tagger
                                            ).total < 1.0)
    env = suite_v1.make_env(f"goal-{differs:05d}")
    env.reset(seed=0)
    result = None
    while result is None or not result.terminated:
        result = env.step(env.oracle_action())
    assert result.info["reward_version"] == 1 and result.reward >= 1.0
    goal = env.goal
    assert result.reward == compute_reward(product(goal.asin), goal,
                                           suite_v1.world.prices[goal.asin],
                                           dict(goal.goal_options), suite_v1.world.tagger).total


def test_oracle_buys_the_goal_with_its_options(suite):
    env = suite.make_env("goal-00000")
    env.reset(seed=0)
    goal = env.goal
    actions, result = [], None
    while result is None or not result.terminated:
        actions.append(env.oracle_action())
        assert actions[-1] in env.admissible_actions()
        result = env.step(actions[-1])
    assert actions[0] == search_action(goal.instruction_text)
    assert f"click[{goal.asin.lower()}]" in actions and actions[-1] == "click[buy now]"
    assert all(f"click[{v}]" in actions for v in goal.option_values)
    assert result.reward == 1.0 and result.info["won"] is True


def test_oracle_searches_the_title_when_the_instruction_misses(suite):
    env = suite.make_env("goal-00444")
    goal = env.goal
    assert goal.asin not in suite.world.search(goal.instruction_text.lower())
    env.reset(seed=0)
    assert env.oracle_action() == search_action(product(goal.asin).title)


def test_truncation_at_the_step_limit(suite):
    env = suite.make_env("goal-00000")
    results = play(env, ["nothing"] * MAX_STEPS)
    assert [r.truncated for r in results] == [False] * (MAX_STEPS - 1) + [True]


def test_snapshot_restore_round_trip(suite):
    env = suite.make_env("goal-00001")
    play(env, ["search[shoes]"])
    snap = env.snapshot()
    first = [env.step(a).observation for a in ("click[next >]", "click[back to search]")]
    env.restore(snap)
    again = [env.step(a).observation for a in ("click[next >]", "click[back to search]")]
    assert first == again


@pytest.mark.parametrize("task", ["goal-00000", "goal-00444", "goal-00700", "goal-03000"])
def test_check_env_real(suite, task):
    for seed in (0, 1):
        check_env(suite.make_env(task), seed=seed)


def test_check_env_synthetic():
    suite = synthetic_suite()
    for split in ("test", "dev", "train"):
        check_env(suite.make_env(suite.tasks(split)[0].id), seed=0)


@settings(max_examples=60, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("click[]search backtonw>< prev1")), max_size=24))
def test_arbitrary_text_never_breaks_the_env(text):
    env = real_suite().make_env("goal-00002")
    play(env, ["search[shoes]"])
    key = env.state_key()
    result = env.step(text)
    if result.info["invalid"]:
        assert env.state_key() == key
    else:
        assert parse_action(text)[0] in ("search", "click")


# -- suites -----------------------------------------------------------------------------------

def test_real_suite_shape(suite):
    assert suite.id == "webshop@2"
    assert [len(suite.tasks(s)) for s in ("test", "dev", "train")] == [500, 1000, 5410]
    assert suite.task_types() == ["beauty", "electronics", "fashion", "garden", "grocery"]
    spec = suite.task("goal-00042")
    assert spec.split == "test" and spec.metadata["index"] == 42
    assert spec.metadata["asin"] == suite.goal("goal-00042").asin
    assert "1000 products" in suite.description and str(suite.catalog.source) in suite.description


def test_synthetic_suite_shape():
    suite = synthetic_suite()
    assert suite.id == "webshop-synthetic@1" and len(suite.catalog) == 1000
    assert [len(suite.tasks(s)) for s in ("test", "dev")] == [500, 1000]
    assert len(suite.tasks("train")) > 0


def test_the_search_index_is_built_at_the_first_search_only():
    """Listing a suite or reading its tasks builds no index (`harness list suites` stays
    quick); the first search builds it once."""
    from tasks.webshop import WebShopSyntheticSuite

    suite = WebShopSyntheticSuite(n_products=50)
    assert len(suite.tasks("test")) > 0 and suite.world._index is None
    hits = suite.world.search("shirt")
    index = suite.world._index
    assert index is not None and suite.world.index is index
    assert hits == suite.world.search("shirt")
