"""WebShop's pages in ``text`` observation mode: visible texts and clickables of each page.

Upstream renders HTML templates and ``WebAgentTextEnv`` turns them into text: every visible
text node (not inside ``style``/``script``/``head``/``title``/``meta``, not a comment),
stripped, joined with `` [SEP] ``; a whitespace-only node containing a newline is dropped, one
without a newline becomes an empty piece (BeautifulSoup collapses such nodes to ``"\\n"`` or
``" "``). Clickables are the lower-cased texts of the ``btn`` buttons and product links plus
the radio option values. This module produces the same pieces directly from the page state.

The templates are WebShop's original ones (the ones the text environment's navigation,
``< Prev`` on results, item and sub pages, is written for, and that the published agent
results use); the 2022 "Site Environment V2" restyle of the human-facing site (grid results,
``Current Query``, ``< Back to Results``) is not what is rendered here.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from tasks.webshop.data import Product

__all__ = ["PRODUCT_WINDOW", "SUB_PAGES", "BUY_NOW", "NEXT_PAGE", "PREV_PAGE",
           "BACK_TO_SEARCH", "SEP", "PageView", "search_page", "results_page", "item_page",
           "sub_page", "done_page", "text_piece"]

PRODUCT_WINDOW = 10
"""Results per page."""
SUB_PAGES = ("Description", "Features", "Reviews")
BUY_NOW = "Buy Now"
NEXT_PAGE = "Next >"
PREV_PAGE = "< Prev"
BACK_TO_SEARCH = "Back to Search"
SEP = " [SEP] "


@dataclass(frozen=True)
class PageView:
    """A rendered page: its text observation, whether it has the search bar, and its
    clickables ``{lower-cased text: what it is}`` (``"button"``, ``"product"`` or the option
    group of a radio value), in page order."""

    text: str
    has_search_bar: bool
    clickables: Mapping[str, str]


def text_piece(text: str) -> list[str]:
    """The observation pieces one text node gives (none, an empty piece, or the stripped
    text), following BeautifulSoup's whitespace collapsing."""
    if not text:
        return []
    if not text.strip():
        return [] if "\n" in text else [""]
    return [text.strip()]


def _pieces(*texts: str) -> list[str]:
    return [piece for text in texts for piece in text_piece(text)]


def _view(pieces: Sequence[str], buttons: Sequence[str], *, search_bar: bool = False,
          products: Sequence[str] = (), options: Mapping[str, Sequence[str]] | None = None
          ) -> PageView:
    clickables: dict[str, str] = {}
    for label in buttons:
        clickables[label.lower()] = "button"
    for asin in products:
        clickables[asin.lower()] = "product"
    for group, values in (options or {}).items():
        for value in values:
            clickables[value] = group  # radio values are not lower-cased upstream
    return PageView(SEP.join(pieces), search_bar, clickables)


def search_page(instruction: str) -> PageView:
    """The start page: logo, instruction, search bar and its ``Search`` button."""
    return _view(_pieces("WebShop", "Instruction: ", instruction, "Search"), ["Search"],
                 search_bar=True)


def _header(instruction: str) -> list[str]:
    return _pieces("Instruction:", instruction, BACK_TO_SEARCH)


def results_page(instruction: str, products: Sequence[Product], page: int,
                 total: int) -> PageView:
    """One page of results: ``products`` are this page's (at most `PRODUCT_WINDOW`) of
    `total` hits. ``< Prev`` shows from page 2 on; ``Next >`` always shows (as upstream)."""
    buttons = [BACK_TO_SEARCH] + ([PREV_PAGE] if page > 1 else []) + [NEXT_PAGE]
    pieces = _header(instruction) + _pieces(f"Page {page} (Total results: {total})")
    pieces += _pieces(*buttons[1:])
    for product in products:
        pieces += _pieces(product.asin, product.title, product.price)
    return _view(pieces, buttons, products=[p.asin for p in products])


def item_page(instruction: str, product: Product) -> PageView:
    """A product page: option groups with their values, title, price, rating, the three
    sub-page buttons and ``Buy Now``. Selected options are not marked in ``text`` mode."""
    pieces = _header(instruction) + _pieces(PREV_PAGE)
    for group, values in product.options.items():
        pieces += _pieces(group, *values)
    pieces += _pieces(product.title, f"Price: {product.price}", f"Rating: {product.rating}",
                      *SUB_PAGES, BUY_NOW)
    buttons = [BACK_TO_SEARCH, PREV_PAGE, *SUB_PAGES, BUY_NOW]
    return _view(pieces, buttons, options=product.options)


def _review_pieces(review: Mapping) -> list[str]:
    return _pieces(f'"{review.get("title", "")}"', str(review.get("score", "")),
                   str(review.get("body", "")))


def sub_page(instruction: str, product: Product, which: str) -> PageView:
    """``Description``, ``Features`` (bullet points) or ``Reviews`` of a product."""
    pieces = _header(instruction) + _pieces(PREV_PAGE)
    if which == "Description":
        pieces += _pieces(product.description)
    elif which == "Features":
        pieces += _pieces(*(" " + bullet for bullet in product.bullet_points))
    elif which == "Reviews":
        for review in product.reviews:
            pieces += _review_pieces(review)
    else:
        raise ValueError(f"unknown sub page {which!r}")
    return _view(pieces, [BACK_TO_SEARCH, PREV_PAGE])


def _tojson(value: object) -> str:
    """Flask's ``tojson`` filter: sorted keys, ASCII, HTML-sensitive characters escaped."""
    text = json.dumps(value, sort_keys=True, ensure_ascii=True)
    for char, escape in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"), ("'", "\\u0027")):
        text = text.replace(char, escape)
    return text


def done_page(asin: str, options: Mapping[str, str], reward: float) -> PageView:
    """The page after ``Buy Now`` (upstream passes it only the asin, options and reward; the
    other fields render as ``None`` or nothing). It has no clickables."""
    pieces = _pieces("Thank you for shopping with us!", "Your code: ", "None",
                     " (Paste it in your MTurk interface.)", "Purchased", "asin", asin,
                     "options", _tojson(dict(options)))
    for label in ("attrs", "category", "query", "product category"):
        pieces += _pieces(label, "None")
    pieces += _pieces("Target", "asin", "options", "attrs", "price upper", "instuction text",
                      "category", "product category", "query", "Goal", "None", "Reward",
                      "Your score (min 0.0, max 1.0)", str(reward), "Reward Details", "None")
    return _view(pieces, [])
