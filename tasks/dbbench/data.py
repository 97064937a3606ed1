"""Reading the DB-Bench task files (``standard.jsonl``: the 300 test tasks, ``dev.jsonl``: 60).

The folder is the `folder` argument, ``DBBENCH_DATA``, ``../shared/data/dbbench`` or the cache
``harness data pull dbbench`` fills (`sources.DATASET`).
"""

from __future__ import annotations

import functools
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.core import HarnessError

__all__ = ["DBBenchDataError", "DBTask", "load_tasks", "data_dir", "SPLIT_FILES"]

SPLIT_FILES = {"test": "standard.jsonl", "dev": "dev.jsonl"}


class DBBenchDataError(HarnessError):
    """The DB-Bench data folder or one of its files is missing or malformed."""


@dataclass(frozen=True)
class DBTask:
    """One task: its question and tables, and the gold answer as the file states it."""

    id: str
    split: str
    task_type: str
    description: str
    add_description: str
    evidence: str
    tables_json: str
    label_json: str
    answer_md5: str
    gold_query: str

    @property
    def tables(self) -> list[dict[str, Any]]:
        return json.loads(self.tables_json)

    @property
    def label(self) -> Any:
        return json.loads(self.label_json)

    @property
    def modifying(self) -> bool:
        return self.task_type in ("INSERT", "DELETE", "UPDATE")

    @property
    def gold_sql(self) -> str:
        """The gold query (SELECT tasks) or statement (INSERT/UPDATE: the label)."""
        return self.label[0] if self.modifying else self.gold_query


def data_dir(folder: str | os.PathLike | None = None) -> Path:
    from tasks.dbbench.sources import DATASET

    chosen = Path(folder) if folder else DATASET.locate()
    if not (chosen / "standard.jsonl").is_file():
        raise DBBenchDataError(f"no DB-Bench data in {chosen} (standard.jsonl missing); set "
                               f"{DATASET.env} to the folder holding standard.jsonl")
    return chosen.resolve()


def _task(split: str, index: int, entry: dict[str, Any]) -> DBTask:
    tables = entry["table"] if isinstance(entry["table"], list) else [entry["table"]]
    return DBTask(
        id=f"{split}-{index}", split=split, task_type=str(entry["type"][0]),
        description=str(entry["description"]), add_description=str(
            entry.get("add_description") or ""), evidence=str(entry.get("evidence") or ""),
        tables_json=json.dumps(tables), label_json=json.dumps(entry.get("label")),
        answer_md5=str(entry.get("answer_md5") or ""),
        gold_query=str((entry.get("sql") or {}).get("query") or ""))


@functools.lru_cache(maxsize=4)
def load_tasks(folder: str) -> tuple[DBTask, ...]:
    """Every task of the files in `folder`, test first."""
    tasks: list[DBTask] = []
    for split, name in SPLIT_FILES.items():
        path = Path(folder) / name
        if not path.is_file():
            continue
        for number, line in enumerate(path.read_text().splitlines()):
            if not line.strip():
                continue
            try:
                tasks.append(_task(split, len([t for t in tasks if t.split == split]),
                                   json.loads(line)))
            except (ValueError, KeyError, TypeError, IndexError) as exc:
                raise DBBenchDataError(f"{path}:{number + 1}: not a DB-Bench task "
                                       f"({type(exc).__name__}: {exc})") from None
    return tuple(tasks)
