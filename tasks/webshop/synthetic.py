"""A seeded generator of WebShop-shaped catalogues (for the quickstart and for scale).

`generate_catalog(n, seed)` builds `n` products in the processed schema of
`tasks.webshop.data.Product`, drawn from ``make_rng("webshop-synthetic", seed)``: five
categories as in WebShop (beauty, electronics, fashion, garden, grocery), each with its own
product types, descriptors, attributes and option groups; a made-up brand per product; a
title, a two-to-three sentence description and three to five bullet points that mention the
product's attributes; a price (one in ten a ``[low, high]`` range); zero to two option groups
of two to five values; and, for about 40% of products, an ``items_ins_v2``-style synthetic
instruction (``"i need a <descriptor> <type> that is <attribute> and <attribute>"``) with its
``instruction_attributes``. Goals, prices and splits then come from `tasks.webshop.goals`
exactly as for the real data. Same `n` and `seed` give the same catalogue, and the first
`m` products of ``generate_catalog(n)`` equal ``generate_catalog(m)`` (each product has its
own RNG stream).
"""

from __future__ import annotations

import numpy as np

from harness.core import make_rng
from tasks.webshop.data import Catalog, Product, price_tag

__all__ = ["CATEGORIES", "generate_catalog", "generate_product"]

_COLORS = ("black", "white", "navy blue", "grey", "red", "green", "beige", "pink", "brown",
           "light blue", "olive", "purple")
CATEGORIES = {
    "beauty": {
        "path": "Beauty & Personal Care › Skin Care",
        "types": ("face cream", "shampoo", "lip balm", "body lotion", "serum", "face mask",
                  "hair oil", "nail polish", "sunscreen", "eye cream"),
        "descriptors": ("gentle", "hydrating", "organic", "lightweight", "soothing", "daily"),
        "attributes": ("paraben free", "cruelty free", "long lasting", "natural ingredients",
                       "sensitive skin", "dry skin", "easy use", "travel size", "vitamin c"),
        "options": {"scent": ("lavender", "unscented", "vanilla", "citrus", "rose", "mint"),
                    "size": ("1 fl oz", "2 fl oz", "4 fl oz", "8 fl oz", "pack of 2")},
    },
    "electronics": {
        "path": "Electronics › Accessories & Supplies",
        "types": ("wireless earbuds", "phone case", "usb cable", "power bank", "bluetooth speaker",
                  "hdmi adapter", "smart watch band", "tablet stand", "wall charger", "webcam"),
        "descriptors": ("portable", "compact", "fast", "durable", "premium", "universal"),
        "attributes": ("fast charging", "high definition", "noise cancelling", "easy install",
                       "water resistant", "long battery life", "plug play", "aluminum alloy"),
        "options": {"color": _COLORS[:6],
                    "style": ("standard", "pro", "2 pack", "with case", "mini")},
    },
    "fashion": {
        "path": "Clothing, Shoes & Jewelry › Women › Clothing",
        "types": ("t-shirt", "hoodie", "running shoes", "yoga pants", "dress", "sweater",
                  "rain jacket", "sandals", "leggings", "button down shirt"),
        "descriptors": ("casual", "slim fit", "classic", "relaxed", "lightweight", "vintage"),
        "attributes": ("machine wash", "long sleeve", "elastic waist", "quick drying",
                       "cotton spandex", "button closure", "rubber sole", "relaxed fit"),
        "options": {"color": _COLORS,
                    "size": ("small", "medium", "large", "x-large", "xx-large")},
    },
    "garden": {
        "path": "Home & Kitchen › Furniture › Living Room Furniture",
        "types": ("coffee table", "bookshelf", "floor lamp", "throw pillow", "area rug",
                  "bar stool", "storage bench", "wall mirror", "plant stand", "curtain panel"),
        "descriptors": ("modern", "rustic", "minimalist", "farmhouse", "sturdy", "elegant"),
        "attributes": ("easy assemble", "solid wood", "living room", "space saving",
                       "stainless steel", "mid century", "dining room", "assembly required"),
        "options": {"color": _COLORS[:8], "size": ("24 inch", "36 inch", "48 inch", "set of 2")},
    },
    "grocery": {
        "path": "Grocery & Gourmet Food › Snacks & Sweets",
        "types": ("protein bar", "herbal tea", "trail mix", "dark chocolate", "coffee beans",
                  "granola", "beef jerky", "olive oil", "honey", "rice crackers"),
        "descriptors": ("crunchy", "sweet", "savory", "roasted", "healthy", "classic"),
        "attributes": ("gluten free", "non gmo", "low sugar", "high protein", "keto friendly",
                       "individually wrapped", "plant based", "usda organic"),
        "options": {"flavor name": ("original", "sea salt", "honey roasted", "spicy",
                                    "peanut butter", "cinnamon"),
                    "size": ("6 ounce", "12 ounce", "pack of 4", "pack of 12")},
    },
}
"""Per category: breadcrumb, product types, descriptors, attributes and option groups."""
_SYLLABLES = ("ka", "lo", "mi", "ra", "ven", "tor", "sa", "qui", "zen", "bel", "do", "nex",
              "ar", "fi", "lux", "mo", "pra", "vi", "sol", "ta")
