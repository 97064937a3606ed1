"""WebShop (Yao et al., 2022) in its ``text`` observation mode.

Suites: ``webshop@2`` on the official product data (``$WEBSHOP_DATA``, else the
``harness data pull webshop`` cache, else ``../shared/data/webshop``) with upstream master's
reward, ``webshop@1`` (the earlier variant: same data, its own option reward),
``webshop-synthetic@1`` on a generated catalogue, and the unregistered ``webshop-human``
(crowd-sourced goals). Modules: `data` (loading both data
layouts), `goals` (goals, price ceilings, splits), `search` (BM25 as pyserini ranks),
`pages` (page texts and clickables), `actions` (``search[...]``/``click[...]``), `reward`
(master's reward for ``@2``, the earlier one for ``@1``), `nouns` (the title-noun step), `env` (the Env), `oracle` (the scripted
expert), `synthetic` (the catalogue generator), `suite`, `bench` (search latency).

Faithful to ``princeton-nlp/WebShop`` (``web_agent_text_env.py``, ``engine.py``,
``goal.py``, ``normalize.py``) except, by design:

- price draws and ceilings are seeded (``goals.PRICE_SEED``; upstream leaves them to the
  unseeded global RNG); the goal order is upstream's (``random.seed(233)`` shuffle);
- ``search[...]`` is valid only on the page with the search bar (upstream's ``step`` also
  runs it elsewhere), and anything invalid is flagged ``info["invalid"]``;
- upstream's debugging search prefixes (``<r>``, ``<a>``, ``<c>``, ``<q>``) are plain text;
- the pages are the original templates the text env navigates (``< Prev`` everywhere), not
  the 2022 restyle of the human-facing site;
- search runs on `bm25s` with Lucene's scoring and analysis re-created (identical top-50
  lists to pyserini on the 1000-product set, see `search`), not on a Java Lucene index;
- the title-noun step falls back to `nouns.FallbackNounTagger` when no spaCy model is
  installed (named in ``info["noun_tagger"]``);
- a 15-step limit (`env.MAX_STEPS`), reviews are empty (upstream's review file is not
  distributed), ``score`` is the purchase reward in [0, 1] (papers print it x 100).
"""

from tasks.webshop.actions import parse_action, search_action
from tasks.webshop.data import Catalog, Product, WebShopDataError, load_catalog
from tasks.webshop.env import MAX_STEPS, PageState, WebShopEnv, WebShopWorld
from tasks.webshop.goals import Goal, build_goals, split_of
from tasks.webshop.reward import Reward, compute_reward, compute_reward_master
from tasks.webshop.suite import (WebShopHumanSuite, WebShopSuite, WebShopSuiteV1,
                                 WebShopSyntheticSuite)
from tasks.webshop.synthetic import generate_catalog

__all__ = [
    "Catalog", "Goal", "MAX_STEPS", "PageState", "Product", "Reward", "WebShopDataError",
    "WebShopEnv", "WebShopHumanSuite", "WebShopSuite", "WebShopSuiteV1", "WebShopSyntheticSuite",
    "WebShopWorld", "build_goals", "compute_reward", "compute_reward_master", "generate_catalog",
    "load_catalog",
    "parse_action", "search_action", "split_of",
]
