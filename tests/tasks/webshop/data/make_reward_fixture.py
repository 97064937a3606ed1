"""Builds ``reward_master_fixture.jsonl``: (goal, purchase) cases and upstream master's reward.

Two steps, two interpreters (upstream's code is run, never copied into this repository):

1. ``python make_reward_fixture.py cases DATA OUT_CASES`` (this project's venv): draws the
   cases from the real 1000-product set in DATA (``shared/data/webshop``) with this project's
   goal builder (goal order and price ceilings as `tasks.webshop.goals`), seed 17.
2. ``python make_reward_fixture.py upstream DATA CASES OUT`` (a scratch venv with upstream's
   ``thefuzz==0.19.0``, spaCy and ``en_core_web_sm``; run in a checkout of
   princeton-nlp/WebShop master, which must be on ``sys.path``): calls upstream's
   ``web_agent_site.engine.goal.get_reward(product, goal, price, options, verbose=True)`` on
   every case, with ``product`` the processed record of DATA's ``products_1000.jsonl`` and the
   goal dict built as upstream's ``get_synthetic_goals``/``get_human_goals`` build it
   (synthetic goal options a ``{group: value}`` dict, human ones a list of values), and writes
   one JSON line per case with upstream's total and verbose components.

Only the standard library is imported in step 2 besides upstream's own module.
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

SEED = 17


def _goal_record(goal) -> dict:
    if goal.kind == "human":
        options = [v for _, v in goal.goal_options]
    else:
        options = [[g, v] for g, v in goal.goal_options]
    return {"kind": goal.kind, "asin": goal.asin, "attributes": list(goal.attributes),
            "price_upper": goal.price_upper, "goal_options": options}


def _random_options(product, rng: random.Random, keep: float = 1.0) -> dict:
    return {g: rng.choice(vs) for g, vs in product.options.items() if vs and rng.random() < keep}


def build_cases(data: str) -> list[dict]:
    from tasks.webshop.data import load_catalog
    from tasks.webshop.goals import build_goals

    rng = random.Random(SEED)
    catalog = load_catalog(data)
    goals, prices = build_goals(catalog)
    human, _ = build_goals(catalog, "human")
    products = list(catalog.products)
    cases: list[dict] = []

    def add(kind, goal, asin, price, options):
        cases.append({"case": kind, "goal": _goal_record(goal),
                      "purchase": {"asin": asin, "price": price, "options": options}})

    for goal in goals[:500]:  # the test goals, bought exactly as the goal says
        add("exact", goal, goal.asin, prices[goal.asin], dict(goal.goal_options))
    multi = [g for g in goals if any(len(catalog.get(g.asin).options[n]) > 1
                                     for n, _ in g.goal_options if n != "size")]
    for goal in rng.sample(multi, 250):
        options = dict(goal.goal_options)
        group = rng.choice([n for n, _ in goal.goal_options if n != "size"
                            and len(catalog.get(goal.asin).options[n]) > 1])
        options[group] = rng.choice([v for v in catalog.get(goal.asin).options[group]
                                     if v != options[group]])
        add("wrong_option", goal, goal.asin, prices[goal.asin], options)
    sized = [g for g in goals if len(catalog.get(g.asin).options.get("size", ())) > 1]
    for goal in rng.sample(sized, 200):
        options = dict(goal.goal_options)
        options["size"] = rng.choice([v for v in catalog.get(goal.asin).options["size"]
                                      if v != options["size"]])
        add("wrong_size", goal, goal.asin, prices[goal.asin], options)
    with_options = [g for g in goals if g.goal_options]
    for goal in rng.sample(with_options, 100):
        options = dict(goal.goal_options)
        for group in rng.sample(sorted(options), rng.randint(1, len(options))):
            del options[group]
        add("missing_option", goal, goal.asin, prices[goal.asin], options)
    for goal in rng.sample(goals, 150):
        wanted = catalog.get(goal.asin)
        other = rng.choice([p for p in products if p.query != wanted.query
                            and p.product_category != wanted.product_category])
        add("wrong_type", goal, other.asin, prices[other.asin], _random_options(other, rng))
    for goal in rng.sample(goals, 150):
        wanted = catalog.get(goal.asin)
        same = [p for p in products if p.query == wanted.query and p.asin != wanted.asin]
        if same:
            other = rng.choice(same)
            add("same_query_other_product", goal, other.asin, prices[other.asin],
                _random_options(other, rng))
    for goal in rng.sample(goals, 150):
        upper = goal.price_upper
        price = rng.choice([upper - 0.01, upper, upper + 0.01, upper * 2, upper / 2,
                            prices[goal.asin] + 1000.0])
        add("price", goal, goal.asin, price, dict(goal.goal_options))
    for goal in rng.sample(goals, 200):
        other = rng.choice(products)
        add("random", goal, other.asin, rng.uniform(0, 2 * min(goal.price_upper, 1000.0)),
            _random_options(other, rng, keep=rng.random()))
    pool = sorted({v for p in products for vs in p.options.values() for v in vs})
    for goal in rng.sample(with_options, 100):
        options = {g: rng.choice(pool) for g, _ in goal.goal_options}
        add("foreign_option_values", goal, goal.asin, prices[goal.asin], options)
    for goal in human:
        product = catalog.get(goal.asin)
        values = {v for _, v in goal.goal_options}
        matched = {g: v for g, vs in product.options.items() for v in vs if v in values}
        add("human_exact", goal, goal.asin, prices[goal.asin], matched)
        add("human_random_options", goal, goal.asin, prices[goal.asin],
            _random_options(product, rng))
        other = rng.choice(products)
        add("human_other_product", goal, other.asin, prices[other.asin],
            _random_options(other, rng))
    return cases


def _upstream_goal(record: dict, product: dict) -> dict:
    goal = {"asin": record["asin"], "category": product["category"],
            "query": product["query"], "product_category": product["product_category"],
            "attributes": record["attributes"], "price_upper": record["price_upper"]}
    if record["kind"] == "human":
        goal.update(name=product["name"], goal_options=list(record["goal_options"]))
    else:  # get_synthetic_goals: a dict, and 'name' is the product's Title
        goal.update(name=product["Title"], goal_options={g: v for g, v in record["goal_options"]})
    return goal


def run_upstream(data: str, cases_file: str, out: str) -> None:
    from web_agent_site.engine.goal import get_reward, nlp

    records = {}
    with open(Path(data) / "products_1000.jsonl", encoding="utf-8") as lines:
        for line in lines:
            record = json.loads(line)
            records[record["asin"]] = record
    cases = [json.loads(line) for line in open(cases_file, encoding="utf-8")]
    with open(out, "w", encoding="utf-8") as sink:
        for case in cases:
            goal = _upstream_goal(case["goal"], records[case["goal"]["asin"]])
            purchase = case["purchase"]
            total, info = get_reward(records[purchase["asin"]], goal, purchase["price"],
                                     purchase["options"], verbose=True)
            case["upstream"] = {"total": total, **info}
            case["tagger"] = f"spacy:{nlp.meta['name']}@{nlp.meta['version']}"
            sink.write(json.dumps(case, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    if sys.argv[1] == "cases":
        with open(sys.argv[3], "w", encoding="utf-8") as sink:
            for case in build_cases(sys.argv[2]):
                sink.write(json.dumps(case, ensure_ascii=False) + "\n")
    elif sys.argv[1] == "upstream":
        run_upstream(sys.argv[2], sys.argv[3], sys.argv[4])
    else:
        raise SystemExit("usage: make_reward_fixture.py cases DATA OUT | upstream DATA CASES OUT")
