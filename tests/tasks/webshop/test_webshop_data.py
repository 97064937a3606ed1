"""Loading WebShop's data (both layouts), goal generation, price ceilings and splits."""

from __future__ import annotations

import json
import random

import pytest

from tasks.webshop import data as data_module
from tasks.webshop.data import (WebShopDataError, default_data_dir, load_catalog,
                                process_raw_product)
from tasks.webshop.goals import (PRICE_RANGE, build_goals, human_goals, price_ceiling,
                                 product_prices, split_of, synthetic_goals)
from webshop_testdata import DATA_DIR, REPO_ROOT


@pytest.fixture(scope="module")
def catalog():
    return load_catalog(DATA_DIR)


def test_default_folder_is_shared_data_beside_the_repo_and_the_variable_overrides(
        monkeypatch, tmp_path):
    monkeypatch.delenv(data_module.DATA_ENV, raising=False)
    assert default_data_dir() == REPO_ROOT.parent / "shared" / "data" / "webshop"
    monkeypatch.setenv(data_module.DATA_ENV, str(tmp_path))
    assert default_data_dir() == tmp_path
    with pytest.raises(WebShopDataError, match="items_ins_v2"):
        load_catalog()  # an empty folder: the error names the missing file
    monkeypatch.setenv(data_module.DATA_ENV, str(tmp_path / "absent"))
    with pytest.raises(WebShopDataError, match="WEBSHOP_DATA"):
        load_catalog()


def test_real_catalogue_in_original_load_order(catalog):
    order = [line.strip() for line in (DATA_DIR / "asin_order.txt").read_text().splitlines()
             if line.strip()]
    assert [p.asin for p in catalog.products] == order and len(catalog) == 1000
    table = catalog.get("B005WXS61A")
    assert table.title == "Guy Harvey Ladies Fishing Short" and table.price == "$29.99"
    assert table.options == {"size": ("16", '16"'), "color": ("red", "navy")}
    assert sum(p.instruction is not None for p in catalog.products) == 415
    assert sum(len(p.human_instructions) for p in catalog.products) == 13


def test_search_document_is_upstreams_contents_field(catalog):
    console = catalog.get("B06Y3VLDFB")
    assert console.search_text() == (
        "vhomes lights reclaimed wood console table the genessis collection sofa-tables "
        "solid, reclaimed fir wood in natural, sun bleached finish with light antiquing glaze. "
        "finish/frame description:solid, reclaimed fir wood in natural, sun bleached finish "
        "with light antiquing glaze.  ")
    short = catalog.get("B005WXS61A")
    assert short.search_text().endswith('size: 16, 16", and color: red, navy')


