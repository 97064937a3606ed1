"""FHIR search: parameters per resource type, date prefixes, and their SQL.

`compile_search(resource_type, params)` turns the query string pairs into a `Query` (a WHERE
clause over the ``resources``/``tokens`` tables of `fhirstore`, its arguments, the ORDER BY
and the page window) or raises `SearchError` (answered as 400 with an OperationOutcome).

Semantics (FHIR R4 search, the subset the benchmark uses): repeated parameters are ANDed,
comma-separated values ORed; token values match ``code`` or ``system|code``
(case-insensitively; a concept's text counts as a code); string values
match case-insensitively from the start of any name part (``:exact``, ``:contains``); date
values have the precision they are written with and take the prefixes ``eq ne lt le gt ge sa
eb`` (``ap`` is not supported); references match ``ID``, ``Patient/ID`` or a full URL.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any

DEFAULT_COUNT = 50
MAX_COUNT = 1000
MAX_VALUES = 100
"""Most comma-separated (ORed) values one search parameter may carry."""
MAX_PARAMETERS = 50
"""Most search parameters one request may carry."""

TOKEN, STRING, DATE, REFERENCE, ID = "token", "string", "date", "reference", "id"
_COMMON = {"_id": ID}
_PATIENT_REF = {"patient": REFERENCE, "subject": REFERENCE}
PARAMETERS: dict[str, dict[str, str]] = {
    "Patient": {**_COMMON, "identifier": TOKEN, "name": STRING, "family": STRING,
                "given": STRING, "birthdate": DATE, "gender": TOKEN},
    "Observation": {**_COMMON, **_PATIENT_REF, "code": TOKEN, "category": TOKEN, "date": DATE,
                    "status": TOKEN},
    "Condition": {**_COMMON, **_PATIENT_REF, "code": TOKEN, "category": TOKEN,
                  "clinical-status": TOKEN, "onset-date": DATE},
    "MedicationRequest": {**_COMMON, **_PATIENT_REF, "code": TOKEN, "category": TOKEN,
                          "status": TOKEN, "intent": TOKEN, "authoredon": DATE, "date": DATE},
    "Procedure": {**_COMMON, **_PATIENT_REF, "code": TOKEN, "date": DATE, "status": TOKEN},
    "ServiceRequest": {**_COMMON, **_PATIENT_REF, "code": TOKEN, "status": TOKEN,
                       "authored": DATE},
}
"""Search parameters per resource type (the date parameter of each maps to the resource's
`date` column: effectiveDateTime, onsetDateTime, authoredOn, performedDateTime, birthDate)."""
SORT_KEYS = {"date": "date", "birthdate": "date", "authoredon": "date", "onset-date": "date",
             "authored": "date", "_id": "id"}
IGNORED = {"_format", "_pretty", "_summary", "_elements", "_total"}
"""Result-format parameters accepted and ignored (the official harness appends _format)."""
PREFIXES = ("eq", "ne", "lt", "le", "gt", "ge", "sa", "eb")
_DATE = re.compile(r"^(\d{4})(?:-(\d{2})(?:-(\d{2})(?:T(\d{2}):(\d{2})(?::(\d{2})(\.\d+)?)?"
                   r"(Z|[+-]\d{2}:\d{2})?)?)?)?$")


class SearchError(ValueError):
    """A search the server cannot run; the message goes into the OperationOutcome."""


@dataclass(frozen=True)
class Query:
    """A compiled search: `where` uses ``{db}`` for the schema prefix (``base.``/``main.``)."""

    where: str
    args: tuple[Any, ...]
    order: str
    count: int
    offset: int


def date_range(text: str) -> tuple[float, float]:
    """[low, high) in epoch seconds covered by a FHIR date/dateTime at its precision.

    A space before the UTC offset is read as ``+`` (an unencoded ``+`` in a query string
    arrives as a space)."""
    text = re.sub(r" (\d{2}:\d{2})$", r"+\1", text)
    match = _DATE.match(text)
    if not match:
        raise SearchError(f"invalid date {text!r}: expected YYYY, YYYY-MM, YYYY-MM-DD or an "
                          "ISO dateTime such as 2023-11-13T10:15:00+00:00")
    try:  # out-of-range fields, offsets beyond +-24h, years past 9999 are invalid dates
        return _range(*match.groups())
    except (ValueError, OverflowError) as exc:
        raise SearchError(f"invalid date {text!r}: {exc}") from None


def _range(year: str, month: str | None, day: str | None, hour: str | None,
           minute: str | None, second: str | None, fraction: str | None,
           zone: str | None) -> tuple[float, float]:
    tz = timezone.utc
    if zone and zone != "Z":
        sign = 1 if zone[0] == "+" else -1
        tz = timezone(sign * timedelta(hours=int(zone[1:3]), minutes=int(zone[4:6])))
    start = datetime(int(year), int(month or 1), int(day or 1), int(hour or 0),
                     int(minute or 0), int(second or 0), tzinfo=tz)
    if fraction:
        start = start.replace(microsecond=int(float(fraction) * 1e6))
        end = start + timedelta(milliseconds=1)
    elif second:
        end = start + timedelta(seconds=1)
    elif minute:
        end = start + timedelta(minutes=1)
    elif day:
        end = start + timedelta(days=1)
    elif month:
        end = (start.replace(year=start.year + 1, month=1) if start.month == 12
               else start.replace(month=start.month + 1))
    else:
        end = start.replace(year=start.year + 1)
    return start.timestamp(), end.timestamp()


def _date_clause(value: str) -> tuple[str, tuple[float, ...]]:
    prefix, text = ("eq", value)
    if value[:2] in PREFIXES or value[:2] == "ap":
        prefix, text = value[:2], value[2:]
    if prefix == "ap":
        raise SearchError("the date prefix 'ap' is not supported; use ge/le ranges")
    low, high = date_range(text)
    clauses = {"eq": ("(date >= ? AND date < ?)", (low, high)),
               "ne": ("(date < ? OR date >= ?)", (low, high)),
               "lt": ("date < ?", (low,)), "eb": ("date < ?", (low,)),
               "le": ("date < ?", (high,)), "gt": ("date >= ?", (high,)),
               "sa": ("date >= ?", (high,)), "ge": ("date >= ?", (low,))}
    sql, args = clauses[prefix]
    return f"(date IS NOT NULL AND {sql})", args


def reference_id(value: str) -> str:
    """``S123``, ``Patient/S123`` and ``http://host/fhir/Patient/S123`` -> ``S123``."""
    return value.rstrip("/").rsplit("/", 1)[-1]


