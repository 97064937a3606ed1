"""The airline domain's tools, written from the behaviour τ-bench's tools show on its database.

Bookings get the ids ``HATHAT``, ``HATHAU``, ``HATHAV`` in turn and the fixed creation time
``2024-05-15T15:00:00``; flight seat counts are never decremented (upstream assumes the
inventory updates later); certificates are consumed whole, gift cards debited by the amount.
Equality with upstream on generated calls is proved by ``tests/tasks/taubench/fixtures``.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from tasks.taubench.toolkit import (CALCULATE, THINK, TRANSFER, Toolbox, ToolSpec, calculate,
                                    think, transfer_to_human_agents)

__all__ = ["TOOLBOX", "AIRPORTS"]

TOOLBOX = Toolbox()
_RESERVATION = ("string", "the reservation id, e.g. 'ZFA04Y'")
_FLIGHTS = ("array", "the flights, each {'flight_number': 'HAT001', 'date': '2024-05-01'}")
_BOOKING_IDS = ("HATHAT", "HATHAU", "HATHAV")
_CERTIFICATE_IDS = ("certificate_3221322", "certificate_3221323", "certificate_3221324")
AIRPORTS = (("SFO", "San Francisco"), ("JFK", "New York"), ("LAX", "Los Angeles"),
            ("ORD", "Chicago"), ("DFW", "Dallas"), ("DEN", "Denver"), ("SEA", "Seattle"),
            ("ATL", "Atlanta"), ("MIA", "Miami"), ("BOS", "Boston"), ("PHX", "Phoenix"),
            ("IAH", "Houston"), ("LAS", "Las Vegas"), ("MCO", "Orlando"), ("EWR", "Newark"),
            ("CLT", "Charlotte"), ("MSP", "Minneapolis"), ("DTW", "Detroit"),
            ("PHL", "Philadelphia"), ("LGA", "LaGuardia"))
"""The airports the domain knows (IATA code, city), in the order the tool lists them."""


def _check_leg(data: dict[str, Any], leg: dict[str, Any], cabin: str,
               passengers: int) -> tuple[dict[str, Any] | None, str | None]:
    """The flight's record for `leg`'s date and the flight, or the first failing check."""
    number = leg["flight_number"]
    if number not in data["flights"]:
        return None, f"Error: flight {number} not found"
    flight = data["flights"][number]
    if leg["date"] not in flight["dates"]:
        return None, f"Error: flight {number} not found on date {leg['date']}"
    on_date = flight["dates"][leg["date"]]
    if on_date["status"] != "available":
        return None, f"Error: flight {number} not available on date {leg['date']}"
    if on_date["available_seats"][cabin] < passengers:
        return None, f"Error: not enough seats on flight {number}"
    leg["price"] = on_date["prices"][cabin]
    leg["origin"], leg["destination"] = flight["origin"], flight["destination"]
    return flight, None


@TOOLBOX.tool("BookReservation", ToolSpec(
    "book_reservation", "Book a reservation. Needs the user's explicit confirmation.",
    {"user_id": ("string", "the user id, e.g. 'sara_doe_496'"),
     "origin": ("string", "IATA code of the origin city"),
     "destination": ("string", "IATA code of the destination city"),
     "flight_type": ("string", "'one_way' or 'round_trip'"),
     "cabin": ("string", "'basic_economy', 'economy' or 'business'"),
     "flights": _FLIGHTS,
     "passengers": ("array", "each {'first_name', 'last_name', 'dob' (YYYY-MM-DD)}"),
     "payment_methods": ("array", "each {'payment_id', 'amount'}; amounts sum to the price"),
     "total_baggages": ("integer", "total number of checked bags"),
     "nonfree_baggages": ("integer", "number of paid checked bags"),
     "insurance": ("string", "'yes' or 'no'")}, writes=True))
def book_reservation(data: dict[str, Any], user_id: str, origin: str, destination: str,
                     flight_type: str, cabin: str, flights: list[dict[str, Any]],
                     passengers: list[dict[str, Any]], payment_methods: list[dict[str, Any]],
                     total_baggages: int, nonfree_baggages: int, insurance: str) -> str:
    reservations, users = data["reservations"], data["users"]
    if user_id not in users:
        return "Error: user not found"
    user = users[user_id]
    booking_id = next((i for i in _BOOKING_IDS[:2] if i not in reservations), _BOOKING_IDS[2])
    booking = {"reservation_id": booking_id, "user_id": user_id, "origin": origin,
               "destination": destination, "flight_type": flight_type, "cabin": cabin,
               "flights": copy.deepcopy(flights), "passengers": passengers,
               "payment_history": payment_methods, "created_at": "2024-05-15T15:00:00",
               "total_baggages": total_baggages, "nonfree_baggages": nonfree_baggages,
               "insurance": insurance}
    price = 0
    for leg in booking["flights"]:
        _, error = _check_leg(data, leg, cabin, len(passengers))
        if error:
            return error
        price += leg["price"] * len(passengers)
    if insurance == "yes":
        price += 30 * len(passengers)
    price += 50 * nonfree_baggages
    methods = user["payment_methods"]
    for payment in payment_methods:
        method_id, amount = payment["payment_id"], payment["amount"]
        if method_id not in methods:
            return f"Error: payment method {method_id} not found"
        if methods[method_id]["source"] in ("gift_card", "certificate") and \
                methods[method_id]["amount"] < amount:
            return f"Error: not enough balance in payment method {method_id}"
    paid = sum(payment["amount"] for payment in payment_methods)
    if paid != price:
        return (f"Error: payment amount does not add up, total price is {price}, but paid "
                f"{paid}")
    for payment in payment_methods:
        method_id = payment["payment_id"]
        if methods[method_id]["source"] == "gift_card":
            methods[method_id]["amount"] -= payment["amount"]
        elif methods[method_id]["source"] == "certificate":
            del methods[method_id]
    reservations[booking_id] = booking
    user["reservations"].append(booking_id)
    return json.dumps(booking)


@TOOLBOX.tool("CancelReservation", ToolSpec(
    "cancel_reservation", "Cancel a whole reservation; every payment is refunded. Needs the "
    "user's explicit confirmation.", {"reservation_id": _RESERVATION}, writes=True))
def cancel_reservation(data: dict[str, Any], reservation_id: str) -> str:
    reservations = data["reservations"]
    if reservation_id not in reservations:
        return "Error: reservation not found"
    booking = reservations[reservation_id]
    refunds = [{"payment_id": p["payment_id"], "amount": -p["amount"]}
               for p in booking["payment_history"]]
    booking["payment_history"].extend(refunds)
    booking["status"] = "cancelled"
    return json.dumps(booking)


@TOOLBOX.tool("GetReservationDetails", ToolSpec(
    "get_reservation_details", "The details of a reservation.",
    {"reservation_id": _RESERVATION}))
def get_reservation_details(data: dict[str, Any], reservation_id: str) -> str:
    reservations = data["reservations"]
    if reservation_id in reservations:
        return json.dumps(reservations[reservation_id])
    return "Error: user not found"  # sic: upstream's message for a missing reservation


@TOOLBOX.tool("GetUserDetails", ToolSpec(
    "get_user_details", "The details of a user, with their reservations and payment methods.",
    {"user_id": ("string", "the user id, e.g. 'sara_doe_496'")}))
def get_user_details(data: dict[str, Any], user_id: str) -> str:
    users = data["users"]
    return json.dumps(users[user_id]) if user_id in users else "Error: user not found"


@TOOLBOX.tool("ListAllAirports", ToolSpec(
    "list_all_airports", "Every airport the airline serves, with its city."))
def list_all_airports(data: dict[str, Any]) -> str:
    return json.dumps(dict(AIRPORTS))


def _leg_on(flight: dict[str, Any], date: str) -> dict[str, Any]:
    leg = {key: value for key, value in flight.items() if key != "dates"}
    leg.update(flight["dates"][date])
    return leg


@TOOLBOX.tool("SearchDirectFlight", ToolSpec(
    "search_direct_flight", "Direct flights between two cities on a date.",
    {"origin": ("string", "IATA code of the origin, e.g. 'JFK'"),
     "destination": ("string", "IATA code of the destination, e.g. 'LAX'"),
     "date": ("string", "the date, YYYY-MM-DD")}))
def search_direct_flight(data: dict[str, Any], origin: str, destination: str, date: str) -> str:
    found = [_leg_on(flight, date) for flight in data["flights"].values()
             if flight["origin"] == origin and flight["destination"] == destination
             and date in flight["dates"] and flight["dates"][date]["status"] == "available"]
    return json.dumps(found)


@TOOLBOX.tool("SearchOnestopFlight", ToolSpec(
    "search_onestop_flight", "One-stop connections between two cities starting on a date.",
    {"origin": ("string", "IATA code of the origin"),
     "destination": ("string", "IATA code of the destination"),
     "date": ("string", "the date of the first leg, YYYY-MM-DD")}))
def search_onestop_flight(data: dict[str, Any], origin: str, destination: str,
                          date: str) -> str:
    flights = data["flights"].values()
    found = []
    for first in flights:
        if first["origin"] != origin:
            continue
        for second in flights:
            if second["destination"] != destination or first["destination"] != second["origin"]:
                continue
            # a first leg arriving "+1" connects on the next day of May 2024
            next_day = (f"2024-05-{int(date[-2:]) + 1}"
                        if "+1" in first["scheduled_arrival_time_est"] else date)
            if first["scheduled_arrival_time_est"] > second["scheduled_departure_time_est"]:
                continue
            if date not in first["dates"] or next_day not in second["dates"]:
                continue
            if first["dates"][date]["status"] != "available" or \
                    second["dates"][next_day]["status"] != "available":
                continue
            leg1 = _leg_on(first, date)
            leg1["date"] = date
            # upstream merges the second flight's record of the *first* date (sic)
            leg2 = {key: value for key, value in second.items() if key != "dates"}
            leg2.update(second["dates"][date])
            leg2["date"] = next_day
            found.append([leg1, leg2])
    return json.dumps(found)


@TOOLBOX.tool("SendCertificate", ToolSpec(
    "send_certificate", "Send the user a travel certificate as a goodwill gesture; only when "
    "the policy allows it.", {"user_id": ("string", "the user id"),
                              "amount": ("number", "the certificate's amount")}, writes=True))
def send_certificate(data: dict[str, Any], user_id: str, amount: int) -> str | None:
    users = data["users"]
    if user_id not in users:
        return "Error: user not found"
    methods = users[user_id]["payment_methods"]
    for method_id in _CERTIFICATE_IDS:
        if method_id not in methods:
            methods[method_id] = {"source": "certificate", "amount": amount, "id": method_id}
            return f"Certificate {method_id} added to user {user_id} with amount {amount}."
    return None  # upstream answers nothing once three certificates were sent


def _payment_method(data: dict[str, Any], booking: dict[str, Any], payment_id: str,
                    price: float) -> tuple[dict[str, Any] | None, str | None]:
    methods = data["users"][booking["user_id"]]["payment_methods"]
    if payment_id not in methods:
        return None, "Error: payment method not found"
    method = methods[payment_id]
    if method["source"] == "certificate":
        return None, "Error: certificate cannot be used to update reservation"
    if method["source"] == "gift_card" and method["amount"] < price:
        return None, "Error: gift card balance is not enough"
    return method, None


@TOOLBOX.tool("UpdateReservationBaggages", ToolSpec(
    "update_reservation_baggages", "Change the number of checked bags of a reservation. "
    "Needs the user's explicit confirmation.",
    {"reservation_id": _RESERVATION,
     "total_baggages": ("integer", "the new total number of bags"),
     "nonfree_baggages": ("integer", "the new number of paid bags"),
     "payment_id": ("string", "a payment method id of the user (not a certificate)")},
    writes=True))
def update_reservation_baggages(data: dict[str, Any], reservation_id: str, total_baggages: int,
                                nonfree_baggages: int, payment_id: str) -> str:
    reservations = data["reservations"]
    if reservation_id not in reservations:
        return "Error: reservation not found"
    booking = reservations[reservation_id]
    price = 50 * max(0, nonfree_baggages - booking["nonfree_baggages"])
    method, error = _payment_method(data, booking, payment_id, price)
    if error:
        return error
    booking["total_baggages"], booking["nonfree_baggages"] = total_baggages, nonfree_baggages
    if method["source"] == "gift_card":
        method["amount"] -= price
    if price != 0:
        booking["payment_history"].append({"payment_id": payment_id, "amount": price})
    return json.dumps(booking)


@TOOLBOX.tool("UpdateReservationFlights", ToolSpec(
    "update_reservation_flights", "Change the flights (and cabin) of a reservation, listing "
    "every flight of the new itinerary; the fare difference is charged or refunded. Needs "
    "the user's explicit confirmation.",
    {"reservation_id": _RESERVATION,
     "cabin": ("string", "'basic_economy', 'economy' or 'business'"),
     "flights": _FLIGHTS,
     "payment_id": ("string", "a payment method id of the user (not a certificate)")},
    writes=True))
def update_reservation_flights(data: dict[str, Any], reservation_id: str, cabin: str,
                               flights: list[dict[str, Any]], payment_id: str) -> str:
    reservations = data["reservations"]
    if reservation_id not in reservations:
        return "Error: reservation not found"
    booking = reservations[reservation_id]
    travellers = len(booking["passengers"])
    legs = copy.deepcopy(flights)
    price = 0
    for leg in legs:
        kept = [old for old in booking["flights"]
                if old["flight_number"] == leg["flight_number"] and old["date"] == leg["date"]
                and cabin == booking["cabin"]]
        if kept:
            price += kept[0]["price"] * travellers
            leg["price"] = kept[0]["price"]
            leg["origin"], leg["destination"] = kept[0]["origin"], kept[0]["destination"]
            continue
        _, error = _check_leg(data, leg, cabin, travellers)
        if error:
            return error
        price += leg["price"] * travellers
    price -= sum(old["price"] for old in booking["flights"]) * travellers
    method, error = _payment_method(data, booking, payment_id, price)
    if error:
        return error
    if method["source"] == "gift_card":
        method["amount"] -= price
    booking["flights"] = legs
    if price != 0:
        booking["payment_history"].append({"payment_id": payment_id, "amount": price})
    return json.dumps(booking)


@TOOLBOX.tool("UpdateReservationPassengers", ToolSpec(
    "update_reservation_passengers", "Change the passengers' details of a reservation (same "
    "number of passengers). Needs the user's explicit confirmation.",
    {"reservation_id": _RESERVATION,
     "passengers": ("array", "each {'first_name', 'last_name', 'dob' (YYYY-MM-DD)}")},
    writes=True))
def update_reservation_passengers(data: dict[str, Any], reservation_id: str,
                                  passengers: list[dict[str, Any]]) -> str:
    reservations = data["reservations"]
    if reservation_id not in reservations:
        return "Error: reservation not found"
    booking = reservations[reservation_id]
    if len(passengers) != len(booking["passengers"]):
        return "Error: number of passengers does not match"
    booking["passengers"] = passengers
    return json.dumps(booking)


TOOLBOX.add("Calculate", CALCULATE, calculate)
TOOLBOX.add("Think", THINK, think)
TOOLBOX.add("TransferToHumanAgents", TRANSFER, transfer_to_human_agents)
