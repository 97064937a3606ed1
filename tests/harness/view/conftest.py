"""A results store for the viewer tests, built through the real runner (scripted policies on
frozenlake and sokoban, one of them failing on half the tasks with a traceback) plus one
hand-written episode whose text is hostile (HTML, a script, terminal escapes)."""

from __future__ import annotations

from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path

import pytest

from harness.config import RunConfig
from harness.policies import make_policy
from harness.records import EpisodeKey, EpisodeRecord, StepRecord
from harness.runner import run
from harness.store import Store

HOSTILE = "before <script>alert(1)</script> \x1b[31mred\x1b[0m after"
"""An observation that would run a script and colour a terminal if written unescaped."""
HOSTILE_RUN = "hostile-run"


class Flaky:
    """The random policy, except that it raises on tasks whose id ends in an odd digit."""

    id, train_seed, provenance = "flaky", None, {"kind": "test"}

    def __init__(self) -> None:
        self.random = make_policy("random")

    async def act(self, context):
        if context.task.id[-1] in "13579":
            raise ValueError(f"model output could not be decoded for {context.task.id}")
        return await self.random.act(context)


@dataclass(frozen=True)
class ViewDb:
    path: Path
    run_id: str
    """The runner's run (random, oracle, flaky on frozenlake@1 and sokoban@1)."""


def _write_hostile(path: Path) -> None:
    steps = [StepRecord(0, HOSTILE, "<img src=x onerror=alert(2)>", "<img src=x "
                        "onerror=alert(2)>", 0.0, False, False,
                        {"won": False, "note": "<b>bold</b>"}),
             StepRecord(1, "line\n" * 40, "wait", "wait", 1.0, True, False,
                        {"won": True, "score": 1.0})]
    record = EpisodeRecord(key=EpisodeKey("<svg onload=alert(3)>", "frozenlake@1", "4x4-0250",
                                          0, 0), task_type="4x4", split="test", status="ok",
                           success=True, score=1.0, total_reward=1.0, n_steps=2, n_invalid=0,
                           terminated=True, truncated=False, final_observation=HOSTILE)
    with Store(path) as store:
        store.begin_run(HOSTILE_RUN, {"policies": ["<svg onload=alert(3)>"]},
                        {"code_version": "test", "host": "<i>host</i>", "packages": {}})
        store.write_episode(HOSTILE_RUN, record, steps)


@pytest.fixture(scope="package")
def view_db(tmp_path_factory) -> ViewDb:
    path = tmp_path_factory.mktemp("view") / "view.db"
    config = RunConfig(policies=("random", "oracle", "flaky"),
                       suites=("frozenlake@1", "sokoban@1"), n_tasks=4, eval_seeds=(0, 1),
                       db=str(path), max_error_rate=1.0)
    summary = run(config, policies=[make_policy("random"), make_policy("oracle"), Flaky()])
    _write_hostile(path)
    return ViewDb(path, summary.run_id)


class _Tables(HTMLParser):
    """The text of each cell of each table, by table id."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tables: dict[str, list[list[str]]] = {}
        self._current: list[list[str]] | None = None
        self._cell: list[str] | None = None

    def handle_starttag(self, tag, attrs):
        if tag == "table":
            self._current = self.tables.setdefault(dict(attrs).get("id") or "", [])
        elif tag == "tr" and self._current is not None:
            self._current.append([])
        elif tag in ("td", "th") and self._current is not None:
            self._cell = []
        elif tag in ("br", "div", "p", "pre", "details") and self._cell is not None:
            self._cell.append(" ")

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None and self._current is not None:
            self._current[-1].append(" ".join("".join(self._cell).split()))
            self._cell = None
        elif tag == "table":
            self._current = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)


def table_cells(page: str, table_id: str) -> list[list[str]]:
    """Rows (header first) of the table `table_id` of `page`, each cell's text."""
    parser = _Tables()
    parser.feed(page)
    return parser.tables[table_id]


@dataclass(frozen=True)
class AuditDb:
    path: Path
    result: object
    """The `harness.audit.AuditResult` that `harness audit` stored."""


@pytest.fixture(scope="package")
def audit_db(tmp_path_factory) -> AuditDb:
    """A store holding one real audit of frozenlake@1 (its base and probe runs included)."""
    from harness.audit import AuditConfig, audit_suite

    path = tmp_path_factory.mktemp("audit") / "audit.db"
    result = audit_suite(AuditConfig("frozenlake@1", k=2, n_tasks=3, eval_seeds=2, regrades=1,
                                     max_regraded=3, db=str(path)))
    return AuditDb(path, result)
