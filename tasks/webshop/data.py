"""WebShop's product catalogue: loading the official data and WebShop's own processing.

Two layouts are read from one folder (the ``path`` argument, else ``$WEBSHOP_DATA``, else
``<repo root>/../shared/data/webshop``, else the cache ``harness data pull webshop`` fills;
`tasks.datasets`):

- *processed*: ``products*.jsonl`` (one processed record a line, the format WebShop's
  ``load_products`` builds), ``items_ins_v2*.json`` (attributes and synthetic instructions)
  and optionally ``asin_order.txt`` (the load order; goal order depends on it). This is the
  1000-product set in ``shared/data/webshop``.
- *upstream raw*: ``items_shuffle*.json`` (scraped products, a JSON list, e.g. the full
  1.18M-product download), ``items_ins_v2*.json`` and optionally ``items_human_ins.json``
  (human instructions). Raw records go through `process_raw_product`, which follows
  ``web_agent_site/engine/engine.py:load_products``: price strings parsed into floats
  (``[100.0]``/``"$100.0"`` when missing), options lower-cased with ``/`` -> `` | ``,
  ``Attributes`` from the attribute file (``["DUMMY_ATTR"]`` when absent), empty reviews,
  rating ``"N.A."``, query lower-cased and stripped; records whose asin is ``"nan"`` or
  longer than 10 characters, and repeated asins, are skipped.

Reviews are not part of either layout (upstream's review file is not distributed), so every
product has ``reviews = ()`` and ``rating = "N.A."``, as in the processed 1000-product set.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

from harness.core import HarnessError

__all__ = ["Product", "Catalog", "WebShopDataError", "DATA_ENV", "default_data_dir",
           "load_catalog", "process_raw_product", "price_tag"]

DATA_ENV = "WEBSHOP_DATA"
"""Environment variable naming the data folder (overridden by an explicit path)."""
REPO_ROOT = Path(__file__).resolve().parents[2]


class WebShopDataError(HarnessError):
    """The WebShop data folder is missing or malformed."""


@dataclass(frozen=True)
class Product:
    """One processed product (the fields WebShop's pages and reward read).

    `options` maps an option group (``"color"``) to its values, in the data's order;
    `attributes` is the product's ``Attributes`` list; `instruction` and
    `instruction_attributes` are the synthetic instruction of ``items_ins_v2`` (None when the
    product has none); `human_instructions` the crowd-sourced ones (dicts with
    ``instruction``, ``instruction_attributes``, ``instruction_options``).
    """

    asin: str
    title: str
    name: str = ""
    description: str = ""
    bullet_points: tuple[str, ...] = ()
    price: str = "$100.0"
    pricing: tuple[float, ...] = (100.0,)
    options: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    attributes: tuple[str, ...] = ()
    category: str = ""
    query: str = ""
    product_category: str = ""
    main_image: str = ""
    rating: str = "N.A."
    reviews: tuple[Mapping[str, Any], ...] = ()
    instruction: str | None = None
    instruction_attributes: tuple[str, ...] | None = None
    human_instructions: tuple[Mapping[str, Any], ...] = ()

    def search_text(self) -> str:
        """The document WebShop indexes (``search_engine/convert_product_file_format.py``):
        title, description, first bullet point and ``"name: v1, v2, and name2: ..."``,
        lower-cased."""
        option_text = ", and ".join(f"{name}: {', '.join(values)}"
                                    for name, values in self.options.items())
        first_bullet = self.bullet_points[0] if self.bullet_points else ""
        return " ".join([self.title, self.description, first_bullet, option_text]).lower()


@dataclass(frozen=True, eq=False)
class Catalog:
    """Products in load order (the order goals are generated in) and a lookup by asin."""

    products: tuple[Product, ...]
    source: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "_by_asin", {p.asin: p for p in self.products})

    def __len__(self) -> int:
        return len(self.products)

    def get(self, asin: str) -> Product:
        return self._by_asin[asin]  # type: ignore[attr-defined]

    def __contains__(self, asin: object) -> bool:
        return asin in self._by_asin  # type: ignore[attr-defined]


def default_data_dir() -> Path:
    """``$WEBSHOP_DATA`` when set, else ``<repo root>/../shared/data/webshop``, else the
    ``harness data pull webshop`` cache; `tasks.datasets.DataMissingError` (one line naming
    that command) when none holds the data."""
    from tasks.webshop.sources import DATASET

    return DATASET.locate()


def price_tag(pricing: Sequence[float]) -> str:
    """WebShop's display price: ``"$X"`` or ``"$X to $Y"`` (Python float formatting)."""
    return f"${pricing[0]}" if len(pricing) == 1 else f"${pricing[0]} to ${pricing[1]}"


def _parse_pricing(raw: Any) -> tuple[float, ...]:
    if not raw:
        return (100.0,)
    try:
        prices = [float(Decimal(re.sub(r"[^\d.]", "", part))) for part in str(raw).split("$")[1:]]
    except InvalidOperation as exc:
        raise WebShopDataError(f"unparseable price {raw!r}") from exc
    if not prices:
        raise WebShopDataError(f"unparseable price {raw!r}")
    return tuple(prices[:2])


def _options(customization: Any) -> dict[str, tuple[str, ...]]:
    options: dict[str, tuple[str, ...]] = {}
    if not customization:
        return options
    for name, contents in customization.items():
        if contents is None:
            continue
        options[name.lower()] = tuple(c["value"].strip().replace("/", " | ").lower()
                                      for c in contents)
    return options


def _instruction_fields(entry: Mapping[str, Any] | None) -> dict[str, Any]:
    entry = entry or {}
    attrs = entry.get("instruction_attributes")
    return {"instruction": entry.get("instruction"),
            "instruction_attributes": tuple(attrs) if attrs is not None else None}


def process_raw_product(raw: Mapping[str, Any], attributes: Mapping[str, Any],
                        human: Mapping[str, Any] | None = None) -> Product:
    """A raw scraped record (``items_shuffle*.json``) processed as ``load_products`` does."""
    asin = raw["asin"]
    bullets = raw.get("small_description", [])
    bullets = list(bullets) if isinstance(bullets, list) else [bullets]
    pricing = _parse_pricing(raw.get("pricing"))
    entry = attributes.get(asin)
    attrs = entry["attributes"] if entry and "attributes" in entry else ["DUMMY_ATTR"]
    return Product(
        asin=asin, title=raw["name"], name=raw["name"], description=raw["full_description"],
        bullet_points=tuple(bullets), price=price_tag(pricing), pricing=pricing,
        options=_options(raw.get("customization_options")), attributes=tuple(attrs),
        category=raw.get("category", ""), query=raw.get("query", "").lower().strip(),
        product_category=raw.get("product_category", ""),
        main_image=(raw.get("images") or [""])[0],
        human_instructions=tuple((human or {}).get(asin, ())),
        **_instruction_fields(entry))


def _from_processed(record: Mapping[str, Any], attributes: Mapping[str, Any]) -> Product:
    return Product(
        asin=record["asin"], title=record["Title"], name=record.get("name", record["Title"]),
        description=record.get("Description", ""),
        bullet_points=tuple(record.get("BulletPoints", ())), price=record["Price"],
        pricing=tuple(record["pricing"]),
        options={k: tuple(v) for k, v in (record.get("options") or {}).items()},
        attributes=tuple(record.get("Attributes", ())), category=record.get("category", ""),
        query=record.get("query", ""), product_category=record.get("product_category", ""),
        main_image=record.get("MainImage", ""), rating=str(record.get("Rating", "N.A.")),
        reviews=tuple(record.get("Reviews") or ()),
        human_instructions=tuple(record.get("instructions") or ()),
        **_instruction_fields(attributes.get(record["asin"])))


def _one(folder: Path, pattern: str, required: bool = True) -> Path | None:
    found = sorted(folder.glob(pattern))
    if len(found) > 1:
        raise WebShopDataError(f"{folder} holds several {pattern} files: "
                               + ", ".join(p.name for p in found))
    if not found and required:
        raise WebShopDataError(f"{folder} has no {pattern} file")
    return found[0] if found else None


def _dedupe_raw(raws: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    seen: set[str] = set()
    kept = []
    for raw in raws:
        asin = raw.get("asin")
        if not isinstance(asin, str) or asin == "nan" or len(asin) > 10 or asin in seen:
            continue
        seen.add(asin)
        kept.append(raw)
    return kept


def _ordered(products: list[Product], order_file: Path | None) -> list[Product]:
    if order_file is None:
        return products
    order = [line.strip() for line in order_file.read_text().splitlines() if line.strip()]
    by_asin = {p.asin: p for p in products}
    if set(order) != set(by_asin) or len(order) != len(by_asin):
        raise WebShopDataError(f"{order_file} does not list exactly the catalogue's asins")
    return [by_asin[a] for a in order]


def load_catalog(path: str | os.PathLike | None = None, *,
                 num_products: int | None = None) -> Catalog:
    """Load the catalogue from `path` (see the module docstring for the layouts).

    `num_products` keeps the first N products in load order (upstream's ``num_products``).
    Raises `WebShopDataError` (one line) when the folder or a required file is missing.
    """
    folder = Path(path) if path is not None else default_data_dir()
    if not folder.is_dir():
        raise WebShopDataError(f"WebShop data folder {folder} not found; pass a path or set "
                               f"{DATA_ENV} to a folder with products*.jsonl or "
                               "items_shuffle*.json")
    attributes = json.loads(_one(folder, "items_ins_v2*.json").read_text())
    processed = _one(folder, "products*.jsonl", required=False)
    if processed is not None:
        with processed.open(encoding="utf-8") as lines:
            products = [_from_processed(json.loads(line), attributes) for line in lines
                        if line.strip()]
        products = _ordered(products, _one(folder, "asin_order.txt", required=False))
    else:
        raw_file = _one(folder, "items_shuffle*.json")
        human_file = _one(folder, "items_human_ins.json", required=False)
        human = json.loads(human_file.read_text()) if human_file else {}
        raws = _dedupe_raw(json.loads(raw_file.read_text()))
        products = [process_raw_product(raw, attributes, human) for raw in raws]
    if num_products is not None:
        products = products[:num_products]
    return Catalog(tuple(products), source=str(folder))
