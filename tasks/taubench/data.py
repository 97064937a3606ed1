"""Reading the τ-bench data: each domain's database, policy (``wiki.md``) and task lists.

The folder is, in order: the `folder` argument, ``TAUBENCH_DATA``, ``../shared/data/taubench``
beside the checkout, the cache ``harness data pull taubench`` fills (`sources.DATASET`). It
holds ``retail/`` and ``airline/``; the project ships none of these files. A fresh database per
episode is parsed from the file bytes read once (orjson), so episodes never share state.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from harness.core import HarnessError, UnknownNameError

__all__ = ["DOMAINS", "TauDataError", "Domain", "GoldAction", "TaskRecord", "data_dir",
           "load_domain", "database_hash", "database_digest"]

DOMAINS = {"retail": ("orders", "products", "users"),
           "airline": ("flights", "reservations", "users")}
"""Each domain's tables, in the order upstream's loader builds the database dict."""
TASK_FILES = {"test": "tasks_test.json", "train": "tasks_train.json", "dev": "tasks_dev.json"}


class TauDataError(HarnessError):
    """The τ-bench data folder or one of its files is missing or malformed."""


@dataclass(frozen=True)
class GoldAction:
    """One gold tool call of a task: the tool's name and its keyword arguments (JSON text,
    so the value stays immutable)."""

    name: str
    arguments_json: str

    @property
    def arguments(self) -> dict[str, Any]:
        return json.loads(self.arguments_json)


@dataclass(frozen=True)
class TaskRecord:
    """One τ-bench task as the data states it."""

    domain: str
    split: str
    index: int
    user_id: str
    instruction: str
    actions: tuple[GoldAction, ...]
    outputs: tuple[str, ...]
    annotator: str

    @property
    def id(self) -> str:
        return f"{self.domain}-{self.split}-{self.index}"


@dataclass(frozen=True)
class Domain:
    """One domain's files: the raw database bytes, the policy, rules and tasks."""

    name: str
    folder: Path
    tables: tuple[tuple[str, bytes], ...]
    wiki: str
    rules: tuple[str, ...]
    tasks: tuple[TaskRecord, ...]

    def fresh_database(self) -> dict[str, Any]:
        """A new, private copy of the database (``{table: {key: record}}``)."""
        return {name: orjson.loads(raw) for name, raw in self.tables}


def data_dir(folder: str | os.PathLike | None = None) -> Path:
    """The τ-bench data folder (see the module docstring); checked to hold both domains."""
    from tasks.taubench.sources import DATASET

    chosen = Path(folder) if folder else DATASET.locate()
    if not (chosen / "retail").is_dir():
        raise TauDataError(f"no τ-bench data in {chosen} (retail/ missing); set "
                           f"{DATASET.env} to the folder holding retail/ and airline/")
    return chosen.resolve()


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        raise TauDataError(f"missing τ-bench file {path}") from None


def _parse(path: Path, raw: bytes) -> Any:
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise TauDataError(f"malformed JSON in {path}: {exc}") from None


def _task(domain: str, split: str, index: int, record: Any, path: Path) -> TaskRecord:
    try:
        return TaskRecord(
            domain=domain, split=split, index=index, user_id=str(record["user_id"]),
            instruction=str(record["instruction"]),
            actions=tuple(GoldAction(str(a["name"]), json.dumps(a["kwargs"]))
                          for a in record["actions"]),
            outputs=tuple(str(o) for o in record.get("outputs", [])),
            annotator=str(record.get("annotator", "")))
    except (KeyError, TypeError) as exc:
        raise TauDataError(f"{path}: task {index} lacks a field or has a wrong type "
                           f"({exc!r})") from None


@functools.lru_cache(maxsize=8)
def load_domain(name: str, folder: str | None = None) -> Domain:
    """The files of domain `name` (``retail`` or ``airline``), checked and cached."""
    if name not in DOMAINS:
        raise UnknownNameError("τ-bench domain", name, DOMAINS)
    root = data_dir(folder) / name
    tables = []
    for table in DOMAINS[name]:
        path = root / f"{table}.json"
        raw = _read(path)
        if not isinstance(_parse(path, raw), dict):
            raise TauDataError(f"{path}: expected a JSON object of records")
        tables.append((table, raw))
    wiki = _read(root / "wiki.md").decode("utf-8")
    rules_path = root / "rules.json"
    rules = tuple(_parse(rules_path, _read(rules_path))) if rules_path.is_file() else ()
    tasks: list[TaskRecord] = []
    for split, file_name in TASK_FILES.items():
        path = root / file_name
        if not path.is_file():
            continue
        records = _parse(path, _read(path))
        if not isinstance(records, list):
            raise TauDataError(f"{path}: expected a JSON list of tasks")
        tasks.extend(_task(name, split, i, r, path) for i, r in enumerate(records))
    return Domain(name, root, tuple(tables), wiki, rules, tuple(tasks))


def _hashable(value: Any) -> Any:
    """Nested dicts -> tuples of (key, value) sorted by key; lists -> tuples (as upstream)."""
    if isinstance(value, dict):
        return tuple((key, _hashable(item)) for key, item in sorted(value.items()))
    if isinstance(value, list):
        return tuple(_hashable(item) for item in value)
    if isinstance(value, set):
        return tuple(sorted(_hashable(item) for item in value))
    return value


def database_hash(database: dict[str, Any]) -> str:
    """sha256 of the canonical form of `database`: equal exactly when upstream's
    ``get_data_hash`` is equal (same canonical form, same digest)."""
    return hashlib.sha256(str(_hashable(database)).encode("utf-8")).hexdigest()


def database_digest(database: dict[str, Any]) -> str:
    """A fast digest with the same equality as `database_hash` on JSON data (keys sorted,
    ``1`` and ``1.0`` and ``true`` kept apart, lists in order); the grader compares these."""
    return hashlib.sha256(orjson.dumps(database, option=orjson.OPT_SORT_KEYS)).hexdigest()
