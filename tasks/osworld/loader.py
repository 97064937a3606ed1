"""OSWorld's official task JSON: one `OSWorldTask` per file listed in ``test_all.json``.

Layout (upstream ``evaluation_examples/``): ``test_all.json`` maps each application domain to
its task ids; ``examples/<domain>/<id>.json`` holds ``id, snapshot, instruction, config``
(setup steps), ``related_apps`` and ``evaluator`` (``func, result, expected, options``, and
optionally ``postconfig`` and ``conj``). The directory comes from the ``path`` argument, else
``$OSWORLD_TASKS``, else ``../shared/data/osworld`` next to the checkout.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.core import HarnessError

ENV_VAR = "OSWORLD_TASKS"
INDEX_FILE = "test_all.json"


class OSWorldDataError(HarnessError):
    """The OSWorld task directory is missing or malformed."""


@dataclass(frozen=True)
class OSWorldTask:
    """One official task. `config` and `evaluator` are upstream's JSON, unchanged."""

    id: str
    domain: str
    instruction: str
    snapshot: str
    config: tuple[Mapping[str, Any], ...]
    related_apps: tuple[str, ...]
    evaluator: Mapping[str, Any] = field(repr=False)
    source: str = ""

    @property
    def funcs(self) -> list[str]:
        """The metric function names (one per result getter)."""
        func = self.evaluator.get("func", "")
        return list(func) if isinstance(func, list) else [func]

    @property
    def infeasible(self) -> bool:
        """Upstream's infeasible tasks: the agent must declare the task infeasible (``FAIL``)."""
        return self.funcs == ["infeasible"]

    def getter_configs(self, key: str) -> list[Mapping[str, Any]]:
        """The ``result`` or ``expected`` getter configs as a list (``[]`` when absent)."""
        value = self.evaluator.get(key) or []
        return [v for v in (value if isinstance(value, list) else [value]) if v]

    @property
    def postconfig(self) -> tuple[Mapping[str, Any], ...]:
        return tuple(self.evaluator.get("postconfig") or ())


def default_tasks_dir() -> Path:
    """``$OSWORLD_TASKS``, else ``../shared/data/osworld`` beside the repository."""
    if os.environ.get(ENV_VAR):
        return Path(os.environ[ENV_VAR])
    return Path(__file__).resolve().parents[3] / "shared" / "data" / "osworld"


def parse_task(raw: Mapping[str, Any], domain: str) -> OSWorldTask:
    """One task file's JSON -> `OSWorldTask` (a missing ``config`` means no setup steps)."""
    try:
        return OSWorldTask(
            id=str(raw["id"]), domain=domain, instruction=str(raw["instruction"]),
            snapshot=str(raw.get("snapshot", "")), config=tuple(raw.get("config") or ()),
            related_apps=tuple(raw.get("related_apps") or ()), evaluator=raw["evaluator"],
            source=str(raw.get("source", "")))
    except KeyError as exc:
        raise OSWorldDataError(f"OSWorld task {raw.get('id', '?')} lacks {exc}") from None


def load_tasks(path: Path | str | None = None,
               domains: Sequence[str] | None = None) -> list[OSWorldTask]:
    """Every task listed in ``test_all.json`` (369 upstream), in the index's order."""
    root = Path(path) if path is not None else default_tasks_dir()
    index_path = root / INDEX_FILE
    if not index_path.is_file():
        raise OSWorldDataError(f"no OSWorld tasks at {root} ({INDEX_FILE} missing); set "
                               f"{ENV_VAR} to upstream's evaluation_examples/ directory")
    index: dict[str, list[str]] = json.loads(index_path.read_text())
    tasks = []
    for domain, ids in index.items():
        if domains is not None and domain not in domains:
            continue
        for task_id in ids:
            task_path = root / "examples" / domain / f"{task_id}.json"
            if not task_path.is_file():
                raise OSWorldDataError(f"OSWorld task file missing: {task_path}")
            tasks.append(parse_task(json.loads(task_path.read_text()), domain))
    return tasks
