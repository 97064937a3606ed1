"""SWE-bench instance tables: the official rows, read through `datasets`.

Where the rows come from, first match wins: an explicit ``path`` (a ``.parquet``, ``.json`` or
``.jsonl`` file, or a folder), ``$SWEBENCH_DATA`` (a folder), ``<repo root>/../shared/data/
swebench`` (the maintainers' parquet files, see its README), and, only when online (no
``HF_HUB_OFFLINE``), the Hugging Face datasets ``SWE-bench/SWE-bench_Verified`` etc.

A folder holds one file per table, named as upstream published them
(``SWE-bench_Verified_test.parquet``, ``SWE-bench_Lite_test.parquet``,
``SWE-bench_Lite_dev.parquet``, ``SWE-bench_dev.parquet``).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.core import HarnessError, MissingDependencyError

__all__ = ["Instance", "SweDataError", "TABLES", "DATA_ENV", "data_dir", "load_table",
           "load_rows", "instance_from_row"]

DATA_ENV = "SWEBENCH_DATA"
REPO_ROOT = Path(__file__).resolve().parents[2]

TABLES: Mapping[str, tuple[str, str, str]] = {
    # table name -> (file stem, Hugging Face dataset, split)
    "verified-test": ("SWE-bench_Verified_test", "SWE-bench/SWE-bench_Verified", "test"),
    "lite-test": ("SWE-bench_Lite_test", "SWE-bench/SWE-bench_Lite", "test"),
    "lite-dev": ("SWE-bench_Lite_dev", "SWE-bench/SWE-bench_Lite", "dev"),
    "full-dev": ("SWE-bench_dev", "SWE-bench/SWE-bench", "dev"),
}


class SweDataError(HarnessError):
    """The SWE-bench tables are missing or malformed."""


@dataclass(frozen=True)
class Instance:
    """One SWE-bench task instance in the official schema.

    `fail_to_pass` / `pass_to_pass` are the decoded test-id lists; `eval_script` is the
    official per-instance test script (empty for rows that lack it, e.g. the bundled suite,
    whose script is built from the same steps); `log_parser` names the official parser.
    """

    instance_id: str
    repo: str
    version: str
    base_commit: str
    patch: str
    test_patch: str
    problem_statement: str
    fail_to_pass: tuple[str, ...]
    pass_to_pass: tuple[str, ...]
    environment_setup_commit: str = ""
    hints_text: str = ""
    created_at: str = ""
    eval_script: str = ""
    log_parser: str = ""
    difficulty: str = ""
    extra: Mapping[str, Any] = field(default_factory=dict)

    def row(self) -> dict[str, Any]:
        """The official row (lists JSON-encoded, as upstream stores them)."""
        return {"instance_id": self.instance_id, "repo": self.repo, "version": self.version,
                "base_commit": self.base_commit, "patch": self.patch,
                "test_patch": self.test_patch, "problem_statement": self.problem_statement,
                "hints_text": self.hints_text, "created_at": self.created_at,
                "FAIL_TO_PASS": json.dumps(list(self.fail_to_pass)),
                "PASS_TO_PASS": json.dumps(list(self.pass_to_pass)),
                "environment_setup_commit": self.environment_setup_commit}


def _tests(value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        value = json.loads(value) if value.strip() else []
    return tuple(str(v) for v in (value if value is not None else []))


def instance_from_row(row: Mapping[str, Any]) -> Instance:
    """An `Instance` from an official row (lists may be JSON strings or lists)."""
    known = {"instance_id", "repo", "version", "base_commit", "patch", "test_patch",
             "problem_statement", "FAIL_TO_PASS", "PASS_TO_PASS", "environment_setup_commit",
             "hints_text", "created_at", "eval_script", "log_parser", "difficulty"}
    missing = {"instance_id", "repo", "base_commit", "patch", "test_patch",
               "FAIL_TO_PASS", "PASS_TO_PASS"} - set(row)
    if missing:
        raise SweDataError(f"row {row.get('instance_id', '?')} lacks {sorted(missing)}")
    text = lambda key: "" if row.get(key) is None else str(row[key])  # noqa: E731
    return Instance(
        instance_id=text("instance_id"), repo=text("repo"), version=text("version"),
        base_commit=text("base_commit"), patch=text("patch"), test_patch=text("test_patch"),
        problem_statement=text("problem_statement"),
        fail_to_pass=_tests(row["FAIL_TO_PASS"]), pass_to_pass=_tests(row["PASS_TO_PASS"]),
        environment_setup_commit=text("environment_setup_commit"),
        hints_text=text("hints_text"), created_at=text("created_at"),
        eval_script=text("eval_script"), log_parser=text("log_parser"),
        difficulty=text("difficulty"),
        extra={k: v for k, v in row.items() if k not in known})


def data_dir(path: str | os.PathLike | None = None) -> Path | None:
    """The folder (or file) the tables are read from; None when none exists here."""
    for candidate in (path, os.environ.get(DATA_ENV), REPO_ROOT.parent / "shared/data/swebench"):
        if candidate and Path(candidate).exists():
            return Path(candidate)
    return None


def _read_file(path: Path) -> list[dict[str, Any]]:
    try:
        import datasets
    except ImportError as exc:  # pragma: no cover - datasets is a core dependency
        raise MissingDependencyError("datasets", "swebench", "reading SWE-bench tables") from exc
    kind = {".parquet": "parquet", ".json": "json", ".jsonl": "json"}.get(path.suffix)
    if kind is None:
        raise SweDataError(f"{path}: expected a .parquet, .json or .jsonl file")
    table = datasets.load_dataset(kind, data_files=str(path), split="train")
    return [dict(row) for row in table]


def load_rows(table: str, path: str | os.PathLike | None = None) -> list[dict[str, Any]]:
    """The rows of one table (`TABLES` key) as dicts, in upstream's order."""
    if table not in TABLES:
        from harness.core import UnknownNameError

        raise UnknownNameError("SWE-bench table", table, TABLES)
    stem, hub_name, split = TABLES[table]
    where = data_dir(path)
    if where is not None and where.is_file():
        return _read_file(where)
    if where is not None:
        for suffix in (".parquet", ".jsonl", ".json"):
            if (where / f"{stem}{suffix}").exists():
                return _read_file(where / f"{stem}{suffix}")
    if os.environ.get("HF_HUB_OFFLINE", "0") not in ("0", "", "false"):
        raise SweDataError(f"no {stem}.parquet under ${DATA_ENV} or ../shared/data/swebench, "
                           "and HF_HUB_OFFLINE is set; set SWEBENCH_DATA to the tables' folder")
    import datasets

    return [dict(row) for row in datasets.load_dataset(hub_name, split=split)]


def load_table(table: str, path: str | os.PathLike | None = None) -> list[Instance]:
    """The instances of one table, in upstream's order."""
    return [instance_from_row(row) for row in load_rows(table, path)]


def read_jsonl(path: Path) -> list[Instance]:
    """Instances stored one JSON row a line (the bundled suite's format)."""
    lines = Path(path).read_text().splitlines()
    return [instance_from_row(json.loads(line)) for line in lines if line.strip()]


def by_id(instances: Sequence[Instance]) -> dict[str, Instance]:
    return {i.instance_id: i for i in instances}
