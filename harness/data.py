"""``harness data pull SUITE [--to PATH]``: fetch a suite's declared data set, checksummed.

Generic: the files, their sha256 and their official URLs come from the suite family's
`tasks.datasets.DataSet` (found through the registry); nothing here knows a suite. Each file
is downloaded from ``$HARNESS_DATA_BASE_URL/<data set>/<file>`` when a mirror base URL is
given (``--base-url`` or the variable), else from its official URL; it is written to a
temporary file, its sha256 checked against the declared one, then moved into place. Files
already present with the right hash are kept. The target is ``--to PATH`` or the cache folder
that `DataSet.locate` reads (``$HARNESS_DATA_DIR/<name>``).
"""

from __future__ import annotations

import argparse
import hashlib
import logging
import os
import shutil
import tempfile
import urllib.error
import urllib.request
from pathlib import Path
from typing import TYPE_CHECKING

from harness.core import HarnessError

if TYPE_CHECKING:
    from tasks.datasets import DataFile, DataSet

__all__ = ["DataPullError", "pull", "file_url", "add_commands"]

log = logging.getLogger(__name__)
TIMEOUT_S = 60.0


class DataPullError(HarnessError):
    """A download failed, a checksum did not match, or a file has no source."""


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def file_url(dataset: DataSet, data_file: DataFile, base_url: str | None) -> str:
    """Where `data_file` of `dataset` is downloaded from (module docstring)."""
    from tasks.datasets import BASE_URL_ENV

    base = base_url or os.environ.get(BASE_URL_ENV)
    if base:
        return f"{base.rstrip('/')}/{dataset.name}/{data_file.name}"
    if data_file.url is None:
        raise DataPullError(
            f"{dataset.name}/{data_file.name} has no official download (it is derived, see "
            f"{dataset.source}); set {BASE_URL_ENV} to a mirror of shared/data")
    return data_file.url


def _download(url: str, target: Path, sha256: str) -> None:
    with tempfile.NamedTemporaryFile(dir=target.parent, delete=False,
                                     prefix=f".{target.name}.") as handle:
        partial = Path(handle.name)
        try:
            with urllib.request.urlopen(url, timeout=TIMEOUT_S) as response:
                shutil.copyfileobj(response, handle)
        except (urllib.error.URLError, OSError) as exc:
            partial.unlink(missing_ok=True)
            raise DataPullError(f"download of {url} failed: {exc}") from None
    got = _sha256(partial)
    if got != sha256:
        partial.unlink(missing_ok=True)
        raise DataPullError(f"{url}: sha256 {got} does not match the declared {sha256}")
    partial.replace(target)


def pull(suite: str, to: str | os.PathLike | None = None, *,
         base_url: str | None = None) -> tuple[Path, list[str]]:
    """Fetch the data set of `suite` into `to` (default: its cache folder).

    Returns ``(folder, names of the files downloaded)``; files already there with the
    declared sha256 are not downloaded again.
    """
    import tasks  # noqa: F401 - the registry declares each suite's data set
    from tasks.datasets import get_dataset

    dataset = get_dataset(suite)
    folder = Path(to) if to is not None else dataset.cache_dir()
    folder.mkdir(parents=True, exist_ok=True)
    fetched = []
    for data_file in dataset.files:
        target = folder / data_file.name
        target.parent.mkdir(parents=True, exist_ok=True)  # data sets with subfolders
        if target.is_file() and _sha256(target) == data_file.sha256:
            continue
        url = file_url(dataset, data_file, base_url)
        log.info("downloading %s -> %s", url, target)
        _download(url, target, data_file.sha256)
        fetched.append(data_file.name)
    return folder, fetched


def cmd_data_pull(args: argparse.Namespace) -> int:
    import tasks  # noqa: F401 - the registry declares each suite's data set
    from tasks.datasets import get_dataset

    folder, fetched = pull(args.suite, args.to, base_url=args.base_url)
    dataset = get_dataset(args.suite)
    kept = len(dataset.files) - len(fetched)
    print(f"{dataset.name}: {len(fetched)} file(s) downloaded, {kept} already present, "
          f"sha256 checked -> {folder}")
    if args.to is not None:
        print(f"set {dataset.env}={folder} to use this copy")
    return 0


def add_commands(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("data", help="fetch the data sets suites read")
    actions = parser.add_subparsers(dest="data_command", required=True)
    p = actions.add_parser("pull", help="download a suite's data set (checksummed) into the "
                           "cache, or --to PATH")
    p.add_argument("suite", help="suite name (webshop, medagentbench-v1, ...)")
    p.add_argument("--to", help="write the files here instead of the cache folder")
    p.add_argument("--base-url", help="a mirror of shared/data to download from "
                   "(default: $HARNESS_DATA_BASE_URL, else each file's official URL)")
    p.set_defaults(func=cmd_data_pull)
