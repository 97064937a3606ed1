"""Generated tool calls for the differential fixture (valid and invalid arguments, every tool).

`generate(domain, database, rng)` returns call sequences; each sequence runs on a fresh
database. The fixture file stores the calls, so the test does not depend on this generator;
it is kept to regenerate the fixture (with upstream's tool code, outside this repository).
"""

from __future__ import annotations

from typing import Any

import numpy as np

Call = dict[str, Any]


def _choice(rng: np.random.Generator, items: list) -> Any:
    return items[int(rng.integers(len(items)))]


def _mangle(rng: np.random.Generator, call: Call) -> Call:
    """Break a call's arguments: drop one, add an unknown one, or keep it."""
    roll = rng.random()
    arguments = dict(call["kwargs"])
    if roll < 0.06 and arguments:
        arguments.pop(_choice(rng, sorted(arguments)))
    elif roll < 0.1:
        arguments["unexpected"] = "x"
    return {"name": call["name"], "kwargs": arguments}


def _expression(rng: np.random.Generator) -> str:
    return _choice(rng, ["2 + 3 * 4", "(10 - 4) / 3", "1 / 0", "12.5 * 2", "abc + 1",
                         "100 - 33.333", "2 ** 3", "((1 + 2)", f"{int(rng.integers(1, 999))} * 1.07"])


def _retail_calls(db: dict[str, Any], rng: np.random.Generator) -> list[Call]:
    users, orders, products = db["users"], db["orders"], db["products"]
    user_id = _choice(rng, sorted(users))
    user = users[user_id]
    own = user["orders"] or ["#W0000000"]
    by_status = [o for o in sorted(orders) if orders[o]["status"] in ("pending", "delivered")]
    methods = sorted(user["payment_methods"]) + ["credit_card_0000000"]
    calls: list[Call] = []
    for _ in range(11):
        order_id = _choice(rng, own) if rng.random() < 0.5 else _choice(rng, by_status)
        order = orders.get(order_id)
        owner = users[order["user_id"]] if order else user
        owner_methods = sorted(owner["payment_methods"]) + ["gift_card_0000000"]
        items = [i["item_id"] for i in order["items"]] if order else ["1000000000"]
        picked = [_choice(rng, items) for _ in range(int(rng.integers(1, 3)))]
        new_items = []
        for item_id in picked:
            product = next((products[i["product_id"]] for i in (order or {}).get("items", [])
                            if i["item_id"] == item_id), None)
            new_items.append(_choice(rng, sorted(product["variants"])) if product else "1")
        if rng.random() < 0.1:
            new_items = new_items[:-1]
        address = {"address1": f"{int(rng.integers(1, 999))} Main St", "address2": "Apt 1",
                   "city": "Austin", "state": "TX", "country": "USA", "zip": "78701"}
        pid = (orders[order_id]["items"][0]["product_id"] if order
               else _choice(rng, sorted(products)))
        options = [
            ("find_user_id_by_email", {"email": _choice(rng, [user["email"],
                                                               user["email"].upper(),
                                                               "nobody@example.com"])}),
            ("find_user_id_by_name_zip", {"first_name": user["name"]["first_name"],
                                          "last_name": user["name"]["last_name"],
                                          "zip": _choice(rng, [user["address"]["zip"], "00000"])}),
            ("get_order_details", {"order_id": _choice(rng, [order_id, "#W0000000"])}),
            ("get_product_details", {"product_id": _choice(rng, [pid, "123"])}),
            ("get_user_details", {"user_id": _choice(rng, [user_id, "nobody_1"])}),
            ("list_all_product_types", {}),
            ("cancel_pending_order", {"order_id": order_id, "reason": _choice(
                rng, ["no longer needed", "ordered by mistake", "other"])}),
            ("exchange_delivered_order_items", {"order_id": order_id, "item_ids": picked,
                                                "new_item_ids": new_items,
                                                "payment_method_id": _choice(rng, owner_methods)}),
            ("modify_pending_order_items", {"order_id": order_id, "item_ids": picked,
                                            "new_item_ids": new_items,
                                            "payment_method_id": _choice(rng, owner_methods)}),
            ("modify_pending_order_address", {"order_id": order_id, **address}),
            ("modify_pending_order_payment", {"order_id": order_id,
                                              "payment_method_id": _choice(rng, owner_methods)}),
            ("modify_user_address", {"user_id": _choice(rng, [user_id, "nobody_1"]), **address}),
            ("return_delivered_order_items", {"order_id": order_id, "item_ids": picked,
                                              "payment_method_id": _choice(rng, owner_methods
                                                                           + methods)}),
            ("calculate", {"expression": _expression(rng)}),
            ("think", {"thought": "checking"}),
            ("transfer_to_human_agents", {"summary": "help"}),
        ]
        name, kwargs = _choice(rng, options)
        calls.append(_mangle(rng, {"name": name, "kwargs": kwargs}))
    return calls