def _escape_like(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def _clause(kind: str, name: str, modifier: str, values: list[str]) -> tuple[str, tuple]:
    tokens = "seq IN (SELECT seq FROM {db}tokens WHERE param = ? AND "
    if kind == ID:
        return f"id IN ({','.join('?' * len(values))})", tuple(values)
    if kind == REFERENCE:
        ids = [reference_id(v) for v in values]
        return f"patient IN ({','.join('?' * len(ids))})", tuple(ids)
    if kind == DATE:
        parts = [_date_clause(v) for v in values]
        return "(" + " OR ".join(p for p, _ in parts) + ")", tuple(a for _, args in parts
                                                                     for a in args)
    if kind == TOKEN:
        if modifier == "text":
            return (tokens + "value LIKE ? ESCAPE '\\')",
                    (f"{name}:text", f"{_escape_like(values[0].lower())}%"))
        lowered = [v.lower() for v in values]
        return (tokens + f"value IN ({','.join('?' * len(values))}))", (name, *lowered))
    lowered = [v.lower() for v in values]
    if modifier == "exact":
        return tokens + f"exact IN ({','.join('?' * len(values))}))", (name, *values)
    pattern = "%{}%" if modifier == "contains" else "{}%"
    likes = " OR ".join("value LIKE ? ESCAPE '\\'" for _ in lowered)
    return (tokens + f"({likes}))",
            (name, *(pattern.format(_escape_like(v)) for v in lowered)))


def _page_number(name: str, value: str, low: int, high: int) -> int:
    if not (value.isascii() and value.isdigit()):  # '²'.isdigit() is True
        raise SearchError(f"{name} must be a non-negative integer, got {value[:40]!r}")
    if len(value) > len(str(high)):  # int() refuses thousands of digits
        return high
    return max(low, min(int(value), high))


def _order(value: str) -> str:
    keys = []
    for key in value.split(","):
        descending = key.startswith("-")
        column = SORT_KEYS.get(key.lstrip("-"))
        if column is None:
            raise SearchError(f"cannot sort by {key!r}; sortable: {', '.join(SORT_KEYS)}")
        keys.append(f"{column} IS NULL, {column} {'DESC' if descending else 'ASC'}")
    return ", ".join(keys) + ", src, seq"


def compile_search(resource_type: str, params: list[tuple[str, str]]) -> Query:
    """Compile the query-string pairs of a search on `resource_type`."""
    known = PARAMETERS[resource_type]
    clauses, args = [], []
    count, offset, order = DEFAULT_COUNT, 0, "src, seq"
    if len(params) > MAX_PARAMETERS:
        raise SearchError(f"{len(params)} search parameters; at most {MAX_PARAMETERS}")
    for raw_name, value in params:
        name, _, modifier = raw_name.partition(":")
        if name == "_count":
            count = _page_number(name, value, 0, MAX_COUNT)
        elif name == "_offset":
            offset = _page_number(name, value, 0, 10**9)
        elif name == "_sort":
            order = _order(value)
        elif name in IGNORED:
            continue
        elif name not in known:
            raise SearchError(f"unknown search parameter {name!r} for {resource_type}; "
                              f"supported: {', '.join(sorted(known))}")
        else:
            kind = known[name]
            allowed = {STRING: {"", "exact", "contains"}, TOKEN: {"", "text"}}.get(kind, {""})
            if modifier not in allowed:
                raise SearchError(f"unsupported modifier {raw_name!r}")
            values = [v for v in value.split(",") if v != ""]
            if not values:
                raise SearchError(f"search parameter {name!r} has no value")
            if len(values) > MAX_VALUES:
                raise SearchError(f"search parameter {name!r} has {len(values)} values; at "
                                  f"most {MAX_VALUES}")
            sql, clause_args = _clause(kind, name, modifier, values)
            clauses.append(sql)
            args.extend(clause_args)
    return Query(" AND ".join(clauses) or "1", tuple(args), order, count, offset)