def test_processed_folder_with_a_subset_and_num_products(tmp_path, catalog):
    lines = (DATA_DIR / "products_1000.jsonl").read_text(encoding="utf-8").splitlines()[:3]
    (tmp_path / "products_3.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    attributes = json.loads((DATA_DIR / "items_ins_v2_1000.json").read_text())
    asins = [json.loads(line)["asin"] for line in lines]
    (tmp_path / "items_ins_v2_3.json").write_text(json.dumps({a: attributes[a] for a in asins}))
    small = load_catalog(tmp_path)
    assert [p.asin for p in small.products] == asins
    assert small.get(asins[0]) == catalog.get(asins[0])
    assert len(load_catalog(tmp_path, num_products=2)) == 2
    (tmp_path / "asin_order.txt").write_text(asins[0] + "\n")
    with pytest.raises(WebShopDataError, match="asin_order"):
        load_catalog(tmp_path)


RAW = [
    {"asin": "B000000001", "name": "Lamp / Light", "full_description": "A lamp.",
     "small_description": "One bullet", "pricing": "$19.99 - $27.99", "images": ["i1", "i2"],
     "product_category": "Home › Lamps", "category": "garden", "query": " Desk Lamps ",
     "customization_options": {"Color": [{"value": " Black/White ", "image": "im"},
                                         {"value": "Red"}], "Size": None}},
    {"asin": "nan", "name": "skipped", "full_description": "", "small_description": [],
     "images": [""], "customization_options": ""},
    {"asin": "B000000002", "name": "No price", "full_description": "", "pricing": "",
     "small_description": ["a", "b"], "images": ["x"], "customization_options": ""},
    {"asin": "B000000001", "name": "duplicate", "full_description": "", "small_description": [],
     "images": [""], "customization_options": ""},
]


def test_raw_upstream_records_are_processed_as_load_products(tmp_path):
    lamp = process_raw_product(RAW[0], {"B000000001": {"attributes": ["desk lamp"],
                                                       "instruction": "i want a lamp",
                                                       "instruction_attributes": ["desk lamp"]}})
    assert lamp.pricing == (19.99, 27.99) and lamp.price == "$19.99 to $27.99"
    assert lamp.options == {"color": ("black | white", "red")}
    assert lamp.bullet_points == ("One bullet",) and lamp.query == "desk lamps"
    assert lamp.attributes == ("desk lamp",) and lamp.main_image == "i1"
    assert lamp.instruction == "i want a lamp"
    plain = process_raw_product(RAW[2], {})
    assert plain.pricing == (100.0,) and plain.price == "$100.0"
    assert plain.attributes == ("DUMMY_ATTR",) and plain.instruction is None
    (tmp_path / "items_shuffle_4.json").write_text(json.dumps(RAW))
    (tmp_path / "items_ins_v2_4.json").write_text(json.dumps({}))
    (tmp_path / "items_human_ins.json").write_text(json.dumps({"B000000002": [
        {"instruction": "a thing.", "instruction_attributes": ["x"], "instruction_options": []}]}))
    loaded = load_catalog(tmp_path)
    assert [p.asin for p in loaded.products] == ["B000000001", "B000000002"]
    assert loaded.get("B000000001").title == "Lamp / Light"
    assert loaded.get("B000000002").human_instructions[0]["instruction"] == "a thing."


# -- goals ------------------------------------------------------------------------------------

def test_price_ceiling_rule_by_hand():
    rng = random.Random(0)
    upper, text = price_ceiling(35.0, rng)
    assert upper in (50.0, 60.0, 70.0) and text == f", and price lower than {upper:.2f} dollars"
    assert price_ceiling(985.0, rng) == (1_000_000.0, "")          # only 990 above it
    assert price_ceiling(975.0, rng)[0] == 990.0                   # 980 and 990: max of both
    assert PRICE_RANGE[0] == 10.0 and PRICE_RANGE[-1] == 990.0 and len(PRICE_RANGE) == 99


def test_range_prices_are_drawn_inside_the_range(catalog):
    prices = product_prices(catalog, random.Random(1))
    for product in catalog.products:
        low, high = min(product.pricing), max(product.pricing)  # some ranges run downwards
        assert low <= prices[product.asin] <= high


def test_synthetic_goals_one_per_option_combination(catalog):
    goals, prices = build_goals(catalog)
    assert len(goals) == 6910
    expected = 0
    for product in catalog.products:
        if product.instruction is not None:
            n = 1
            for values in product.options.values():
                n *= len(values)
            expected += n
    assert expected == 6910
    lotions = [g for g in goals if g.asin == "B087Y28XLM"]
    assert sorted(g.option_values for g in lotions) == sorted(
        [(c, s) for c in ("fresh", "butter")
         for s in ("8.5 fl oz (pack of 1)", "10.6 fl oz (pack of 1)")])
    one = lotions[0]
    product = catalog.get("B087Y28XLM")
    assert [group for group, _ in one.goal_options] == ["scent", "size"]  # sorted groups
    assert one.instruction_text == (f"{product.instruction} with scent: {one.option_values[0]}, "
                                    f"and size: {one.option_values[1]}, and price lower than "
                                    f"{one.price_upper:.2f} dollars")
    assert one.price_upper > prices["B087Y28XLM"] and one.name == product.title
    assert len({g.price_upper for g in lotions}) == 1  # one ceiling per product


def test_goal_order_is_upstreams_seed_233_shuffle(catalog):
    goals, _ = build_goals(catalog)
    rng = random.Random(233)
    prices = product_prices(catalog, rng)
    unshuffled = synthetic_goals(catalog, prices, rng)
    random.Random(233).shuffle(unshuffled)
    assert tuple(unshuffled) == goals
    assert build_goals(catalog)[0] == goals  # reproducible


def test_splits_follow_the_upstream_convention():
    assert [split_of(i) for i in (0, 499, 500, 1499, 1500, 6909)] == [
        "test", "test", "dev", "dev", "train", "train"]


def test_human_goals_are_the_crowd_instructions_with_attributes(catalog):
    rng = random.Random(0)
    goals = human_goals(catalog, product_prices(catalog, rng), rng)
    assert 0 < len(goals) <= 13 and all(g.kind == "human" and g.attributes for g in goals)
    first = goals[0]
    source = next(e for e in catalog.get(first.asin).human_instructions
                  if e["instruction"].strip(".") in first.instruction_text)
    assert first.option_values == tuple(source["instruction_options"])
    assert all(name is None for name, _ in first.goal_options)
