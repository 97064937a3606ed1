"""The retail domain's tools, written from the behaviour τ-bench's tools show on its database.

Each checks its arguments in upstream's order (so the first failing check gives upstream's
message), then changes the order or user record in place and answers with the changed
record as JSON. Gift cards are credited or debited at once; other payment methods only
through the order's ``payment_history``. Equality with upstream on generated calls is
proved by ``tests/tasks/taubench/fixtures`` (see the test's docstring).
"""

from __future__ import annotations

import json
from typing import Any

from tasks.taubench.toolkit import (CALCULATE, THINK, TRANSFER, Toolbox, ToolSpec, calculate,
                                    think, transfer_to_human_agents)

__all__ = ["TOOLBOX"]

TOOLBOX = Toolbox()
_ADDRESS = {
    "address1": ("string", "first line of the address"),
    "address2": ("string", "second line of the address (may be empty)"),
    "city": ("string", "city"), "state": ("string", "state, e.g. 'CA'"),
    "country": ("string", "country, e.g. 'USA'"), "zip": ("string", "five-digit zip code")}
_ORDER_ID = ("string", "the order id, with its '#', e.g. '#W0000000'")
_CANCEL_REASONS = ("no longer needed", "ordered by mistake")


def _address(address1: str, address2: str, city: str, state: str, country: str,
             zip: str) -> dict[str, str]:  # noqa: A002 - the argument's public name
    return {"address1": address1, "address2": address2, "city": city, "state": state,
            "country": country, "zip": zip}


def _count_missing(wanted: list[str], order: dict[str, Any]) -> str | None:
    """The first wanted item id listed more often than the order holds it, else None."""
    held = [item["item_id"] for item in order["items"]]
    for item_id in wanted:
        if wanted.count(item_id) > held.count(item_id):
            return item_id
    return None


def _price_difference(order: dict[str, Any], products: dict[str, Any], item_ids: list[str],
                      new_item_ids: list[str]) -> tuple[float, str | None]:
    """Sum of (new variant price - old item price); or an error for an unavailable variant."""
    total = 0
    for item_id, new_item_id in zip(item_ids, new_item_ids):
        item = next(item for item in order["items"] if item["item_id"] == item_id)
        variants = products[item["product_id"]]["variants"]
        if not (new_item_id in variants and variants[new_item_id]["available"]):
            return 0, f"Error: new item {new_item_id} not found or available"
        total += variants[new_item_id]["price"] - item["price"]
    return total, None


def _user_method(data: dict[str, Any], order: dict[str, Any], method_id: str) -> Any:
    return data["users"][order["user_id"]]["payment_methods"].get(method_id)


def _add_balance(method: dict[str, Any], amount: float) -> None:
    method["balance"] = round(method["balance"] + amount, 2)


@TOOLBOX.tool("CancelPendingOrder", ToolSpec(
    "cancel_pending_order", "Cancel a pending order and refund it (gift cards at once, other "
    "methods in 5-7 business days). Needs the user's explicit confirmation.",
    {"order_id": _ORDER_ID,
     "reason": ("string", "either 'no longer needed' or 'ordered by mistake'")}, writes=True))
def cancel_pending_order(data: dict[str, Any], order_id: str, reason: str) -> str:
    orders = data["orders"]
    if order_id not in orders:
        return "Error: order not found"
    order = orders[order_id]
    if order["status"] != "pending":
        return "Error: non-pending order cannot be cancelled"
    if reason not in _CANCEL_REASONS:
        return "Error: invalid reason"
    refunds = []
    for payment in order["payment_history"]:
        method_id = payment["payment_method_id"]
        refunds.append({"transaction_type": "refund", "amount": payment["amount"],
                        "payment_method_id": method_id})
        if "gift_card" in method_id:
            _add_balance(data["users"][order["user_id"]]["payment_methods"][method_id],
                         payment["amount"])
    order["status"] = "cancelled"
    order["cancel_reason"] = reason
    order["payment_history"].extend(refunds)
    return json.dumps(order)


@TOOLBOX.tool("ExchangeDeliveredOrderItems", ToolSpec(
    "exchange_delivered_order_items", "Exchange items of a delivered order for other "
    "variants of the same products; the price difference is paid or refunded with the given "
    "method. Can be done only once per order; needs the user's explicit confirmation.",
    {"order_id": _ORDER_ID,
     "item_ids": ("array", "the item ids to exchange (repeat an id to exchange two of it)"),
     "new_item_ids": ("array", "the new item ids, position by position"),
     "payment_method_id": ("string", "a payment method id of the user, e.g. "
                                     "'gift_card_0000000'")}, writes=True))
