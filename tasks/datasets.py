"""Where a suite's data comes from: declared data sets, their lookup, and the missing-data error.

A suite family that needs files it does not ship declares a `DataSet` (next to its loader,
under ``tasks/<family>/``) and registers it with `register_dataset` for its suite names. The
generic puller (`harness.data`, ``harness data pull SUITE``) downloads the declared files,
checks each against its committed sha256 and writes them into the cache; it knows nothing
about any suite.

Lookup (`DataSet.locate`), first hit wins: the data set's environment variable (e.g.
``WEBSHOP_DATA``); a local folder ``<checkout>/../shared/data/<name>``; the cache folder
``$HARNESS_DATA_DIR/<name>`` (default ``$XDG_CACHE_HOME/agent-rl-harness/data/<name>``,
``~/.cache/...``) holding every declared file. Nothing found raises `DataMissingError`, one
line naming ``harness data pull <name>``.

Download location of a file: ``$HARNESS_DATA_BASE_URL/<name>/<file>`` when that variable (or
the puller's ``base_url``) is set, for a mirror of ``shared/data`` (the tests serve one on
127.0.0.1); else the file's official `DataFile.url`. A file with no official URL (a derived
file the upstream project does not publish as such) can only come from a mirror.
"""

from __future__ import annotations

import importlib
import os
from dataclasses import dataclass
from pathlib import Path

from harness.core import HarnessError, UnknownNameError

__all__ = ["DataFile", "DataSet", "DataMissingError", "register_dataset", "get_dataset",
           "dataset_names", "cache_root", "shared_root", "CACHE_ENV", "BASE_URL_ENV",
           "SHARED_ENV"]

CACHE_ENV = "HARNESS_DATA_DIR"
"""Overrides the cache root that ``harness data pull`` fills."""
BASE_URL_ENV = "HARNESS_DATA_BASE_URL"
"""A mirror of ``shared/data`` to download from instead of the official sources."""
SHARED_ENV = "HARNESS_SHARED_DATA"
"""Overrides the local ``../shared/data`` folder (tests point it at an empty folder)."""
REPO_ROOT = Path(__file__).resolve().parents[1]


class DataMissingError(HarnessError):
    """A suite's data set is in none of the places `DataSet.locate` looks."""


@dataclass(frozen=True)
class DataFile:
    """One file of a data set: its name in the folder, its sha256 and size (computed from the
    copy in ``shared/data``) and its official download URL (None: mirror only)."""

    name: str
    sha256: str
    size: int
    url: str | None = None


@dataclass(frozen=True)
class DataSet:
    """A folder of files a suite family reads (see the module docstring)."""

    name: str
    env: str
    files: tuple[DataFile, ...]
    source: str
    """One line: where the files come from upstream (shown by ``harness data pull``)."""

    def cache_dir(self) -> Path:
        return cache_root() / self.name

    def complete(self, folder: Path) -> bool:
        """Whether `folder` holds every declared file (sizes checked, not hashes)."""
        return all((folder / f.name).is_file() and (folder / f.name).stat().st_size == f.size
                   for f in self.files)

    def locate(self) -> Path:
        """The folder to read (module docstring for the order); `DataMissingError` if none."""
        value = os.environ.get(self.env)
        if value:
            return Path(value)
        for folder in (shared_root() / self.name, self.cache_dir()):
            if folder.is_dir() and self.complete(folder):
                return folder
        raise DataMissingError(
            f"{self.name} data not found: run `harness data pull {self.name}` (or set "
            f"{self.env} to a folder with {', '.join(f.name for f in self.files)})")


def cache_root() -> Path:
    """``$HARNESS_DATA_DIR``, else ``$XDG_CACHE_HOME/agent-rl-harness/data`` (``~/.cache``)."""
    value = os.environ.get(CACHE_ENV)
    if value:
        return Path(value)
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "agent-rl-harness" / "data"


def shared_root() -> Path:
    """``$HARNESS_SHARED_DATA``, else ``<checkout>/../shared/data``."""
    value = os.environ.get(SHARED_ENV)
    return Path(value) if value else REPO_ROOT.parent / "shared" / "data"


_DATASETS: dict[str, DataSet | str] = {}


def register_dataset(suite_name: str, dataset: DataSet | str) -> None:
    """Declare the data set of suite `suite_name` (a `DataSet` or a lazy
    ``"module:attribute"`` path). A data set's own name resolves to it too."""
    _DATASETS[suite_name] = dataset


def dataset_names() -> list[str]:
    """Every suite name that declares a data set, sorted."""
    return sorted(_DATASETS)


def get_dataset(name: str) -> DataSet:
    """The data set of suite `name` (``webshop``, ``webshop@2``, ``medagentbench-v1``)."""
    key = name.partition("@")[0]
    if key not in _DATASETS:
        by_own_name = {_resolve(v).name: k for k, v in _DATASETS.items()}
        if key not in by_own_name:
            raise UnknownNameError("suite with a data set", name, dataset_names())
        key = by_own_name[key]
    return _resolve(_DATASETS[key])


def _resolve(entry: DataSet | str) -> DataSet:
    if isinstance(entry, DataSet):
        return entry
    module, _, attribute = entry.partition(":")
    return getattr(importlib.import_module(module), attribute)