_FILLER = ("designed", "for", "everyday", "use", "made", "with", "care", "perfect", "gift",
           "quality", "materials", "our", "customers", "love", "this", "great", "value",
           "home", "office", "travel", "family", "friends", "comfort", "style", "simple",
           "reliable", "tested", "satisfaction", "guaranteed", "new", "improved", "formula",
           "ideal", "all", "season", "lasting", "results", "easy", "clean", "store")
_CATEGORY_NAMES = tuple(sorted(CATEGORIES))


def _pick(rng: np.random.Generator, items, size: int | None = None):
    if size is None:
        return items[int(rng.integers(len(items)))]
    return [items[i] for i in rng.choice(len(items), size=size, replace=False)]


def _asin(index: int) -> str:
    digits, value = [], index
    for _ in range(9):
        value, digit = divmod(value, 36)
        digits.append("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"[digit])
    return "S" + "".join(reversed(digits))


def _sentence(rng: np.random.Generator, must: str) -> str:
    words = _pick(rng, _FILLER, int(rng.integers(5, 10)))
    words.insert(int(rng.integers(len(words) + 1)), must)
    return " ".join(words).capitalize() + "."


def _price(rng: np.random.Generator) -> tuple[float, ...]:
    low = round(float(np.exp(rng.normal(3.2, 0.9))) + 0.99, 2)
    if rng.random() < 0.1:
        return (low, round(low * float(rng.uniform(1.2, 2.0)), 2))
    return (low,)


def generate_product(index: int, seed: int = 0) -> Product:
    """Product number `index` of the catalogue drawn with `seed` (its own RNG stream)."""
    rng = make_rng("webshop-synthetic", seed, index)
    category = _pick(rng, _CATEGORY_NAMES)
    spec = CATEGORIES[category]
    kind, descriptor = _pick(rng, spec["types"]), _pick(rng, spec["descriptors"])
    attributes = _pick(rng, spec["attributes"], int(rng.integers(2, 5)))
    brand = "".join(_pick(rng, _SYLLABLES, int(rng.integers(2, 4)))).capitalize()
    title = f"{brand} {descriptor.title()} {kind.title()} - {attributes[0].title()}"
    groups = _pick(rng, sorted(spec["options"]), int(rng.integers(0, 3)))
    options = {g: tuple(_pick(rng, spec["options"][g], int(rng.integers(2, min(5, len(
        spec["options"][g])) + 1)))) for g in groups}
    bullets = tuple(_sentence(rng, a) for a in attributes) + (
        _sentence(rng, kind),) * int(rng.integers(0, 2))
    pricing = _price(rng)
    instruction = chosen = None
    if rng.random() < 0.4:
        chosen = tuple(_pick(rng, attributes, int(rng.integers(1, min(3, len(attributes)) + 1))))
        article = "an" if descriptor[0] in "aeiou" else "a"
        instruction = f"i need {article} {descriptor} {kind} that is " + " and ".join(chosen)
    return Product(
        asin=_asin(index), title=title, name=title,
        description=" ".join(_sentence(rng, x) for x in (kind, *attributes[:2])),
        bullet_points=bullets, price=price_tag(pricing), pricing=pricing, options=options,
        attributes=tuple(attributes), category=category, query=f"{kind}s",
        product_category=f"{spec['path']} › {kind.title()}",
        main_image=f"https://example.invalid/{_asin(index)}.jpg",
        instruction=instruction, instruction_attributes=chosen)


def generate_catalog(n_products: int, seed: int = 0) -> Catalog:
    """`n_products` generated products in load order (see the module docstring)."""
    products = tuple(generate_product(i, seed) for i in range(n_products))
    return Catalog(products, source=f"webshop-synthetic(n={n_products}, seed={seed})")