def exchange_delivered_order_items(data: dict[str, Any], order_id: str, item_ids: list[str],
                                   new_item_ids: list[str], payment_method_id: str) -> str:
    orders = data["orders"]
    if order_id not in orders:
        return "Error: order not found"
    order = orders[order_id]
    if order["status"] != "delivered":
        return "Error: non-delivered order cannot be exchanged"
    missing = _count_missing(item_ids, order)
    if missing is not None:
        return f"Error: {missing} not found"
    if len(item_ids) != len(new_item_ids):
        return "Error: the number of items to be exchanged should match"
    difference, error = _price_difference(order, data["products"], item_ids, new_item_ids)
    if error:
        return error
    difference = round(difference, 2)
    method = _user_method(data, order, payment_method_id)
    if method is None:
        return "Error: payment method not found"
    if method["source"] == "gift_card" and method["balance"] < difference:
        return "Error: insufficient gift card balance to pay for the price difference"
    order["status"] = "exchange requested"
    order["exchange_items"] = sorted(item_ids)
    order["exchange_new_items"] = sorted(new_item_ids)
    order["exchange_payment_method_id"] = payment_method_id
    order["exchange_price_difference"] = difference
    return json.dumps(order)


@TOOLBOX.tool("FindUserIdByEmail", ToolSpec(
    "find_user_id_by_email", "Find a user id by email.",
    {"email": ("string", "the email, e.g. 'someone@example.com'")}))
def find_user_id_by_email(data: dict[str, Any], email: str) -> str:
    wanted = email.lower()
    for user_id, profile in data["users"].items():
        if profile["email"].lower() == wanted:
            return user_id
    return "Error: user not found"


@TOOLBOX.tool("FindUserIdByNameZip", ToolSpec(
    "find_user_id_by_name_zip", "Find a user id by first name, last name and zip code "
    "(when the user does not remember the email).",
    {"first_name": ("string", "first name"), "last_name": ("string", "last name"),
     "zip": ("string", "zip code")}))
def find_user_id_by_name_zip(data: dict[str, Any], first_name: str, last_name: str,
                             zip: str) -> str:  # noqa: A002
    first, last = first_name.lower(), last_name.lower()
    for user_id, profile in data["users"].items():
        name = profile["name"]
        if (name["first_name"].lower() == first and name["last_name"].lower() == last
                and profile["address"]["zip"] == zip):
            return user_id
    return "Error: user not found"


def _lookup(table: str, not_found: str):
    def lookup(data: dict[str, Any], key: str) -> str:
        rows = data[table]
        return json.dumps(rows[key]) if key in rows else not_found
    return lookup


_order = _lookup("orders", "Error: order not found")
_product = _lookup("products", "Error: product not found")
_user = _lookup("users", "Error: user not found")


@TOOLBOX.tool("GetOrderDetails", ToolSpec(
    "get_order_details", "The status and details of an order.", {"order_id": _ORDER_ID}))
def get_order_details(data: dict[str, Any], order_id: str) -> str:
    return _order(data, order_id)


@TOOLBOX.tool("GetProductDetails", ToolSpec(
    "get_product_details", "The inventory details (variants, prices, availability) of a "
    "product.", {"product_id": ("string", "the product id (not an item id)")}))
def get_product_details(data: dict[str, Any], product_id: str) -> str:
    return _product(data, product_id)


@TOOLBOX.tool("GetUserDetails", ToolSpec(
    "get_user_details", "The details of a user, with their orders and payment methods.",
    {"user_id": ("string", "the user id, e.g. 'sara_doe_496'")}))
def get_user_details(data: dict[str, Any], user_id: str) -> str:
    return _user(data, user_id)


@TOOLBOX.tool("ListAllProductTypes", ToolSpec(
    "list_all_product_types", "The name and product id of every product type, by name."))
def list_all_product_types(data: dict[str, Any]) -> str:
    by_name = {product["name"]: product["product_id"] for product in data["products"].values()}
    return json.dumps(dict(sorted(by_name.items())))


@TOOLBOX.tool("ModifyPendingOrderAddress", ToolSpec(
    "modify_pending_order_address", "Change the shipping address of a pending order. Needs "
    "the user's explicit confirmation.", {"order_id": _ORDER_ID, **_ADDRESS}, writes=True))
def modify_pending_order_address(data: dict[str, Any], order_id: str, address1: str,
                                 address2: str, city: str, state: str, country: str,
                                 zip: str) -> str:  # noqa: A002
    orders = data["orders"]
    if order_id not in orders:
        return "Error: order not found"
    order = orders[order_id]
    if order["status"] != "pending":
        return "Error: non-pending order cannot be modified"
    order["address"] = _address(address1, address2, city, state, country, zip)
    return json.dumps(order)


@TOOLBOX.tool("ModifyPendingOrderItems", ToolSpec(
    "modify_pending_order_items", "Change items of a pending order to other variants of the "
    "same products; the difference is paid or refunded with the given method. Can be done "
    "only once per order; needs the user's explicit confirmation.",
    {"order_id": _ORDER_ID, "item_ids": ("array", "the item ids to modify"),
     "new_item_ids": ("array", "the new item ids, position by position"),
     "payment_method_id": ("string", "a payment method id of the user")}, writes=True))
