"""Resources in SQLite: a shared read-only base record and one private overlay per episode.

The base database (every patient and their background history) is written once to a file
and attached read-only (``immutable``) by every episode. An episode's `ResourceStore` is an
in-memory database holding the task patient's own record and what the episode creates; the
base rows of that patient are hidden, so the episode sees an isolated copy of the whole
record in which the task patient's chart is the one its branch calls for. Nothing an episode
writes is visible to another. Tables: ``resources(seq, type, id, patient, date, json)`` and
``tokens(seq, param, value, exact)`` (search index; `search` builds the queries).
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tasks.medagentbench.clinical import NOW_ISO, parse_instant
from tasks.medagentbench.search import Query, compile_search, date_range, reference_id

Resource = dict[str, Any]

SCHEMA = """
CREATE TABLE IF NOT EXISTS resources (seq INTEGER PRIMARY KEY, type TEXT NOT NULL,
    id TEXT NOT NULL, patient TEXT, date REAL, json TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS tokens (seq INTEGER NOT NULL, param TEXT NOT NULL,
    value TEXT NOT NULL, exact TEXT NOT NULL);
"""
INDEXES = """
CREATE INDEX IF NOT EXISTS resources_type_patient ON resources(type, patient);
CREATE INDEX IF NOT EXISTS resources_type_id ON resources(type, id);
CREATE INDEX IF NOT EXISTS tokens_param_value ON tokens(param, value, seq);
CREATE INDEX IF NOT EXISTS tokens_param_exact ON tokens(param, exact, seq);
"""
CREATED_SEQ_START = 10**9
"""Sequence numbers of resources an episode creates (after its own record)."""
CREATED_ID_START = 900001


def _codings(concept: Any) -> Iterator[tuple[str, str]]:
    if isinstance(concept, list):
        for item in concept:
            yield from _codings(item)
        return
    if not isinstance(concept, dict):
        return
    for coding in concept.get("coding") or []:
        if isinstance(coding, dict) and coding.get("code"):
            yield str(coding.get("system", "")), str(coding["code"])


def _concept_tokens(param: str, concept: Any) -> list[tuple[str, str]]:
    tokens = []
    for system, code in _codings(concept):
        tokens += [(param, code), (param, f"{system}|{code}"), (param, f"|{code}")
                   if not system else (param, f"{system}|")]
    concepts = concept if isinstance(concept, list) else [concept]
    for item in concepts:
        if isinstance(item, dict):
            text = item.get("text")
            if text:
                tokens += [(param, str(text)), (f"{param}:text", str(text).lower())]
            for coding in item.get("coding") or []:
                if isinstance(coding, dict) and coding.get("display"):
                    tokens.append((f"{param}:text", str(coding["display"]).lower()))
    return tokens


def _patient_tokens(resource: Resource) -> list[tuple[str, str]]:
    tokens = []
    for identifier in resource.get("identifier") or []:
        if identifier.get("value"):
            tokens += [("identifier", identifier["value"]),
                       ("identifier", f"{identifier.get('system', '')}|{identifier['value']}")]
    tokens.append(("identifier", resource.get("id", "")))
    for name in resource.get("name") or []:
        family, given = name.get("family"), name.get("given") or []
        parts = ([family] if family else []) + list(given) + ([name["text"]] if name.get("text")
                                                              else [])
        tokens += [("name", p) for p in parts] + [("given", g) for g in given]
        tokens += [("family", family)] if family else []
    if resource.get("gender"):
        tokens.append(("gender", resource["gender"]))
    return tokens


def index_entries(resource: Resource) -> tuple[str | None, float | None, list[tuple[str, str]]]:
    """(patient id, date in epoch seconds, search tokens) of a resource."""
    kind = resource.get("resourceType")
    if kind == "Patient":
        birth = resource.get("birthDate")
        return resource.get("id"), (date_range(birth)[0] if birth else None), \
            _patient_tokens(resource)
    subject = (resource.get("subject") or {}).get("reference") if isinstance(
        resource.get("subject"), dict) else None
    patient = reference_id(subject) if isinstance(subject, str) and subject else None
    tokens = _concept_tokens("code", resource.get("code"))
    tokens += _concept_tokens("code", resource.get("medicationCodeableConcept"))
    tokens += _concept_tokens("category", resource.get("category"))
    tokens += _concept_tokens("clinical-status", resource.get("clinicalStatus"))
    for field in ("status", "intent"):
        if isinstance(resource.get(field), str):
            tokens.append((field, resource[field]))
    when = None
    for field in ("effectiveDateTime", "onsetDateTime", "recordedDate", "authoredOn",
                  "performedDateTime"):
        when = parse_instant(resource.get(field)) if resource.get(field) else None
        if when is not None:
            break
    if when is None and isinstance(resource.get("performedPeriod"), dict):
        when = parse_instant(resource["performedPeriod"].get("start"))
    return patient, (when.timestamp() if when else None), tokens


def _insert(db: sqlite3.Connection, seq: int, resource: Resource) -> None:
    patient, when, tokens = index_entries(resource)
    db.execute("INSERT INTO resources VALUES (?,?,?,?,?,?)",
               (seq, resource["resourceType"], resource["id"], patient, when,
                json.dumps(resource, separators=(",", ":"))))
    db.executemany("INSERT INTO tokens VALUES (?,?,?,?)",
                   [(seq, param, value.lower(), value) for param, value in tokens])


def build_database(path: str | Path, resources: Iterable[Resource]) -> Path:
    """Write `resources` (in order) into a new SQLite file at `path` and index it."""
    path = Path(path)
    path.unlink(missing_ok=True)
    db = sqlite3.connect(path)
    try:
        db.executescript(SCHEMA)
        with db:
            for seq, resource in enumerate(resources, start=1):
                _insert(db, seq, resource)
        db.executescript(INDEXES)
    finally:
        db.close()
    return path


@dataclass(frozen=True)
class SearchResult:
    """One page of a search: `total` matches, `resources` of this page as (id, JSON text)."""

    total: int
    resources: list[tuple[str, str]]
    count: int
    offset: int


class ResourceStore:
    """One episode's record: the base file (minus `hidden_patient`'s rows) plus an overlay
    holding `records` (that patient's own chart) and the resources the episode creates.

    Thread-safe: the server thread and the env's thread share it under one lock.
    """

    def __init__(self, base: str | Path, records: Iterable[Resource] = (),
                 hidden_patient: str | None = None):
        self.hidden_patient = hidden_patient
        self._lock = threading.Lock()
        self._db = sqlite3.connect("file::memory:", uri=True, check_same_thread=False)
        self._db.executescript(SCHEMA)
        self._db.execute("ATTACH DATABASE ? AS base",
                         (f"file:{Path(base).resolve()}?mode=ro&immutable=1",))
        with self._db:
            for seq, resource in enumerate(records, start=1):
                _insert(self._db, seq, resource)
        self._db.executescript(INDEXES.replace("IF NOT EXISTS ", "IF NOT EXISTS main."))
        self._created: list[Resource] = []

    def close(self) -> None:
        with self._lock:
            self._db.close()

    # -- reading ------------------------------------------------------------------------------
    def _union(self, resource_type: str, query: Query) -> tuple[str, list[Any]]:
        hide = "" if resource_type == "Patient" or self.hidden_patient is None else \
            " AND patient IS NOT ?"
        base_where = query.where.replace("{db}", "base.")
        main_where = query.where.replace("{db}", "main.")
        sql = (f"SELECT 0 AS src, seq, id, date, json FROM base.resources WHERE type = ?{hide} "
               f"AND ({base_where}) UNION ALL SELECT 1 AS src, seq, id, date, json FROM "
               f"main.resources WHERE type = ? AND ({main_where})")
        args = [resource_type] + ([self.hidden_patient] if hide else []) + list(query.args)
        return sql, args + [resource_type] + list(query.args)

    def search(self, resource_type: str, params: list[tuple[str, str]]) -> SearchResult:
        """Run a FHIR search (raises `search.SearchError` for a bad one)."""
        query = compile_search(resource_type, params)
        sql, args = self._union(resource_type, query)
        with self._lock:
            total = self._db.execute(f"SELECT COUNT(*) FROM ({sql})", args).fetchone()[0]
            rows = self._db.execute(f"SELECT id, json FROM ({sql}) ORDER BY {query.order} "
                                    "LIMIT ? OFFSET ?", args + [query.count, query.offset]
                                    ).fetchall()
        return SearchResult(total, [(row[0], row[1]) for row in rows], query.count, query.offset)

    def read(self, resource_type: str, resource_id: str) -> Resource | None:
        """The resource with this id, or None."""
        result = self.search(resource_type, [("_id", resource_id), ("_count", "1")])
        return json.loads(result.resources[0][1]) if result.resources else None

    # -- writing ------------------------------------------------------------------------------
    def create(self, resource: Resource) -> Resource:
        """Store a new resource under the next id (``meta.lastUpdated`` is the clock)."""
        with self._lock:
            stored = {"resourceType": resource.get("resourceType"),
                      "id": str(CREATED_ID_START + len(self._created)),
                      "meta": {"versionId": "1", "lastUpdated": NOW_ISO},
                      **{k: v for k, v in resource.items() if k not in ("id", "meta")}}
            with self._db:
                _insert(self._db, CREATED_SEQ_START + len(self._created), stored)
            self._created.append(stored)
            return dict(stored)

    def created(self) -> list[Resource]:
        """Resources this episode created, in order (copies)."""
        with self._lock:
            return [json.loads(json.dumps(r)) for r in self._created]

    def snapshot(self) -> tuple[str, ...]:
        """The created resources (the only mutable part of an episode's record)."""
        with self._lock:
            return tuple(json.dumps(r, separators=(",", ":")) for r in self._created)

    def restore(self, snapshot: tuple[str, ...]) -> None:
        with self._lock, self._db:
            self._db.execute("DELETE FROM tokens WHERE seq >= ?", (CREATED_SEQ_START,))
            self._db.execute("DELETE FROM resources WHERE seq >= ?", (CREATED_SEQ_START,))
            self._created = [json.loads(text) for text in snapshot]
            for k, resource in enumerate(self._created):
                _insert(self._db, CREATED_SEQ_START + k, resource)