def _airline_calls(db: dict[str, Any], rng: np.random.Generator) -> list[Call]:
    users, reservations, flights = db["users"], db["reservations"], db["flights"]
    user_id = _choice(rng, sorted(users))
    user = users[user_id]
    own = user["reservations"] or ["ABC123"]
    methods = sorted(user["payment_methods"]) + ["credit_card_0000000"]
    numbers = sorted(flights)
    calls: list[Call] = []
    for _ in range(11):
        reservation_id = _choice(rng, own) if rng.random() < 0.8 else "ZZZZZZ"
        booking = reservations.get(reservation_id)
        flight = flights[_choice(rng, numbers)]
        date = _choice(rng, sorted(flight["dates"]))
        cabin = _choice(rng, ["basic_economy", "economy", "business"])
        legs = [{"flight_number": flight["flight_number"], "date": date}]
        if booking and rng.random() < 0.5:
            legs = [{"flight_number": f["flight_number"], "date": f["date"]}
                    for f in booking["flights"]] + (legs if rng.random() < 0.5 else [])
            cabin = booking["cabin"] if rng.random() < 0.6 else cabin
        passengers = [{"first_name": user["name"]["first_name"],
                       "last_name": user["name"]["last_name"], "dob": user["dob"]}]
        price = 0
        status = flight["dates"][date]
        if "prices" in status:
            price = status["prices"][cabin]
        insurance = _choice(rng, ["yes", "no"])
        nonfree = int(rng.integers(0, 3))
        total = price + (30 if insurance == "yes" else 0) + 50 * nonfree
        method = _choice(rng, methods)
        payment = [{"payment_id": method, "amount": total + _choice(rng, [0, 0, 0, 10])}]
        options = [
            ("get_user_details", {"user_id": _choice(rng, [user_id, "nobody_1"])}),
            ("get_reservation_details", {"reservation_id": reservation_id}),
            ("list_all_airports", {}),
            ("search_direct_flight", {"origin": flight["origin"],
                                      "destination": flight["destination"], "date": date}),
            ("search_onestop_flight", {"origin": flight["origin"], "destination": _choice(
                rng, ["JFK", "SFO", "ORD", "SEA", "LAX"]), "date": date}),
            ("book_reservation", {"user_id": user_id, "origin": flight["origin"],
                                  "destination": flight["destination"],
                                  "flight_type": "one_way", "cabin": cabin,
                                  "flights": legs[-1:], "passengers": passengers,
                                  "payment_methods": payment, "total_baggages": nonfree + 1,
                                  "nonfree_baggages": nonfree, "insurance": insurance}),
            ("cancel_reservation", {"reservation_id": reservation_id}),
            ("send_certificate", {"user_id": _choice(rng, [user_id, "nobody_1"]),
                                  "amount": int(_choice(rng, [50, 100, 250]))}),
            ("update_reservation_baggages", {"reservation_id": reservation_id,
                                             "total_baggages": nonfree + 1,
                                             "nonfree_baggages": nonfree,
                                             "payment_id": method}),
            ("update_reservation_flights", {"reservation_id": reservation_id, "cabin": cabin,
                                            "flights": legs, "payment_id": method}),
            ("update_reservation_passengers", {
                "reservation_id": reservation_id,
                "passengers": ((booking or {"passengers": []})["passengers"][:1] + passengers)[
                    :len(booking["passengers"]) if booking and rng.random() < 0.7 else 2]}),
            ("calculate", {"expression": _expression(rng)}),
            ("think", {"thought": "checking"}),
            ("transfer_to_human_agents", {"summary": "help"}),
        ]
        name, kwargs = _choice(rng, options)
        calls.append(_mangle(rng, {"name": name, "kwargs": kwargs}))
    return calls


def generate(domain: str, database: dict[str, Any], seed: int,
             sequences: int = 50) -> list[list[Call]]:
    """`sequences` call sequences of 11 calls each for `domain`, from `seed`."""
    rng = np.random.default_rng(np.random.SeedSequence([seed, 1 if domain == "retail" else 2]))
    make = _retail_calls if domain == "retail" else _airline_calls
    return [make(database, rng) for _ in range(sequences)]