def modify_pending_order_items(data: dict[str, Any], order_id: str, item_ids: list[str],
                               new_item_ids: list[str], payment_method_id: str) -> str:
    orders, products = data["orders"], data["products"]
    if order_id not in orders:
        return "Error: order not found"
    order = orders[order_id]
    if order["status"] != "pending":
        return "Error: non-pending order cannot be modified"
    missing = _count_missing(item_ids, order)
    if missing is not None:
        return f"Error: {missing} not found"
    if len(item_ids) != len(new_item_ids):
        return "Error: the number of items to be exchanged should match"
    difference, error = _price_difference(order, products, item_ids, new_item_ids)
    if error:
        return error
    method = _user_method(data, order, payment_method_id)
    if method is None:
        return "Error: payment method not found"
    if method["source"] == "gift_card" and method["balance"] < difference:
        return "Error: insufficient gift card balance to pay for the new item"
    order["payment_history"].append({
        "transaction_type": "payment" if difference > 0 else "refund",
        "amount": abs(difference), "payment_method_id": payment_method_id})
    if method["source"] == "gift_card":
        _add_balance(method, -difference)
    for item_id, new_item_id in zip(item_ids, new_item_ids):
        item = next(item for item in order["items"] if item["item_id"] == item_id)
        variant = products[item["product_id"]]["variants"][new_item_id]
        item["item_id"], item["price"], item["options"] = (
            new_item_id, variant["price"], variant["options"])
    order["status"] = "pending (item modified)"
    return json.dumps(order)


@TOOLBOX.tool("ModifyPendingOrderPayment", ToolSpec(
    "modify_pending_order_payment", "Pay a pending order with another of the user's payment "
    "methods. Needs the user's explicit confirmation.",
    {"order_id": _ORDER_ID, "payment_method_id": ("string", "the new payment method id")},
    writes=True))
def modify_pending_order_payment(data: dict[str, Any], order_id: str,
                                 payment_method_id: str) -> str:
    orders = data["orders"]
    if order_id not in orders:
        return "Error: order not found"
    order = orders[order_id]
    if order["status"] != "pending":
        return "Error: non-pending order cannot be modified"
    methods = data["users"][order["user_id"]]["payment_methods"]
    if payment_method_id not in methods:
        return "Error: payment method not found"
    history = order["payment_history"]
    if len(history) > 1 or history[0]["transaction_type"] != "payment":
        return "Error: there should be exactly one payment for a pending order"
    old_id = history[0]["payment_method_id"]
    if old_id == payment_method_id:
        return "Error: the new payment method should be different from the current one"
    amount, method = history[0]["amount"], methods[payment_method_id]
    if method["source"] == "gift_card" and method["balance"] < amount:
        return "Error: insufficient gift card balance to pay for the order"
    history.append({"transaction_type": "payment", "amount": amount,
                    "payment_method_id": payment_method_id})
    history.append({"transaction_type": "refund", "amount": amount, "payment_method_id": old_id})
    if method["source"] == "gift_card":
        _add_balance(method, -amount)
    if "gift_card" in old_id:
        _add_balance(methods[old_id], amount)
    return json.dumps(order)


@TOOLBOX.tool("ModifyUserAddress", ToolSpec(
    "modify_user_address", "Change the default address of a user. Needs the user's explicit "
    "confirmation.", {"user_id": ("string", "the user id"), **_ADDRESS}, writes=True))
def modify_user_address(data: dict[str, Any], user_id: str, address1: str, address2: str,
                        city: str, state: str, country: str, zip: str) -> str:  # noqa: A002
    users = data["users"]
    if user_id not in users:
        return "Error: user not found"
    users[user_id]["address"] = _address(address1, address2, city, state, country, zip)
    return json.dumps(users[user_id])


@TOOLBOX.tool("ReturnDeliveredOrderItems", ToolSpec(
    "return_delivered_order_items", "Return items of a delivered order; the refund goes to "
    "the original payment method or a gift card. Needs the user's explicit confirmation.",
    {"order_id": _ORDER_ID, "item_ids": ("array", "the item ids to return"),
     "payment_method_id": ("string", "the original payment method or a gift card of the "
                                     "user")}, writes=True))
def return_delivered_order_items(data: dict[str, Any], order_id: str, item_ids: list[str],
                                 payment_method_id: str) -> str:
    orders = data["orders"]
    if order_id not in orders:
        return "Error: order not found"
    order = orders[order_id]
    if order["status"] != "delivered":
        return "Error: non-delivered order cannot be returned"
    if payment_method_id not in data["users"][order["user_id"]]["payment_methods"]:
        return "Error: payment method not found"
    if ("gift_card" not in payment_method_id
            and payment_method_id != order["payment_history"][0]["payment_method_id"]):
        return ("Error: payment method should be either the original payment method or a "
                "gift card")
    if _count_missing(item_ids, order) is not None:
        return "Error: some item not found"
    order["status"] = "return requested"
    order["return_items"] = sorted(item_ids)
    order["return_payment_method_id"] = payment_method_id
    return json.dumps(order)


TOOLBOX.add("Calculate", CALCULATE, calculate)
TOOLBOX.add("Think", THINK, think)
TOOLBOX.add("TransferToHumanAgents", TRANSFER, transfer_to_human_agents)
